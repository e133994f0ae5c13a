// Package nixtest runs nix-instantiate for the project's tests: the one
// helper that nixgen's, modules' and cmd's tests share.
//
// Every call runs with its own state: NIX_STATE_DIR, NIX_CONF_DIR and the
// cache directory are a fresh temporary directory of the calling test, and
// NIX_PATH is empty, so that no user or CI configuration, channel or store
// database takes part, and nothing is left behind. A fresh state costs about
// 10 ms a call, which is why tests batch their expressions into one call.
//
// nix-instantiate itself is found with testtree.RequireTool: a missing one
// skips the test, or fails it under CI=true. NixpkgsLib finds nixpkgs' lib
// the same way: $VLLM_TIMINGS_NIXPKGS_LIB, else ../shared/nixpkgs-lib next
// to the repository.
package nixtest

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vllm-timings/vllm-timings/patcher/testtree"
)

// Result is what one nix-instantiate run gave.
type Result struct {
	Stdout, Stderr []byte
	OK             bool // exit 0
}

// Run runs nix-instantiate with args in dir ("" for the current directory)
// and isolated state. It fails t only when the program cannot be started.
func Run(t testing.TB, dir string, args ...string) Result {
	t.Helper()
	bin := testtree.RequireTool(t, "nix-instantiate")
	state := t.TempDir()
	// --readonly-mode: no store database is created or written, which
	// costs most of a fresh state's start-up (about 40 ms instead of 110).
	cmd := exec.Command(bin, append([]string{"--readonly-mode"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"NIX_STATE_DIR="+state,
		"NIX_CONF_DIR="+state,
		"XDG_CACHE_HOME="+state,
		"NIX_PATH=",
	)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if _, exit := err.(*exec.ExitError); err != nil && !exit {
		t.Fatalf("nix-instantiate: %v", err)
	}
	return Result{Stdout: stdout.Bytes(), Stderr: stderr.Bytes(), OK: err == nil}
}

// Instantiate runs nix-instantiate with args and returns its stdout; a
// failure fails t with nix-instantiate's message.
func Instantiate(t testing.TB, args ...string) []byte {
	t.Helper()
	r := Run(t, "", args...)
	if !r.OK {
		t.Fatalf("nix-instantiate %s failed:\n%s", strings.Join(args, " "), r.Stderr)
	}
	return r.Stdout
}

// Parse runs nix-instantiate --parse on file.
func Parse(t testing.TB, file string) {
	t.Helper()
	Instantiate(t, "--parse", file)
}

// EvalFile evaluates a Nix file strictly and decodes its JSON value into out.
// Extra arguments (--arg NAME EXPR, --argstr NAME VALUE) go before the file.
func EvalFile(t testing.TB, file string, out any, args ...string) {
	t.Helper()
	decode(t, file, Instantiate(t, append(append([]string{"--eval", "--strict", "--json"}, args...), file)...), out)
}

// EvalExpr writes expr to a file in a temporary directory and evaluates it
// as EvalFile does. Relative paths in expr are relative to that directory,
// so use absolute ones (Path gives them).
func EvalExpr(t testing.TB, expr string, out any, args ...string) {
	t.Helper()
	EvalFile(t, WriteExpr(t, expr), out, args...)
}

// TryExpr evaluates expr like EvalExpr but returns the result instead of
// failing, for tests of evaluation errors. Stdout holds the JSON value.
func TryExpr(t testing.TB, expr string, args ...string) Result {
	t.Helper()
	return Run(t, "", append(append([]string{"--eval", "--strict", "--json"}, args...), WriteExpr(t, expr))...)
}

// WriteExpr writes expr into a new file and returns its path.
func WriteExpr(t testing.TB, expr string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "expr.nix")
	if err := os.WriteFile(file, []byte(expr+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

func decode(t testing.TB, what string, raw []byte, out any) {
	t.Helper()
	if err := json.Unmarshal(raw, out); err != nil {
		t.Fatalf("decoding nix-instantiate's output for %s: %v\n%s", what, err, raw)
	}
}

// String writes s as a Nix string literal. Paths from t.TempDir and the
// repository are printable, so escaping ", \ and ${ is enough.
func String(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "${", `\${`, "\n", `\n`).Replace(s) + `"`
}

// RepoRoot is the repository's root directory.
func RepoRoot() string { return testtree.RepoRoot() }

// Path is the absolute path of a file in the repository, given relative to
// its root ("modules/nixos/fragments.nix"), as a Nix string literal.
func Path(rel string) string { return String(filepath.Join(RepoRoot(), rel)) }

// LibEnv names the nixpkgs lib to evaluate the NixOS module with.
const LibEnv = "VLLM_TIMINGS_NIXPKGS_LIB"

// NixpkgsLib returns the directory of nixpkgs' lib (the one holding
// modules.nix): $VLLM_TIMINGS_NIXPKGS_LIB (a nixpkgs or nixpkgs.lib checkout,
// or its lib/), else ../shared/nixpkgs-lib beside the repository. Without
// either, the test is skipped, and under CI=true it fails.
func NixpkgsLib(t testing.TB) string {
	t.Helper()
	dir := os.Getenv(LibEnv)
	from := "$" + LibEnv
	if dir == "" {
		dir = filepath.Join(RepoRoot(), "..", "shared", "nixpkgs-lib")
		from = "../shared/nixpkgs-lib"
		if _, err := os.Stat(dir); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is not set and %s is missing, and CI=true requires nixpkgs' lib; .ci/run sets %s", LibEnv, dir, LibEnv)
			}
			testtree.Skipf(t, "nixpkgs' lib ($"+LibEnv+" or ../shared/nixpkgs-lib)",
				"SKIPPED: %s is not set and %s is missing, so nothing was evaluated with nixpkgs' lib (with CI=true this fails)", LibEnv, dir)
		}
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{filepath.Join(dir, "lib"), dir} {
		if _, err := os.Stat(filepath.Join(d, "modules.nix")); err == nil {
			return d
		}
	}
	t.Fatalf("%s (%s) holds neither lib/modules.nix nor modules.nix", dir, from)
	return ""
}
