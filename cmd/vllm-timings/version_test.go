package main

import "testing"

// TestVersionFromModule: a binary that `go install ...@vX.Y.Z` built says
// X.Y.Z, as a release binary does; a checkout's build (a pseudo-version,
// +dirty, "(devel)") says dev.
func TestVersionFromModule(t *testing.T) {
	for in, want := range map[string]string{
		"v0.1.0":                               "0.1.0",
		"v1.2.3-rc.1":                          "1.2.3-rc.1",
		"(devel)":                              "dev",
		"":                                     "dev",
		"v0.0.0-20261205130000-abcdef123456":   "dev",
		"v0.1.1-0.20261205130000-abcdef123456": "dev",
		"v0.1.0+dirty":                         "dev",
		"v0.1.1-0.20261205130000-abcdef123456+dirty": "dev",
	} {
		if got := versionFromModule(in); got != want {
			t.Errorf("versionFromModule(%q) = %q, want %q", in, got, want)
		}
	}
}
