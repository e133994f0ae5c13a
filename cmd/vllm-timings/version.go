package main

import (
	"regexp"
	"runtime/debug"
	"strings"
)

// version is what --version, the manifest apply writes and the patch set
// help's links say. Release builds and the Nix package set it at link
// time (-ldflags "-X main.version=1.2.3", scripts/release and
// modules/package.nix); `go install MODULE/cmd/vllm-timings@v1.2.3` cannot,
// and gets it from the module version Go records (init below). Anything
// else (a checkout's go build, a pseudo-version, go test) says "dev".
var version = "dev"

func init() {
	if version == "dev" {
		if bi, ok := debug.ReadBuildInfo(); ok {
			version = versionFromModule(bi.Main.Version)
		}
	}
}

// releaseTag is a module version of a tagged release: v1.2.3, or
// v1.2.3-rc.1; not a pseudo-version (v0.0.0-20261205130000-abcdef123456),
// nor one Go marked +dirty.
var releaseTag = regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.]+)?$`)

var pseudoVersion = regexp.MustCompile(`[0-9]{14}-[0-9a-f]{12}$`)

// versionFromModule is the version a build of module version v says: the
// tag without its "v" for a release, else "dev".
func versionFromModule(v string) string {
	if !releaseTag.MatchString(v) || pseudoVersion.MatchString(v) {
		return "dev"
	}
	return strings.TrimPrefix(v, "v")
}
