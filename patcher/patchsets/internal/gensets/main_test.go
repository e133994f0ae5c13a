package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"

	"github.com/vllm-timings/vllm-timings/patcher/patchsets"
)

// dir is the patch set directory, from this package's.
const dir = "../.."

// TestGenerated keeps sets_gen.go, the embedded sets as Go values (so no
// run parses HCL for them), equal to parsing patcher/patchsets/*.hcl: the
// file's text is what the generator writes today, and the values compiled
// in are what spec.Parse returns.
func TestGenerated(t *testing.T) {
	src, err := generate(os.DirFS(dir))
	if err != nil {
		t.Fatal(err)
	}
	old, err := os.ReadFile(filepath.Join(dir, output))
	if err != nil || !bytes.Equal(old, src) {
		t.Errorf("patcher/patchsets/%s is not what patcher/patchsets/*.hcl generate (%v); after changing a patch set, regenerate it with: %s", output, err, regenerate)
	}
	sets, err := parse(os.DirFS(dir))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(sets, patchsets.Embedded(), cmp.Comparer(func(a, b *regexp.Regexp) bool {
		return (a == nil) == (b == nil) && (a == nil || a.String() == b.String())
	})); diff != "" {
		t.Errorf("the compiled-in embedded sets differ from parsing patcher/patchsets/*.hcl (-parsed +compiled in):\n%s\nregenerate with: %s", diff, regenerate)
	}
}

// TestEmbeddedAssetsShared: the sets of one Embedded call share each
// asset's bytes (every set creates the same module), each through a
// pointer of its own.
func TestEmbeddedAssetsShared(t *testing.T) {
	var first *string
	for _, s := range patchsets.Embedded() {
		for _, f := range s.Files {
			if f.Create == nil {
				continue
			}
			if first == nil {
				first = f.Create
				continue
			}
			if f.Create == first {
				t.Fatalf("%s shares the pointer of another set's create", s.Name)
			}
			if *f.Create != *first {
				continue
			}
			if unsafe.StringData(*f.Create) != unsafe.StringData(*first) {
				t.Errorf("%s: a copy of the module, not the same bytes", s.Name)
			}
		}
	}
	if first == nil {
		t.Fatal("no embedded set creates a file")
	}
}
