package patcher

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vllm-timings/vllm-timings/patcher/testtree"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata/golden")

// requireTool skips without the tool, except in CI (CI=true), where a
// missing tool is a failure: .ci/run installs everything the tests use.
func requireTool(t testing.TB, name string) string {
	t.Helper()
	return testtree.RequireTool(t, name)
}

// fixture unpacks a fixture tree into a fresh directory and returns the
// directory that holds vllm/.
func fixture(t testing.TB, name string) string {
	t.Helper()
	dir := t.TempDir()
	if err := testtree.Unpack(name, dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

func hash(t testing.TB, dir string) string {
	t.Helper()
	h, err := testtree.Hash(dir)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func open(t testing.TB, site string, patchsets ...string) *Session {
	t.Helper()
	s, err := Open(Options{Find: FindOptions{Dir: filepath.Join(site, "vllm")}, PatchSets: patchsets})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return s
}

func readFile(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// replaceIn edits a fixture file, failing if old is not there.
func replaceIn(t testing.TB, path, old, new string) {
	t.Helper()
	s := readFile(t, path)
	if !strings.Contains(s, old) {
		t.Fatalf("%s does not contain %q", path, old)
	}
	writeFile(t, path, strings.Replace(s, old, new, 1))
}

func golden(t testing.TB, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v; create it with: go test ./patcher -run %s -update", err, t.Name())
	}
	if string(want) != got {
		t.Errorf("%s differs from the golden file; if the change is intended, run: go test ./patcher -run '%s' -update\n--- want\n%s\n--- got\n%s", path, t.Name(), want, got)
	}
}

func unpackInto(dir string) error { return testtree.Unpack("openai-packages", dir) }
