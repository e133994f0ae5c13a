package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vllm-timings/vllm-timings/patcher/testtree"
)

// TestUnpackEveryTree lays out every fixture as a newcomer does and checks
// that it is the tree the tests see (testtree.Unpack into another
// directory gives the same hash) and, but for a layer of other trees
// only, a vllm package.
func TestUnpackEveryTree(t *testing.T) {
	names, err := testtree.Names()
	if err != nil || len(names) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	for _, name := range names {
		dir := filepath.Join(t.TempDir(), "site")
		var out, errb strings.Builder
		if code := run([]string{filepath.Join("patcher", "testdata", "trees", name+".txtar"), dir}, &out, &errb); code != 0 {
			t.Fatalf("%s: exit %d: %s", name, code, errb.String())
		}
		if out.Len()+errb.Len() != 0 {
			t.Errorf("%s: output %q %q, want none", name, out.String(), errb.String())
		}
		ref := t.TempDir()
		if err := testtree.Unpack(name, ref); err != nil {
			t.Fatal(err)
		}
		got, _ := testtree.Hash(dir)
		want, _ := testtree.Hash(ref)
		if got != want {
			t.Errorf("%s: unpacked tree %s, the tests' %s", name, got, want)
		}
		if _, err := os.Stat(filepath.Join(dir, "vllm", "__init__.py")); err != nil && !strings.HasSuffix(name, "-common") {
			t.Errorf("%s: no vllm/__init__.py: %v", name, err)
		}
	}
}

// TestUnpackRefuses: a usage error (exit 2) writes nothing.
func TestUnpackRefuses(t *testing.T) {
	full := t.TempDir()
	if err := os.WriteFile(filepath.Join(full, "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{nil, "usage: "},
		{[]string{"openai-packages"}, "usage: "},
		{[]string{"nope", filepath.Join(t.TempDir(), "d")}, `no fixture "nope"`},
		{[]string{"openai-packages", full}, "is not empty"},
	} {
		var out, errb strings.Builder
		if code := run(c.args, &out, &errb); code != 2 || !strings.Contains(errb.String(), c.msg) {
			t.Errorf("%q: exit %d, stderr %q; want 2 and %q", c.args, code, errb.String(), c.msg)
		}
	}
	if entries, _ := os.ReadDir(full); len(entries) != 1 {
		t.Errorf("the non-empty directory was written: %v", entries)
	}
	var out strings.Builder
	if code := run([]string{"-list"}, &out, &out); code != 0 || !strings.Contains(out.String(), "endpoints-packages (layers: openai-packages, ") {
		t.Errorf("-list: exit %d:\n%s", code, out.String())
	}
}
