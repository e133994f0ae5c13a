// Package swaptest runs llama-swap configurations through llama-swap's own
// config loader, for tests of what nixgen and fragments.nix generate.
//
// llama-swap's loader lives in an internal package (internal/config), which
// only code inside its module may import. So swaptest copies the pinned,
// unmodified llama-swap source from ../shared/llama-swap into a temporary
// directory, adds one small program of its own (testdata/loadconfig, which
// calls config.LoadConfigFromReader and ModelConfig.SanitizedCommand) and
// builds it there with testtree.BuildInLlamaSwap, the builder of the real
// llama-swap too. Nothing of llama-swap's code is copied into this project.
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
	_ "embed"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/vllm-timings/vllm-timings/patcher/testtree"
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
// repository (testtree.LlamaSwapSource).
func Source() string { return testtree.LlamaSwapSource() }

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

// Loader returns the path of the built loader program: testtree's one
// builder of llama-swap's code, which caches it.
func Loader(t testing.TB) string {
	t.Helper()
	src := Source()
	if _, err := os.Stat(filepath.Join(src, "internal", "config", "load.go")); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("llama-swap's source is not at %s, and CI=true requires it (CI clones main with ../shared beside it)", src)
		}
		testtree.Skipf(t, "llama-swap's source in ../shared/llama-swap", "SKIPPED: llama-swap's source is not at %s, so its config loader did not run (with CI=true this fails)", src)
	}
	bin, err := testtree.BuildInLlamaSwap("./cmd/vllm-timings-loadconfig", map[string][]byte{"cmd/vllm-timings-loadconfig/main.go": loadconfigSrc})
	if err != nil {
		t.Fatal(err)
	}
	return bin
}
