package testtree

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

var vllmTimings struct {
	once sync.Once
	path string
	err  error
}

// VllmTimings returns the path of the vllm-timings binary built from this
// checkout, for tests that run it as a separate program (as another user,
// from a Nix-like package directory). It is the one build for every test
// package: `go install` into a directory of the user cache named after the
// checkout, which relinks only when the sources changed (about 0.15 s
// when nothing did, against a second for go build -o), under a file lock
// so that packages testing at once take turns; within a process it runs
// once. Callers that need the binary elsewhere copy it (CopyFile).
func VllmTimings(t testing.TB) string {
	t.Helper()
	vllmTimings.once.Do(func() { vllmTimings.path, vllmTimings.err = installVllmTimings() })
	if vllmTimings.err != nil {
		t.Fatal(vllmTimings.err)
	}
	return vllmTimings.path
}

func installVllmTimings() (string, error) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		return "", err
	}
	root := RepoRoot()
	sum := sha256.Sum256([]byte(root))
	name := filepath.Join("vllm-timings", "bin-"+hex.EncodeToString(sum[:])[:12]+"-"+runtime.Version())
	bin, err := cacheSubdir(name)
	if err != nil {
		return "", err
	}
	unlock, err := lockFile(filepath.Join(bin, ".lock"))
	if err != nil {
		return "", err
	}
	defer unlock()
	cmd := exec.Command(goTool, "install", "./cmd/vllm-timings")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOBIN="+bin)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go install ./cmd/vllm-timings: %v\n%s", err, out)
	}
	return filepath.Join(bin, "vllm-timings"), nil
}

// cacheSubdir creates name under the user cache directory, or under the
// temporary directory where there is none or it cannot be written: Nix's
// build sandbox sets HOME=/homeless-shelter, which does not exist.
func cacheSubdir(name string) (string, error) {
	if cache, err := os.UserCacheDir(); err == nil {
		dir := filepath.Join(cache, name)
		if err := os.MkdirAll(dir, 0o755); err == nil {
			return dir, nil
		}
	}
	dir := filepath.Join(os.TempDir(), name)
	return dir, os.MkdirAll(dir, 0o755)
}

// CopyFile copies the file src to dst with the given mode.
func CopyFile(dst, src string, mode os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
