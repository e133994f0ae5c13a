// Package swaptest runs llama-swap configurations through llama-swap's own
// config loader, for tests of what nixgen and fragments.nix generate.
//
// llama-swap's loader lives in an internal package (internal/config), which
// only code inside its module may import. So swaptest copies the pinned,
// unmodified llama-swap source from ../shared/llama-swap into a temporary
// directory, adds one small program of its own (testdata/loadconfig, which
// calls config.LoadConfigFromReader and ModelConfig.SanitizedCommand) and
// builds it there. Nothing of llama-swap's code is copied into this project.
// The built program is kept in the user's cache directory under a hash of
// every input (llama-swap's files, the program, the Go version), so a warm
// test run does not build it again.
//
// Load then gives, for every model, the cmd after llama-swap's ${env.NAME}
// and macro substitution, the argv it would execute without a shell, and
// the cmdStop, proxy and env it would use. Without ../shared/llama-swap the
// test is skipped, and under CI=true it fails.
package swaptest

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

//go:embed testdata/loadconfig/main.go
var loadconfigSrc []byte

// Model is what llama-swap makes of one model entry.
type Model struct {
	Cmd       string   `json:"cmd"`
	Argv      []string `json:"argv"`
	ArgvError string   `json:"argvError"`
	CmdStop   string   `json:"cmdStop"`
	Proxy     string   `json:"proxy"`
	Env       []string `json:"env"`
}

// Source is the llama-swap source tree: ../shared/llama-swap beside the
// repository.
func Source() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", "..", "..", "shared", "llama-swap"))
}

// Refused is llama-swap refusing to load a configuration.
type Refused struct{ Msg string }

func (r *Refused) Error() string { return "llama-swap refuses the config: " + r.Msg }

// Load runs config through llama-swap's loader. A config it refuses gives a
// *Refused error with llama-swap's message; anything else that goes wrong
// fails t.
func Load(t testing.TB, config []byte) (map[string]Model, error) {
	t.Helper()
	bin := Loader(t)
	cmd := exec.Command(bin)
	cmd.Stdin = bytes.NewReader(config)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=/nonexistent"}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 3 {
		return nil, &Refused{Msg: string(bytes.TrimSpace(stderr.Bytes()))}
	}
	if err != nil {
		t.Fatalf("llama-swap's loader: %v\n%s", err, stderr.Bytes())
	}
	var models map[string]Model
	if err := json.Unmarshal(stdout.Bytes(), &models); err != nil {
		t.Fatalf("decoding the loader's output: %v\n%s", err, stdout.Bytes())
	}
	return models, nil
}

var (
	buildOnce sync.Once
	built     string
	buildErr  error
)

// Loader returns the path of the built loader program, building it if no
// build for the same inputs is cached.
func Loader(t testing.TB) string {
	t.Helper()
	src := Source()
	if _, err := os.Stat(filepath.Join(src, "internal", "config", "load.go")); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("llama-swap's source is not at %s, and CI=true requires it (CI clones main with ../shared beside it)", src)
		}
		t.Skipf("SKIPPED: llama-swap's source is not at %s, so its config loader did not run (with CI=true this fails)", src)
	}
	buildOnce.Do(func() { built, buildErr = build(src) })
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return built
}

func build(src string) (string, error) {
	key, err := inputsHash(src)
	if err != nil {
		return "", err
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "vllm-timings-test")
	bin := filepath.Join(dir, "llama-swap-loadconfig-"+key[:16])
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	work, err := os.MkdirTemp("", "swaptest-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(work)
	if err := os.CopyFS(work, os.DirFS(src)); err != nil {
		return "", fmt.Errorf("copying llama-swap: %w", err)
	}
	prog := filepath.Join(work, "cmd", "vllm-timings-loadconfig")
	if err := os.MkdirAll(prog, 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(prog, "main.go"), loadconfigSrc, 0o644); err != nil {
		return "", err
	}
	tmp := filepath.Join(dir, fmt.Sprintf(".loadconfig-%d", os.Getpid()))
	cmd := exec.Command("go", "build", "-o", tmp, "./cmd/vllm-timings-loadconfig")
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly", "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building llama-swap's config loader in a copy of %s (its modules come from the Go module proxy): %v\n%s", src, err, out)
	}
	return bin, os.Rename(tmp, bin)
}

// inputsHash hashes every file of the llama-swap tree, the loader's source
// and the Go version.
func inputsHash(src string) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%s\n", runtime.Version(), loadconfigSrc)
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		fmt.Fprintf(h, "%s %d\n", rel, len(data))
		h.Write(data)
		return nil
	})
	return hex.EncodeToString(h.Sum(nil)), err
}
