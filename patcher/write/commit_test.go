package write

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/vllm-timings/vllm-timings/patcher/codes"
	"github.com/vllm-timings/vllm-timings/patcher/exit"
)

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// manifestName is the manifest the tests' transactions write.
const manifestName = ".vllm-timings.json"

func testTxn(root string, changes ...Change) Txn {
	for i := range changes {
		changes[i].Path = filepath.Join(root, changes[i].Rel)
		if changes[i].UID == 0 && changes[i].GID == 0 {
			changes[i].UID, changes[i].GID = -1, -1
		}
	}
	return Txn{Changes: changes, Manifest: filepath.Join(root, manifestName), Journal: []byte(`{"format":1,"state":"applying"}`), Final: []byte(`{"format":1,"state":"applied"}`)}
}

// TestCommitRollsBack makes the third rename fail (its target is a
// non-empty directory) and checks that the files already renamed are
// restored by renames, the created one is gone, no manifest and no
// temporary file is left.
func TestCommitRollsBack(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "a.py"), "old a\n")
	if err := os.MkdirAll(filepath.Join(root, "b.py", "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := Commit(testTxn(root,
		Change{Rel: "new.py", New: []byte("created\n"), Mode: 0o644},
		Change{Rel: "a.py", Old: []byte("old a\n"), New: []byte("new a\n"), Mode: 0o644, Exists: true},
		Change{Rel: "b.py", Old: []byte("old b\n"), New: []byte("new b\n"), Mode: 0o644, Exists: true},
	))
	var pe *exit.Error
	if !errors.As(err, &pe) || pe.Code != codes.FS || !strings.Contains(pe.Error(), "restored") {
		t.Fatalf("got %v, want a codes.FS error saying the files were restored", err)
	}
	if got := readFile(t, filepath.Join(root, "a.py")); got != "old a\n" {
		t.Errorf("a.py = %q after rollback", got)
	}
	for _, gone := range []string{"new.py", manifestName} {
		if _, err := os.Stat(filepath.Join(root, gone)); !os.IsNotExist(err) {
			t.Errorf("%s survived the rollback", gone)
		}
	}
	leftovers, _ := filepath.Glob(filepath.Join(root, ".vllm-timings-*"))
	if len(leftovers) > 0 {
		t.Errorf("temporary files left: %v", leftovers)
	}
}

// TestCommitRollbackKeepsPreviousManifest: a failed run puts the manifest
// it replaced back, byte for byte.
func TestCommitRollbackKeepsPreviousManifest(t *testing.T) {
	root := t.TempDir()
	prev := `{"format":1,"state":"applied","sets":[]}` + "\n"
	writeFile(t, filepath.Join(root, manifestName), prev)
	if err := os.MkdirAll(filepath.Join(root, "b.py", "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	tx := testTxn(root, Change{Rel: "b.py", Old: []byte("b\n"), New: []byte("new\n"), Mode: 0o644, Exists: true})
	tx.PrevManifest = []byte(prev)
	if _, err := Commit(tx); err == nil {
		t.Fatal("Commit succeeded")
	}
	if got := readFile(t, filepath.Join(root, manifestName)); got != prev {
		t.Errorf("manifest after rollback = %q, want %q", got, prev)
	}
}

func TestCommitKeepsModeOwnerAndDropsPycache(t *testing.T) {
	root := t.TempDir()
	p := filepath.Join(root, "m.py")
	if err := os.WriteFile(p, []byte("x = 1\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	uid, gid := -1, -1
	if os.Geteuid() == 0 {
		// As root, a file owned by someone else keeps its owner.
		uid, gid = 1000, 1000
		if err := os.Chown(p, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	pyc := filepath.Join(root, "__pycache__", "m.cpython-312.pyc")
	other := filepath.Join(root, "__pycache__", "mm.cpython-312.pyc")
	for _, f := range []string{pyc, other} {
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, f, "stale")
	}
	warnings, err := Commit(testTxn(root, Change{Rel: "m.py", Old: []byte("x = 1\n"), New: []byte("x = 2\n"), Mode: 0o640, Exists: true, UID: uid, GID: gid}))
	if err != nil || len(warnings) > 0 {
		t.Fatal(err, warnings)
	}
	st, err := os.Stat(p)
	if err != nil || st.Mode().Perm() != 0o640 {
		t.Errorf("mode after commit: %v, %v; want 0640", st.Mode(), err)
	}
	if uid >= 0 {
		if sys := st.Sys().(*syscall.Stat_t); int(sys.Uid) != uid || int(sys.Gid) != gid {
			t.Errorf("owner after commit %d:%d, want %d:%d", sys.Uid, sys.Gid, uid, gid)
		}
	}
	if _, err := os.Stat(pyc); !os.IsNotExist(err) {
		t.Error("stale m.*.pyc kept")
	}
	if _, err := os.Stat(other); err != nil {
		t.Error("an unrelated .pyc was removed")
	}
}

// TestCommitWarnsOnStaleBytecode: a __pycache__ the user cannot write
// leaves the .pyc, and the commit says so.
func TestCommitWarnsOnStaleBytecode(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root removes files from a read-only directory; testdata/script/links.txtar covers the warning with a directory in the .pyc's place")
	}
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "m.py"), "x = 1\n")
	cache := filepath.Join(root, "__pycache__")
	os.MkdirAll(cache, 0o755)
	writeFile(t, filepath.Join(cache, "m.cpython-312.pyc"), "stale")
	os.Chmod(cache, 0o555)
	defer os.Chmod(cache, 0o755)
	warnings, err := Commit(testTxn(root, Change{Rel: "m.py", Old: []byte("x = 1\n"), New: []byte("x = 2\n"), Mode: 0o644, Exists: true}))
	if err != nil || len(warnings) != 1 || !strings.Contains(warnings[0], "stale bytecode") {
		t.Fatalf("err %v, warnings %q; want one about stale bytecode", err, warnings)
	}
}
