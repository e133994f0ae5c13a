package write

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/vllm-timings/vllm-timings/patcher/codes"
	"github.com/vllm-timings/vllm-timings/patcher/exit"
)

// LockName is the lock file inside the vllm package. Every run that may
// write holds an exclusive flock on it from before it reads the tree until
// it has written, so two runs (apply racing revert, two containers sharing
// a volume) never interleave. flock locks die with their process: a killed
// run never leaves the tree locked.
const LockName = ".vllm-timings.lock"

// DefaultLockWait is how long a run waits for another to finish.
const DefaultLockWait = 60 * time.Second

// Lock is a held lock, or none (a read-only tree, where nothing can
// write and so nothing needs one).
type Lock struct {
	f    *os.File
	path string
}

// LockTree takes the exclusive lock on pkg's lock file, waiting at most
// wait. A package directory this user cannot write gives no lock and no
// error: nothing can change the tree, and a write later fails with its own
// message.
func LockTree(pkg string, wait time.Duration) (*Lock, error) {
	path := filepath.Join(pkg, LockName)
	deadline := time.Now().Add(wait)
	for delay := time.Millisecond; ; {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			if errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS) {
				return &Lock{}, nil
			}
			return nil, &exit.Error{Code: codes.FS, Msg: fmt.Sprintf("cannot create the lock file %s: %v", path, err), Hint: "Check that the vllm package directory is writable.", Err: err}
		}
		err = flockRetry(f, syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			// The file may have been removed (a revert that left the
			// tree pristine) between our open and our lock: then this
			// lock guards nothing, so start again.
			if same(f, path) {
				return &Lock{f: f, path: path}, nil
			}
			f.Close()
			continue
		}
		f.Close()
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, &exit.Error{Code: codes.FS, Msg: fmt.Sprintf("cannot lock %s: %v", path, err), Err: err}
		}
		if time.Now().After(deadline) {
			return nil, &exit.Error{
				Code:   codes.Locked,
				Msg:    fmt.Sprintf("another vllm-timings run holds the lock %s, and it was not released within %v", path, wait),
				Hint:   "A held flock means a live process (the lock dies with its holder): wait for it to finish, or wait longer. Nothing was changed.",
				Advice: codes.AdviceLockWait,
			}
		}
		time.Sleep(delay)
		if delay < 50*time.Millisecond {
			delay *= 2
		}
	}
}

// flockRetry is flock, retried when a signal interrupts it.
func flockRetry(f *os.File, how int) error {
	for i := 0; ; i++ {
		err := syscall.Flock(int(f.Fd()), how)
		if err == syscall.EINTR && i < 100 {
			continue
		}
		return err
	}
}

// same reports whether f is still the file at path.
func same(f *os.File, path string) bool {
	a, err := f.Stat()
	if err != nil {
		return false
	}
	b, err := os.Stat(path)
	if err != nil {
		return false
	}
	return os.SameFile(a, b)
}

// HeldElsewhere reports whether another process holds pkg's lock now.
// It creates nothing.
func HeldElsewhere(pkg string) bool {
	f, err := os.Open(filepath.Join(pkg, LockName))
	if err != nil {
		return false
	}
	defer f.Close()
	if err := flockRetry(f, syscall.LOCK_SH|syscall.LOCK_NB); err != nil {
		return errors.Is(err, syscall.EWOULDBLOCK)
	}
	return false
}

// Release drops the lock. With remove, the lock file is deleted first
// (while still held), so that a tree vllm-timings has fully reverted holds
// nothing of ours.
func (l *Lock) Release(remove bool) {
	if l == nil || l.f == nil {
		return
	}
	if remove {
		RemoveRetry(l.path)
	}
	l.f.Close()
	l.f = nil
}

// Held reports whether this run holds a lock (false on a read-only tree).
func (l *Lock) Held() bool { return l != nil && l.f != nil }

func (l *Lock) String() string {
	if !l.Held() {
		return "no lock (read-only tree)"
	}
	return fmt.Sprintf("lock %s", l.path)
}
