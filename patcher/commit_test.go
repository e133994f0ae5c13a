package patcher

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vllm-timings/vllm-timings/patcher/exit"
)

// TestCommitRollsBack makes the second rename fail (its target is a
// non-empty directory) and checks that the first file is restored and no
// temporary file is left.
func TestCommitRollsBack(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "a.py"), "old a\n")
	if err := os.MkdirAll(filepath.Join(root, "b.py", "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	err := commit(root, []change{
		{Rel: "a.py", Old: []byte("old a\n"), New: []byte("new a\n"), Mode: 0o644, Exists: true},
		{Rel: "new.py", New: []byte("created\n"), Mode: 0o644},
		{Rel: "b.py", Old: []byte("old b\n"), New: []byte("new b\n"), Mode: 0o644, Exists: true},
	})
	var pe *exit.Error
	if !errors.As(err, &pe) || pe.Code != ExitFS || !strings.Contains(pe.Msg, "restored") {
		t.Fatalf("got %v, want a ExitFS error saying the files were restored", err)
	}
	if got := readFile(t, filepath.Join(root, "a.py")); got != "old a\n" {
		t.Errorf("a.py = %q after rollback", got)
	}
	if _, err := os.Stat(filepath.Join(root, "new.py")); !os.IsNotExist(err) {
		t.Errorf("new.py survived the rollback")
	}
	leftovers, _ := filepath.Glob(filepath.Join(root, ".vllm-timings-*"))
	if len(leftovers) > 0 {
		t.Errorf("temporary files left: %v", leftovers)
	}
}

func TestCommitKeepsModeAndDropsPycache(t *testing.T) {
	root := t.TempDir()
	p := filepath.Join(root, "m.py")
	if err := os.WriteFile(p, []byte("x = 1\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	pyc := filepath.Join(root, "__pycache__", "m.cpython-312.pyc")
	other := filepath.Join(root, "__pycache__", "mm.cpython-312.pyc")
	for _, f := range []string{pyc, other} {
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, f, "stale")
	}
	if err := commit(root, []change{{Rel: "m.py", Old: []byte("x = 1\n"), New: []byte("x = 2\n"), Mode: 0o640, Exists: true}}); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(p)
	if err != nil || st.Mode().Perm() != 0o640 {
		t.Errorf("mode after commit: %v, %v; want 0640", st.Mode(), err)
	}
	if _, err := os.Stat(pyc); !os.IsNotExist(err) {
		t.Error("stale m.*.pyc kept")
	}
	if _, err := os.Stat(other); err != nil {
		t.Error("an unrelated .pyc was removed")
	}
}
