package patcher

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/vllm-timings/vllm-timings/patcher/exit"
	"github.com/vllm-timings/vllm-timings/patcher/testtree"
)

func testTxn(root string, changes ...change) txn {
	for i := range changes {
		changes[i].Path = filepath.Join(root, changes[i].Rel)
		if changes[i].UID == 0 && changes[i].GID == 0 {
			changes[i].UID, changes[i].GID = -1, -1
		}
	}
	return txn{root: root, pkg: root, changes: changes, journal: []byte(`{"format":1,"state":"applying"}`), final: []byte(`{"format":1,"state":"applied"}`)}
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
	_, err := commit(testTxn(root,
		change{Rel: "new.py", New: []byte("created\n"), Mode: 0o644},
		change{Rel: "a.py", Old: []byte("old a\n"), New: []byte("new a\n"), Mode: 0o644, Exists: true},
		change{Rel: "b.py", Old: []byte("old b\n"), New: []byte("new b\n"), Mode: 0o644, Exists: true},
	))
	var pe *exit.Error
	if !errors.As(err, &pe) || pe.Code != ExitFS || !strings.Contains(pe.Error(), "restored") {
		t.Fatalf("got %v, want a ExitFS error saying the files were restored", err)
	}
	if got := readFile(t, filepath.Join(root, "a.py")); got != "old a\n" {
		t.Errorf("a.py = %q after rollback", got)
	}
	for _, gone := range []string{"new.py", ManifestName} {
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
	writeFile(t, filepath.Join(root, ManifestName), prev)
	if err := os.MkdirAll(filepath.Join(root, "b.py", "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	tx := testTxn(root, change{Rel: "b.py", Old: []byte("b\n"), New: []byte("new\n"), Mode: 0o644, Exists: true})
	tx.prevManifest = []byte(prev)
	if _, err := commit(tx); err == nil {
		t.Fatal("commit succeeded")
	}
	if got := readFile(t, filepath.Join(root, ManifestName)); got != prev {
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
	warnings, err := commit(testTxn(root, change{Rel: "m.py", Old: []byte("x = 1\n"), New: []byte("x = 2\n"), Mode: 0o640, Exists: true, UID: uid, GID: gid}))
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
	warnings, err := commit(testTxn(root, change{Rel: "m.py", Old: []byte("x = 1\n"), New: []byte("x = 2\n"), Mode: 0o644, Exists: true}))
	if err != nil || len(warnings) != 1 || !strings.Contains(warnings[0], "stale bytecode") {
		t.Fatalf("err %v, warnings %q; want one about stale bytecode", err, warnings)
	}
}

// TestApplyRevertKeepOwners: run as root on a tree owned by uid 1000,
// patched files keep their owner through apply and revert, and the
// created module belongs to the package directory's owner.
func TestApplyRevertKeepOwners(t *testing.T) {
	if os.Geteuid() != 0 {
		testtree.Skipf(t, "root", "SKIPPED: needs root to own files as another user")
	}
	site := fixture(t, "openai-packages")
	filepath.Walk(site, func(p string, _ os.FileInfo, _ error) error { return os.Lchown(p, 1000, 1001) })
	check := func(when string, rels ...string) {
		t.Helper()
		for _, rel := range rels {
			st, err := os.Stat(filepath.Join(site, rel))
			if err != nil {
				t.Fatal(err)
			}
			if sys := st.Sys().(*syscall.Stat_t); sys.Uid != 1000 || sys.Gid != 1001 {
				t.Errorf("%s: %s owned by %d:%d, want 1000:1001", when, rel, sys.Uid, sys.Gid)
			}
		}
	}
	if _, err := open(t, site).Apply(); err != nil {
		t.Fatal(err)
	}
	check("after apply", chatServing, cmplServing, module, "vllm/"+ManifestName)
	if _, err := open(t, site).Revert(false); err != nil {
		t.Fatal(err)
	}
	check("after revert", chatServing, cmplServing)
}
