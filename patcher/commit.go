package patcher

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/vllm-timings/vllm-timings/patcher/exit"
)

// change is one file write or removal at the edge of the program.
type change struct {
	Rel    string
	Old    []byte // content before, to roll back; nil if the file did not exist
	New    []byte // content after; nil removes the file
	Mode   fs.FileMode
	Exists bool
}

// commit makes every change or none. New content is first written to
// temporary files beside their targets (any failure there leaves the tree
// untouched), then renamed over them; a failed rename rolls back the ones
// already made. Stale __pycache__ entries of changed modules are removed.
func commit(root string, changes []change) error {
	type staged struct {
		change
		abs, tmp string
	}
	var st []staged
	cleanup := func() {
		for _, s := range st {
			if s.tmp != "" {
				os.Remove(s.tmp)
			}
		}
	}
	for _, c := range changes {
		abs := filepath.Join(root, filepath.FromSlash(c.Rel))
		s := staged{change: c, abs: abs}
		if c.New == nil {
			// Removal: check now that the directory is writable.
			if err := probeWritable(filepath.Dir(abs)); err != nil {
				cleanup()
				return fsError(c.Rel, err)
			}
			st = append(st, s)
			continue
		}
		tmp, err := os.CreateTemp(filepath.Dir(abs), ".vllm-timings-*.tmp")
		if err != nil {
			cleanup()
			return fsError(c.Rel, err)
		}
		s.tmp = tmp.Name()
		st = append(st, s)
		if _, err := tmp.Write(c.New); err != nil {
			tmp.Close()
			cleanup()
			return fsError(c.Rel, err)
		}
		if err := tmp.Chmod(c.Mode); err != nil {
			tmp.Close()
			cleanup()
			return fsError(c.Rel, err)
		}
		if err := tmp.Close(); err != nil {
			cleanup()
			return fsError(c.Rel, err)
		}
	}
	for i, s := range st {
		var err error
		if s.New == nil {
			err = os.Remove(s.abs)
		} else {
			err = os.Rename(s.tmp, s.abs)
		}
		if err != nil {
			done := make([]change, i)
			for k := range done {
				done[k] = st[k].change
			}
			rollback := rollBack(root, done)
			cleanup()
			return errorf(ExitFS, "writing %s failed: %v; %s", s.Rel, err, rollback)
		}
		st[i].tmp = ""
	}
	for _, s := range st {
		dropPycache(s.abs)
	}
	return nil
}

// rollBack restores files already replaced, best effort, and says how it went.
func rollBack(root string, done []change) string {
	var failed []string
	for _, c := range done {
		abs := filepath.Join(root, filepath.FromSlash(c.Rel))
		var err error
		if !c.Exists {
			err = os.Remove(abs)
		} else {
			err = os.WriteFile(abs, c.Old, c.Mode)
		}
		if err != nil {
			failed = append(failed, c.Rel)
		}
	}
	if len(failed) > 0 {
		return "could not restore " + strings.Join(failed, ", ") + "; reinstall vLLM"
	}
	return "the files already written were restored"
}

func probeWritable(dir string) error {
	f, err := os.CreateTemp(dir, ".vllm-timings-probe-*")
	if err != nil {
		return err
	}
	f.Close()
	return os.Remove(f.Name())
}

func fsError(rel string, err error) *exit.Error {
	hint := "Check that the vllm package directory exists and is writable by this user."
	if errors.Is(err, fs.ErrPermission) || strings.Contains(err.Error(), "read-only") {
		hint = "The vllm package is read-only here. Run vllm-timings where the package is writable (inside the container, before exec vllm serve, as the image's user), or use --on-failure warn to start without timings."
	}
	return &exit.Error{Code: ExitFS, Msg: fmt.Sprintf("cannot write %s: %v", rel, err), Hint: hint + " Nothing was changed.", Err: err}
}

// dropPycache removes compiled copies of a changed module, so Python never
// runs a stale one (their timestamps would normally catch it, but a
// container's layers can make mtimes equal).
func dropPycache(abs string) {
	base := strings.TrimSuffix(filepath.Base(abs), ".py")
	if base == filepath.Base(abs) {
		return
	}
	matches, _ := filepath.Glob(filepath.Join(filepath.Dir(abs), "__pycache__", base+".*.pyc"))
	for _, m := range matches {
		os.Remove(m)
	}
}

func describeChange(c change, reverting bool) string {
	switch {
	case c.New == nil:
		return fmt.Sprintf("removed %s", c.Rel)
	case !c.Exists:
		return fmt.Sprintf("created %s", c.Rel)
	case reverting:
		return fmt.Sprintf("restored %s", c.Rel)
	default:
		return fmt.Sprintf("patched %s", c.Rel)
	}
}
