//go:build unix

package testtree

import (
	"os"
	"syscall"
)

// lockFile holds an exclusive lock on path until the returned func is
// called, so that test processes running at once (go test ./... runs
// packages in parallel) build llama-swap once, not once each.
func lockFile(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	return func() { syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
}
