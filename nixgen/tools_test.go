package nixgen

import (
	"github.com/vllm-timings/vllm-timings/patcher/testtree"

	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// nixState keeps nix-instantiate's state out of the user's and CI's
// directories; TestMain creates and removes it.
var nixState string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "nixgen-nix-state-")
	if err != nil {
		panic(err)
	}
	nixState = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// nixEnv is the environment for nix-instantiate: no user state, no
// configuration, no NIX_PATH.
func nixEnv() []string {
	return append(os.Environ(), "NIX_STATE_DIR="+nixState, "NIX_CONF_DIR="+nixState, "NIX_PATH=")
}

// needTool returns the path of an external tool the test runs. Outside CI a
// missing tool skips the test; with CI=true it fails it, so that CI never
// passes without running nix-instantiate and bash.
func needTool(t testing.TB, name string) string {
	t.Helper()
	return testtree.RequireTool(t, name)
}

// nixInstantiate runs nix-instantiate with args and returns its stdout.
func nixInstantiate(t testing.TB, args ...string) []byte {
	t.Helper()
	bin := needTool(t, "nix-instantiate")
	cmd := exec.Command(bin, args...)
	cmd.Env = nixEnv()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("nix-instantiate %v: %v\n%s", args, err, stderr.Bytes())
	}
	return stdout.Bytes()
}

// nixEval evaluates a Nix file strictly and decodes its JSON value into out.
func nixEval(t testing.TB, file string, out any) {
	t.Helper()
	raw := nixInstantiate(t, "--eval", "--strict", "--json", file)
	if err := json.Unmarshal(raw, out); err != nil {
		t.Fatalf("decoding nix-instantiate output for %s: %v\n%s", file, err, raw)
	}
}

// fragmentsNix is the absolute path of modules/nixos/fragments.nix.
func fragmentsNix(t testing.TB) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "modules", "nixos", "fragments.nix"))
	if err != nil {
		t.Fatal(err)
	}
	return p
}
