package write

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/vllm-timings/vllm-timings/patcher/codes"
	"github.com/vllm-timings/vllm-timings/patcher/exit"
)

// Change is one file write or removal at the edge of the program.
type Change struct {
	Rel    string
	Path   string // the file written: Rel below the root, or the in-package file a symlink at Rel points to
	Old    []byte // content before, to roll back; nil if the file did not exist
	New    []byte // content after; nil removes the file
	Mode   fs.FileMode
	Exists bool
	UID    int // owner and group to keep; -1 keeps whatever the new file gets
	GID    int
	Legacy bool // it removes the older scripts' edits (for the caller's description; Commit does not read it)
}

// Txn is one all-or-nothing write: the changes, in order, and the
// manifest before, during and after.
type Txn struct {
	Changes []Change
	// Manifest is the path of the manifest, the run's journal: a file in
	// the package directory, which is also where the directories flushed
	// after the renames start.
	Manifest string
	// What the manifest held before (nil: none), what it says while the
	// changes are made, and after (nil: remove it).
	PrevManifest, Journal, Final []byte
}

// ErrInterrupted is in the chain of Commit's error when a failed run
// could not be undone whole: every file is whole and every import
// resolves, and the journal records the run as interrupted, so the next
// run finishes it.
var ErrInterrupted = errors.New("the run is only partly undone")

// Commit makes every change or none, and never leaves a file partly
// written:
//
//  1. Stage. Every new content, every original that will be replaced or
//     removed, and each manifest state are written to temporary files
//     (.vllm-timings-*.tmp) beside their targets, with the target's mode
//     and owner, and fsynced. Nothing vLLM reads has changed yet; any
//     failure removes the temporary files and reports nothing changed.
//  2. Journal. The manifest saying "applying" (or "reverting") is renamed
//     into place.
//  3. Rename each staged file over its target, in the given order (apply
//     creates the module first; revert removes it last), so that at every
//     instant each file is whole and every import resolves. If a rename
//     fails, the renames already made are undone in reverse order by
//     renaming the staged originals back (and removing created files):
//     renames and unlinks only, which need no space, each retried. The
//     rollback stops at the first step that still fails, so the tree is
//     always a prefix of the run and imports still resolve; the journal
//     then says the run was interrupted, and the next run finishes it.
//  4. After the last rename (the commit point) fsync the directories,
//     rename the final manifest into place, and remove the staged
//     originals. A failure here is a warning: the tree is complete.
//
// This is renameio's recipe (temporary file, fsync, rename, fsync of the
// directory) extended to several files; renameio itself replaces one file
// at a time and could not stage the originals for a rollback that only
// renames.
func Commit(t Txn) (warnings []string, err error) {
	type staged struct {
		Change
		tmp, bak string
	}
	var st []*staged
	var temps []string // every temporary file still to remove on failure
	cleanup := func() {
		for _, p := range temps {
			RemoveRetry(p)
		}
	}
	manifest := t.Manifest
	pkg := filepath.Dir(manifest)
	manifestName := filepath.Base(manifest)
	stage := func(rel, dir string, data []byte, mode fs.FileMode, uid, gid int) (string, error) {
		p, err := WriteTemp(dir, data, mode, uid, gid)
		if p != "" {
			temps = append(temps, p)
		}
		if err != nil {
			return "", fsError(rel, err)
		}
		return p, nil
	}
	pkgUID, pkgGID := Owner(pkg)

	// 1. Stage.
	for _, c := range t.Changes {
		s := &staged{Change: c}
		dir := filepath.Dir(c.Path)
		var err error
		if c.New != nil {
			if s.tmp, err = stage(c.Rel, dir, c.New, c.Mode, c.UID, c.GID); err != nil {
				cleanup()
				return nil, err
			}
		}
		if c.Exists {
			if s.bak, err = stage(c.Rel, dir, c.Old, c.Mode, c.UID, c.GID); err != nil {
				cleanup()
				return nil, err
			}
		}
		st = append(st, s)
	}
	var journalTmp, finalTmp, prevTmp string
	if journalTmp, err = stage(manifestName, pkg, t.Journal, 0o644, pkgUID, pkgGID); err != nil {
		cleanup()
		return nil, err
	}
	if t.Final != nil {
		if finalTmp, err = stage(manifestName, pkg, t.Final, 0o644, pkgUID, pkgGID); err != nil {
			cleanup()
			return nil, err
		}
	}
	if t.PrevManifest != nil {
		if prevTmp, err = stage(manifestName, pkg, t.PrevManifest, 0o644, pkgUID, pkgGID); err != nil {
			cleanup()
			return nil, err
		}
	}

	// 2. Journal.
	if err := os.Rename(journalTmp, manifest); err != nil {
		cleanup()
		return nil, fsError(manifestName, err)
	}
	SyncDir(pkg)

	// 3. Rename.
	for i, s := range st {
		var err error
		if s.New == nil {
			err = os.Remove(s.Path)
		} else {
			err = os.Rename(s.tmp, s.Path)
		}
		if err == nil {
			continue
		}
		// Undo st[:i], newest first.
		undone := true
		for k := i - 1; k >= 0 && undone; k-- {
			u := st[k]
			if u.Exists {
				undone = retry(func() error { return os.Rename(u.bak, u.Path) }) == nil
				if undone {
					u.bak = ""
				}
			} else {
				undone = RemoveRetry(u.Path) == nil
			}
			if !undone {
				err = fmt.Errorf("%v; then restoring %s failed too", err, u.Rel)
			}
		}
		for _, d := range dirsOf(pkg, st) {
			SyncDir(d)
		}
		if undone {
			if prevTmp != "" {
				undone = retry(func() error { return os.Rename(prevTmp, manifest) }) == nil
			} else {
				undone = RemoveRetry(manifest) == nil
			}
			SyncDir(pkg)
		}
		cleanupExcept := func(keep map[string]bool) {
			for _, p := range temps {
				if !keep[p] {
					RemoveRetry(p)
				}
			}
		}
		if undone {
			cleanup()
			return nil, &exit.Error{
				Code: codes.FS,
				Msg:  fmt.Sprintf("writing %s failed: %v", s.Rel, err),
				Hint: "The files already written were restored; nothing was changed. Check that the vllm package directory is writable and has space.",
				Err:  err,
			}
		}
		// Keep the staged originals a later step could not use back: the
		// next run needs no file of ours, but a person might.
		keep := map[string]bool{}
		for _, u := range st {
			if u.bak != "" {
				keep[u.bak] = true
			}
		}
		cleanupExcept(keep)
		return nil, &exit.Error{
			Code: codes.FS,
			Msg:  fmt.Sprintf("writing %s failed: %v", s.Rel, err),
			Hint: fmt.Sprintf("Every file is whole and every import resolves, but the run is only partly undone; %s records it as "+
				"interrupted, and the next apply or revert finishes it (status shows it).", manifest),
			Err: errors.Join(ErrInterrupted, err),
		}
	}

	// 4. Committed.
	for _, d := range dirsOf(pkg, st) {
		if err := SyncDir(d); err != nil {
			warnings = append(warnings, fmt.Sprintf("could not flush directory %s to disk: %v", d, err))
		}
	}
	var merr error
	if finalTmp != "" {
		merr = retry(func() error { return os.Rename(finalTmp, manifest) })
	} else {
		merr = RemoveRetry(manifest)
	}
	if merr != nil {
		warnings = append(warnings, fmt.Sprintf("the files are written, but %s could not be updated (%v): it still says %q, and the next run completes it", manifest, merr, "in progress"))
	}
	SyncDir(pkg)
	for _, s := range st {
		if s.bak != "" {
			RemoveRetry(s.bak)
		}
	}
	if prevTmp != "" {
		RemoveRetry(prevTmp)
	}
	for _, s := range st {
		warnings = append(warnings, DropPycache(s.Path)...)
	}
	return warnings, nil
}

// WriteTemp writes data to a new temporary file in dir with the given mode
// and owner, and flushes it to disk. It returns the file's name even when
// it fails after creating it, so the caller can remove it.
func WriteTemp(dir string, data []byte, mode fs.FileMode, uid, gid int) (string, error) {
	f, err := os.CreateTemp(dir, ".vllm-timings-*.tmp")
	if err != nil {
		return "", err
	}
	name := f.Name()
	fail := func(err error) (string, error) {
		f.Close()
		return name, err
	}
	if _, err := f.Write(data); err != nil {
		return fail(err)
	}
	if err := f.Chmod(mode); err != nil {
		return fail(err)
	}
	if uid >= 0 && (uid != os.Geteuid() || gid != os.Getegid()) {
		if err := f.Chown(uid, gid); err != nil {
			return fail(fmt.Errorf("cannot keep the file's owner %d:%d: %w (run vllm-timings as that user, or as root)", uid, gid, err))
		}
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		return name, err
	}
	return name, nil
}

// Owner returns the uid and gid of path, or -1, -1.
func Owner(path string) (int, int) {
	st, err := os.Stat(path)
	if err != nil {
		return -1, -1
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		return int(sys.Uid), int(sys.Gid)
	}
	return -1, -1
}

// SyncDir flushes a directory's entries (the renames in it) to disk.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

func dirsOf[T interface{ dir() string }](pkg string, st []T) []string {
	seen := map[string]bool{pkg: true}
	out := []string{pkg}
	for _, s := range st {
		if d := s.dir(); !seen[d] {
			seen[d] = true
			out = append(out, d)
		}
	}
	sort.Strings(out)
	return out
}

func (c Change) dir() string { return filepath.Dir(c.Path) }

// retry runs a step of a rollback or a cleanup up to three times: renames
// and unlinks need no space, so what fails them is rare and often
// transient.
func retry(f func() error) error {
	var err error
	for i := 0; i < 3; i++ {
		if err = f(); err == nil {
			return nil
		}
		time.Sleep(time.Duration(i+1) * time.Millisecond)
	}
	return err
}

// RemoveRetry removes a file; one already gone is fine.
func RemoveRetry(p string) error {
	return retry(func() error {
		err := os.Remove(p)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	})
}

func fsError(rel string, err error) *exit.Error {
	e := &exit.Error{Code: codes.FS, Msg: fmt.Sprintf("cannot write %s: %v", rel, err), Err: err}
	if errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS) {
		e.Hint = "The vllm package is read-only here: write the patched copies into an overlay directory instead, or patch where the package is writable. Nothing was changed."
		e.Advice = codes.AdviceOverlay
		return e
	}
	e.Hint = "Check that the vllm package directory exists and is writable by this user, and that the disk has space. Nothing was changed."
	return e
}

// DropPycache removes compiled copies of a changed module, so Python never
// runs a stale one (their timestamps would normally catch it, but a
// container's layers can make mtimes equal). It returns a warning for each
// copy it could not remove.
func DropPycache(abs string) []string {
	base := strings.TrimSuffix(filepath.Base(abs), ".py")
	if base == filepath.Base(abs) {
		return nil
	}
	matches, _ := filepath.Glob(filepath.Join(filepath.Dir(abs), "__pycache__", base+".*.pyc"))
	var warnings []string
	for _, m := range matches {
		if err := RemoveRetry(m); err != nil {
			warnings = append(warnings, fmt.Sprintf("could not remove the stale bytecode %s (%v); if its timestamp matches the source, Python may run the old "+
				"code: remove it, or run with PYTHONDONTWRITEBYTECODE and a writable __pycache__", m, err))
		}
	}
	return warnings
}
