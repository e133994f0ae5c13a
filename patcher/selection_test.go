package patcher

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vllm-timings/vllm-timings/patcher/exit"
)

// TestSelectionByShape: on every fixture exactly one embedded set fits, the
// one meant for its shape, whatever its version string says; every other
// set fails on at least one anchor or does not apply to the layout.
func TestSelectionByShape(t *testing.T) {
	for _, fx := range fixtures {
		t.Run(fx.name, func(t *testing.T) {
			site := fixture(t, fx.name)
			// A version string no table lists changes nothing.
			writeFile(t, filepath.Join(site, "vllm", "_version.py"), "__version__ = version = '9.9.9.dev1+gunknown'\n")
			s := open(t, site)
			if s.Sel.Chosen == nil || s.Sel.Chosen.Set.Name != fx.set {
				t.Fatalf("chose %v, want %s", s.Sel.Chosen, fx.set)
			}
			if !strings.Contains(s.Sel.Why, `patch set "`+fx.set+`" (embedded): all `) {
				t.Errorf("why = %q", s.Sel.Why)
			}
			for _, c := range s.Sel.Candidates {
				if c.Set.Name != fx.set && c.fits() {
					t.Errorf("set %s fits %s too; sets must be disjoint by shape", c.Set.Name, fx.name)
				}
			}
		})
	}
}

// TestRequireSeparatesModulesSets: the two sets for the modules layout
// differ in one require each; their failures name it.
func TestRequireSeparatesModulesSets(t *testing.T) {
	for _, tc := range []struct{ tree, other, require string }{
		{"openai-modules", "openai-modules-v0.10", "request-output-without-metrics"},
		{"openai-modules-v0.10", "openai-modules", "request-output-with-metrics"},
	} {
		s := open(t, fixture(t, tc.tree))
		for _, c := range s.Sel.Candidates {
			if c.Set.Name != tc.other {
				continue
			}
			if len(c.Failures) != 1 || c.Failures[0].Summary != "Required statement not found" || !strings.Contains(c.Failures[0].Detail, tc.require) {
				t.Errorf("%s on %s: failures %v, want only require %s", tc.other, tc.tree, c.Failures, tc.require)
			}
		}
	}
}

// TestNoSetFitsChangesNothing: a modules tree whose output processor has
// neither shape (vLLM moved the RequestOutput construction) matches no set:
// apply refuses with exit 5, names the requirement and writes nothing.
func TestNoSetFitsChangesNothing(t *testing.T) {
	site := fixture(t, "openai-modules")
	replaceIn(t, filepath.Join(site, outputProcessor), "        return RequestOutput(\n", "        return self.build_output(\n")
	before := hash(t, site)
	s := open(t, site)
	if s.Sel.Chosen != nil {
		t.Fatalf("chose %s", s.Sel.Chosen.Set.Name)
	}
	_, err := s.Apply()
	var pe *exit.Error
	if !errors.As(err, &pe) || pe.Code != ExitMissing {
		t.Fatalf("apply: %v, want a ExitMissing error", err)
	}
	var nf *NoFitError
	if !errors.As(err, &nf) || nf.Closest == nil || nf.Closest.Name != "openai-modules-v0.10" || nf.Install.Version != "0.12.0+gfixture" {
		t.Errorf("apply: %#v, want a NoFitError naming the closest set", err)
	}
	for _, m := range []string{"Required statement not found", "return RequestOutput(", "RequestState._new_request_output"} {
		if !strings.Contains(pe.Error(), m) {
			t.Errorf("message lacks %q:\n%s", m, pe)
		}
	}
	if after := hash(t, site); after != before {
		t.Errorf("tree changed: %s -> %s", before, after)
	}
}
