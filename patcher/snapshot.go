package patcher

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/vllm-timings/vllm-timings/patcher/exit"
)

// fileSnapshot is what the planner knows of one target file.
type fileSnapshot struct {
	Exists bool
	Data   []byte
	Mode   fs.FileMode
	Path   string // the file to write: its own path, or the in-package file a symlink there points to
	UID    int    // its owner and group, kept when it is rewritten
	GID    int
}

// snapshot is the content of every target file, read once. Planning works
// on a snapshot only, so it is pure and can be tested without a disk.
type snapshot map[string]fileSnapshot

// readSnapshot reads the given paths (relative to inst.Root). A path that
// resolves, through a symlink, to a place outside the vllm package is
// refused: the patcher only ever writes inside the package.
func readSnapshot(inst *Install, rels []string) (snapshot, error) {
	pkgReal, err := filepath.EvalSymlinks(inst.Dir)
	if err != nil {
		return nil, &exit.Error{Code: ExitNotFound, Pos: inst.Dir, Msg: err.Error(), Err: err}
	}
	snap := snapshot{}
	for _, rel := range rels {
		abs := filepath.Join(inst.Root, filepath.FromSlash(rel))
		if err := checkInside(pkgReal, inst.Dir, abs, rel); err != nil {
			return nil, err
		}
		st, err := os.Stat(abs)
		if errors.Is(err, fs.ErrNotExist) {
			snap[rel] = fileSnapshot{Path: abs, UID: -1, GID: -1}
			continue
		}
		if err != nil {
			return nil, &exit.Error{Code: ExitFS, Pos: rel, Msg: err.Error(), Err: err}
		}
		if !st.Mode().IsRegular() {
			return nil, errorf(ExitModified, "%s is not a regular file; remove it or fix the installation.", rel)
		}
		// A symlink inside the package is written through: the file it
		// points to gets the new content, and the link stays.
		real, err := filepath.EvalSymlinks(abs)
		if err != nil {
			return nil, &exit.Error{Code: ExitFS, Pos: rel, Msg: err.Error(), Err: err}
		}
		b, err := os.ReadFile(real)
		if err != nil {
			return nil, errorf(ExitFS, "cannot read %s: %v", rel, err)
		}
		uid, gid := -1, -1
		if sys, ok := st.Sys().(*syscall.Stat_t); ok {
			uid, gid = int(sys.Uid), int(sys.Gid)
		}
		snap[rel] = fileSnapshot{Exists: true, Data: b, Mode: st.Mode().Perm(), Path: real, UID: uid, GID: gid}
	}
	return snap, nil
}

// checkInside resolves the deepest existing ancestor of abs (abs itself if
// it exists) and refuses it if that leads outside the package.
func checkInside(pkgReal, pkg, abs, rel string) error {
	p := abs
	for {
		if _, err := os.Lstat(p); err == nil {
			break
		}
		parent := filepath.Dir(p)
		if parent == p || len(parent) < len(pkg) {
			return nil
		}
		p = parent
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return &exit.Error{Code: ExitFS, Pos: rel, Msg: err.Error(), Err: err}
	}
	if real != pkgReal && !strings.HasPrefix(real, pkgReal+string(filepath.Separator)) {
		return &exit.Error{
			Code: ExitFS,
			Msg:  fmt.Sprintf("refusing %s: it is a symlink that leads to %s, outside the vllm package %s", rel, real, pkgReal),
			Hint: "vllm-timings writes only inside the package; replace the link with a regular file.",
		}
	}
	return nil
}
