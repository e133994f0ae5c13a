package modules

import (
	"github.com/vllm-timings/vllm-timings/patcher/testtree"

	"bytes"
	"encoding/json"
	"flag"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite nixos/tests/expected.json from the module's evaluation")

const libEnv = "VLLM_TIMINGS_NIXPKGS_LIB"

// nixInstantiate returns the path of nix-instantiate, or skips the test (fails
// it under CI=true, where .ci/run installs nix-bin).
func nixInstantiate(t *testing.T) string {
	t.Helper()
	return testtree.RequireTool(t, "nix-instantiate")
}

// TestNixFilesParse runs `nix-instantiate --parse` on every .nix file in the
// repository.
func TestNixFilesParse(t *testing.T) {
	nix := nixInstantiate(t)
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "vendor") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".nix") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// nix build's checkPhase sees a tree without flake.nix and nix/, so
	// only the module is required here.
	for _, want := range []string{"modules/nixos/default.nix", "modules/nixos/fragments.nix"} {
		found := false
		for _, f := range files {
			found = found || f == filepath.Join(root, want)
		}
		if !found {
			t.Errorf("%s was not found: the walk missed the repository root?", want)
		}
	}
	for _, f := range files {
		rel, _ := filepath.Rel(root, f)
		t.Run(rel, func(t *testing.T) {
			out, err := exec.Command(nix, "--parse", f).CombinedOutput()
			if err != nil {
				t.Errorf("nix-instantiate --parse %s: %v\n%s", rel, err, out)
			}
		})
	}
}

// nixpkgsLib returns the lib directory named by VLLM_TIMINGS_NIXPKGS_LIB (a
// nixpkgs checkout or its lib/ directory), or skips the test.
func nixpkgsLib(t *testing.T) string {
	t.Helper()
	dir := os.Getenv(libEnv)
	if dir == "" {
		t.Skipf("SKIPPED: %s is not set, so the NixOS module was NOT evaluated. Point it at a nixpkgs or nix-community/nixpkgs.lib checkout to run this test.", libEnv)
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
	t.Fatalf("%s=%s holds neither lib/modules.nix nor modules.nix", libEnv, dir)
	return ""
}

// evalJSON evaluates expr (a function of libPath) with nix-instantiate and
// decodes its JSON.
func evalJSON(t *testing.T, nix, lib, expr string, v any) []byte {
	t.Helper()
	cmd := exec.Command(nix, "--eval", "--strict", "--json", "--argstr", "libPath", lib, "--expr", expr)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("nix-instantiate --eval: %v\n%s", err, stderr.String())
	}
	if err := json.Unmarshal(out, v); err != nil {
		t.Fatalf("decoding nix-instantiate output: %v\n%s", err, out)
	}
	return out
}

const evalExpr = `{ libPath }: import ./nixos/tests/eval.nix { lib = import (/. + libPath); }`

// TestModuleEval evaluates the NixOS module with lib.evalModules (through
// nixos/tests/eval.nix, which the flake check module-eval also uses) and
// compares every string with nixos/tests/expected.json.
func TestModuleEval(t *testing.T) {
	nix := nixInstantiate(t)
	lib := nixpkgsLib(t)

	var got any
	raw := evalJSON(t, nix, lib, evalExpr, &got)
	golden := filepath.Join("nixos", "tests", "expected.json")
	if *update {
		var buf bytes.Buffer
		if err := json.Indent(&buf, raw, "", "  "); err != nil {
			t.Fatal(err)
		}
		buf.WriteByte('\n')
		if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s", golden)
		return
	}
	data, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	var want any
	if err := json.Unmarshal(data, &want); err != nil {
		t.Fatalf("%s: %v", golden, err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("module evaluation differs from %s (-want +got):\n%s\nIf intended: %s=%s go test ./modules -run TestModuleEval -update", golden, diff, libEnv, os.Getenv(libEnv))
	}
}

// TestModuleMatchesCLI compares, for each option set in eval.nix's
// `fragments`, the module's dockerArgs and cmdPrefix with what
// `vllm-timings nix fragments --format json` prints for the same options.
func TestModuleMatchesCLI(t *testing.T) {
	nix := nixInstantiate(t)
	lib := nixpkgsLib(t)

	bin := filepath.Join(t.TempDir(), "vllm-timings")
	build := exec.Command("go", "build", "-o", bin, "../cmd/vllm-timings")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	// Without the command, cobra prints the root help and exits 0, so look
	// for the command's own --binary flag in its help.
	if out, err := exec.Command(bin, "nix", "fragments", "--help").CombinedOutput(); err != nil || !bytes.Contains(out, []byte("--binary")) {
		t.Skip("SKIPPED: this build has no `vllm-timings nix fragments --binary` command, so the module was NOT compared with the CLI")
	}

	type fragments struct {
		DockerArgs string `json:"dockerArgs"`
		CmdPrefix  string `json:"cmdPrefix"`
	}
	type evalCase struct {
		Options struct {
			MountPath *string  `json:"mountPath"`
			OnFailure *string  `json:"onFailure"`
			Patchsets []string `json:"patchsets"`
		} `json:"options"`
		fragments
	}
	// The module refers to the binary by its store path; here the fake
	// package's path stands in for it on both sides.
	var cases map[string]evalCase
	evalJSON(t, nix, lib, `{ libPath }: (`+strings.TrimPrefix(evalExpr, "{ libPath }: ")+`).fragments`, &cases)
	const fakeBinary = "/nix/store/00000000000000000000000000000000-vllm-timings-0.1.0/bin/vllm-timings"
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			args := []string{"nix", "fragments", "--binary", fakeBinary, "--format", "json"}
			if c.Options.MountPath != nil {
				args = append(args, "--mount", *c.Options.MountPath)
			}
			if c.Options.OnFailure != nil {
				args = append(args, "--on-failure", *c.Options.OnFailure)
			}
			for _, p := range c.Options.Patchsets {
				args = append(args, "--patchset", p)
			}
			out, err := exec.Command(bin, args...).Output()
			if err != nil {
				t.Fatalf("vllm-timings %s: %v", strings.Join(args, " "), err)
			}
			var cli fragments
			if err := json.Unmarshal(out, &cli); err != nil {
				t.Fatalf("decoding %s: %v", out, err)
			}
			if diff := cmp.Diff(c.fragments, cli); diff != "" {
				t.Errorf("module (-) and CLI (+) disagree for options %+v:\n%s", c.Options, diff)
			}
		})
	}
}

// TestREADMEShowsEvaluatedStrings checks that the strings the README's NixOS
// section shows as "evaluates to" are the ones expected.json pins for the
// same sample models, so the README cannot drift from the module.
func TestREADMEShowsEvaluatedStrings(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	const heading = "\n### A complete model entry\n"
	_, section, ok := strings.Cut(string(readme), heading)
	if !ok {
		t.Fatalf("README.md has no %q section", strings.TrimSpace(heading))
	}
	if i := strings.Index(section, "\n#"); i >= 0 {
		section = section[:i] // up to the next heading
	}
	var shown []string
	for _, block := range strings.Split(section, "```text\n")[1:] {
		text, _, _ := strings.Cut(block, "```")
		shown = append(shown, strings.ReplaceAll(strings.TrimSuffix(text, "\n"), "<hash>", strings.Repeat("0", 32)))
	}

	data, err := os.ReadFile(filepath.Join("nixos", "tests", "expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	var expected struct {
		Sample struct {
			Models map[string]struct {
				Cmd string `json:"cmd"`
			} `json:"models"`
		} `json:"sample"`
	}
	if err := json.Unmarshal(data, &expected); err != nil {
		t.Fatal(err)
	}
	// A text block cannot show a trailing newline.
	want := []string{
		strings.TrimSuffix(expected.Sample.Models["qwen-vllm"].Cmd, "\n"),
		strings.TrimSuffix(expected.Sample.Models["qwen-mkmodel"].Cmd, "\n"),
	}
	if diff := cmp.Diff(want, shown); diff != "" {
		t.Errorf("README's evaluated cmd strings differ from expected.json (-want +README):\n%s\nCopy sample.models.*.cmd from expected.json into the README, with the store hash written <hash>.", diff)
	}
}
