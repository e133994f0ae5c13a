package patcher

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/vllm-timings/vllm-timings/patcher/testtree"
)

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
