package patcher

import (
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/vllm-timings/vllm-timings/patcher/find"
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
	s, err := Open(Options{Find: find.Options{Dir: filepath.Join(site, "vllm")}, PatchSets: patchsets})
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

// asNobody returns a directory under the system's temporary directory
// (t.TempDir's parents are not searchable by others) that uid 65534 may
// enter, holding a copy of the binary it may run. It skips unless the test
// runs as root, which it needs to run the binary as another user.
func asNobody(t *testing.T, prefix string) (dir, bin string) {
	t.Helper()
	if os.Geteuid() != 0 {
		testtree.Skipf(t, "root", "SKIPPED: needs root to run the binary as another user")
	}
	built := testtree.VllmTimings(t)
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin = filepath.Join(dir, "vllm-timings")
	if err := testtree.CopyFile(bin, built, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir, bin
}

// nobodyCmd is bin run as uid and gid 65534, with a minimal environment.
func nobodyCmd(bin string, args ...string) *exec.Cmd {
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=/"}
	return cmd
}
