package patcher

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vllm-timings/vllm-timings/patcher/edit"
)

// TestStatusFromManifest: a tree patched with a user's set for the
// Responses part reads as patched without that set, from the manifest's
// hashes, also from a manifest written before sets recorded their part;
// a file changed since is modified, and a set of which nothing is left is
// not used.
func TestStatusFromManifest(t *testing.T) {
	site := fixture(t, "endpoints-packages")
	replaceIn(t, filepath.Join(site, responsesServing), "_increment_sequence_number_and_return", "_bump")
	hcl := filepath.Join(t.TempDir(), "mine.hcl")
	embedded, ok := open(t, site).Library.Source("responses-packages")
	if !ok {
		t.Fatal("no source for responses-packages")
	}
	set := string(embedded[strings.Index(string(embedded), `patchset "responses-packages"`):])
	set = strings.Replace(set, `patchset "responses-packages"`, `patchset "mine"`, 1)
	set = strings.Replace(set, `match = "def _increment_sequence_number_and_return("`, `match = "def _bump("`, 1)
	writeFile(t, hcl, set)
	if _, err := open(t, site, hcl).Apply(); err != nil {
		t.Fatal(err)
	}
	check := func(name string, wantState FileState, wantPart PartState) *StatusReport {
		t.Helper()
		st := open(t, site).Status()
		if st.State != wantState || st.Problems != "" {
			t.Errorf("%s: state %s (problems %q), want %s", name, st.State, st.Problems, wantState)
		}
		for _, p := range st.Parts {
			if p.Part == "responses" && (p.State != wantPart || (wantPart == PartRecorded && p.PatchSet != "mine")) {
				t.Errorf("%s: responses part %+v, want %s", name, p, wantPart)
			}
		}
		return st
	}
	st := check("as applied", Patched, PartRecorded)
	var names []string
	for _, s := range st.Sets {
		names = append(names, s.Name)
		if (s.Name == "mine") != s.Recorded || s.State != Patched {
			t.Errorf("set %+v", s)
		}
	}
	if strings.Join(names, ",") != "openai-packages-raw-stream,mine,messages-package" {
		t.Errorf("sets %v", names)
	}

	// A manifest of an older vllm-timings, without parts.
	man := filepath.Join(site, "vllm", ManifestName)
	raw := readFile(t, man)
	writeFile(t, man, strings.NewReplacer(`"part": "chat",`, "", `"part": "responses",`, "", `"part": "messages",`, "").Replace(raw))
	check("old manifest", Patched, PartRecorded)

	orig := readFile(t, filepath.Join(site, responsesServing))
	writeFile(t, filepath.Join(site, responsesServing), orig+"# edited\n")
	check("changed since", Modified, PartRecorded)

	// vLLM reinstalled under the manifest: nothing of the set is left.
	stripped, _, err := edit.Strip([]byte(orig))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(site, responsesServing), stripped, 0o644); err != nil {
		t.Fatal(err)
	}
	check("reinstalled", Patched, PartUnfit)
}
