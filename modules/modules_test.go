package modules

import (
	"bytes"
	"encoding/json"
	"flag"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"

	"github.com/vllm-timings/vllm-timings/nixgen/nixtest"
	"github.com/vllm-timings/vllm-timings/patcher/testtree"
)

var update = flag.Bool("update", false, "rewrite tests/expected.json from the module's evaluation")

// TestNixFilesParse runs `nix-instantiate --parse` on every .nix file in the
// repository.
func TestNixFilesParse(t *testing.T) {
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
	// One call for all: nix-instantiate names the file it cannot parse.
	if r := nixtest.Run(t, root, append([]string{"--parse"}, files...)...); !r.OK {
		t.Errorf("nix-instantiate --parse: %s", r.Stderr)
	}
}

// evalJSON evaluates expr (a function of libPath) with nixpkgs' lib and
// decodes its JSON.
func evalJSON(t *testing.T, expr string, v any) []byte {
	t.Helper()
	lib := nixtest.NixpkgsLib(t)
	here, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	r := nixtest.Run(t, here, "--eval", "--strict", "--json", "--argstr", "libPath", lib, "--expr", expr)
	if !r.OK {
		t.Fatalf("nix-instantiate --eval: %s", r.Stderr)
	}
	if err := json.Unmarshal(r.Stdout, v); err != nil {
		t.Fatalf("decoding nix-instantiate output: %v\n%s", err, r.Stdout)
	}
	return r.Stdout
}

const evalExpr = `{ libPath }: import ./tests/eval.nix { lib = import (/. + libPath); }`

// TestModuleEval evaluates the NixOS module with lib.evalModules (through
// tests/eval.nix, which the flake check module-eval also uses) and
// compares every string with tests/expected.json.
func TestModuleEval(t *testing.T) {
	var got any
	raw := evalJSON(t, evalExpr, &got)
	// Every check is true, whatever expected.json says.
	var checks struct {
		Checks map[string]bool `json:"checks"`
	}
	if err := json.Unmarshal(raw, &checks); err != nil || len(checks.Checks) == 0 {
		t.Fatalf("eval.nix has no checks: %v", err)
	}
	for name, ok := range checks.Checks {
		if !ok {
			t.Errorf("eval.nix check %s is false", name)
		}
	}
	golden := filepath.Join("tests", "expected.json")
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
		t.Errorf("module evaluation differs from %s (-want +got):\n%s\nIf intended: go test ./modules -run TestModuleEval -update (with %s, or ../shared/nixpkgs-lib)", golden, diff, nixtest.LibEnv)
	}
}

// TestModuleMatchesCLI compares, for each option set in eval.nix's
// `fragments`, the module's dockerArgs and cmdPrefix with what
// `vllm-timings nix fragments --format json` prints for the same options,
// and the sample's mkModel entries with what `nix model` prints for the
// same arguments (modelCLI). A build without those commands fails.
func TestModuleMatchesCLI(t *testing.T) {
	bin := testtree.VllmTimings(t)
	run := func(args ...string) []byte {
		t.Helper()
		out, err := exec.Command(bin, args...).Output()
		if err != nil {
			var stderr []byte
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = ee.Stderr
			}
			t.Fatalf("vllm-timings %s: %v\n%s", strings.Join(args, " "), err, stderr)
		}
		return out
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
	var got struct {
		Fragments map[string]evalCase `json:"fragments"`
		Sample    struct {
			Models map[string]map[string]any `json:"models"`
		} `json:"sample"`
	}
	evalJSON(t, evalExpr, &got)
	// The module refers to the binary by its store path; here the fake
	// package's path stands in for it on both sides.
	const fakeBinary = "/nix/store/00000000000000000000000000000000-vllm-timings-0.1.0/bin/vllm-timings"
	if len(got.Fragments) == 0 {
		t.Fatal("eval.nix has no fragments cases")
	}
	for name, c := range got.Fragments {
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
			var cli fragments
			if err := json.Unmarshal(run(args...), &cli); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.fragments, cli); diff != "" {
				t.Errorf("module (-) and CLI (+) disagree for options %+v:\n%s", c.Options, diff)
			}
		})
	}
	models := map[string][]string{"qwen3-8b": docModelCLI(t, "qwen3-8b")}
	for name, argv := range modelCLI {
		models[name] = argv
	}
	for name, argv := range models {
		t.Run(name, func(t *testing.T) {
			entry, ok := got.Sample.Models[name]
			if !ok {
				t.Fatalf("eval.nix's sample has no model %s", name)
			}
			// What mkModel passed through is the user's, not the CLI's.
			delete(entry, "name")
			delete(entry, "metadata")
			args := append([]string{"nix", "model", name, "--binary", fakeBinary, "--format", "json"}, argv...)
			var cli map[string]map[string]any
			if err := json.Unmarshal(run(args...), &cli); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(entry, cli[name]); diff != "" {
				t.Errorf("the module's mkModel (-) and nix model (+) disagree:\n%s", diff)
			}
		})
	}
}

// docModelCLI returns the arguments of the one `vllm-timings nix model NAME`
// command the documentation shows (README's entry is qwen3-8b), after NAME
// and without --binary and its value, split as bash splits them. Tested
// against the module, the command shown is then the one the mkModel block
// beside it gives; TestReadmeNix holds its output to the page.
func docModelCLI(t *testing.T, name string) []string {
	t.Helper()
	prefix := "\n$ vllm-timings nix model " + name + " "
	page := testtree.PageWith(t, prefix)
	_, line, _ := strings.Cut(page.Text, prefix)
	line, _, _ = strings.Cut(line, "\n")
	f, err := syntax.NewParser().Parse(strings.NewReader(line), page.Path)
	if err != nil {
		t.Fatalf("%s: the nix model %s command: %v", page.Path, name, err)
	}
	call, ok := f.Stmts[0].Cmd.(*syntax.CallExpr)
	if len(f.Stmts) != 1 || !ok {
		t.Fatalf("%s: the nix model %s command is not one simple command", page.Path, name)
	}
	var argv []string
	for i := 0; i < len(call.Args); i++ {
		w, err := expand.Literal(nil, call.Args[i])
		if err != nil {
			t.Fatal(err)
		}
		if w == "--binary" {
			i++
			continue
		}
		argv = append(argv, w)
	}
	return argv
}

// modelCLI is the nix model command line for the sample's mkModel entries
// in eval.nix, after NAME --binary --format.
var modelCLI = map[string][]string{
	"qwen-genesis": {
		"--image", "vllm/vllm-openai:nightly-1acd67a795ebccdf9b9db7697ae9082058301657",
		"--docker", "/run/current-system/sw/bin/docker",
		"--before", "set -e", "--before", "pip install xxhash pandas scipy -q", "--before", "python3 -m vllm._genesis.patches.apply_all",
		"--env", "VLLM_ENFORCE_EAGER", "--docker-arg=--device=nvidia.com/gpu=all", "--docker-arg=--ipc=host",
		"--publish", "${PORT}:8000", "--macro", "ctx=75000",
		"--", "--raw", "${VLLM_ENFORCE_EAGER:+--enforce-eager}", "--served-model-name", "${MODEL_ID}", "--max-model-len", "${ctx}",
		"--speculative-config", `{"method":"mtp","num_speculative_tokens":3}`, "--host", "0.0.0.0", "--port", "8000",
	},
	"qwen-launcher": {
		"--image", "ghcr.io/example/qwen3-vllm:latest", "--docker", "/run/current-system/sw/bin/docker",
		"--entrypoint", "bash", "--entrypoint", "docker/entrypoint.sh", "--", "single",
	},
	"qwen-venv": {"--venv", "/srv/vllm/venv", "--", "Qwen/Qwen3-8B", "--port", "${PORT}"},
	"qwen-mkmodel": {
		"--image", "vllm/vllm-openai:v0.11.0", "--docker", "/run/current-system/sw/bin/docker",
		"--env", "HF_HUB_OFFLINE=1", "--macro", "ctx=75000",
		"--", "Qwen/Qwen3-8B", "--max-model-len", "${ctx}", "--speculative-config", `{"method":"mtp","num_speculative_tokens":3}`,
	},
}

// TestREADMEShowsEvaluatedStrings checks that the strings the NixOS
// documentation's "A complete model entry" shows as "evaluates to" are the
// ones expected.json pins for the same sample models, so the page cannot
// drift from the module.
func TestREADMEShowsEvaluatedStrings(t *testing.T) {
	const heading = "\n### A complete model entry\n"
	page := testtree.PageWith(t, heading)
	_, section, _ := strings.Cut(page.Text, heading)
	if i := strings.Index(section, "\n#"); i >= 0 {
		section = section[:i] // up to the next heading
	}
	var shown []string
	for _, block := range strings.Split(section, "```text\n")[1:] {
		text, _, _ := strings.Cut(block, "```")
		shown = append(shown, strings.ReplaceAll(strings.TrimSuffix(text, "\n"), "<hash>", strings.Repeat("0", 32)))
	}

	data, err := os.ReadFile(filepath.Join("tests", "expected.json"))
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
		t.Errorf("%s's evaluated cmd strings differ from expected.json (-want +%s):\n%s\nCopy sample.models.*.cmd from expected.json into %s, with the store hash written <hash>.", page.Path, page.Path, diff, page.Path)
	}
}

// flakeExpr evaluates flake.nix's outputs as a plain function, with
// nixpkgs' lib as the nixpkgs input (the outputs used here need no more).
const flakeExpr = `{ libPath }: let
  nixpkgs = { lib = import (/. + libPath); };
  flake = (import ../flake.nix).outputs { self = flake; inherit nixpkgs; };
in `

// TestFlakeLib: the flake's lib.fragments is fragments.nix, usable without
// the module.
func TestFlakeLib(t *testing.T) {
	needFlake(t)
	var got struct {
		DockerArgs string `json:"dockerArgs"`
		Cmd        string `json:"cmd"`
	}
	evalJSON(t, flakeExpr+`let vt = flake.lib.fragments { binary = "/opt/vt"; }; in {
  inherit (vt) dockerArgs;
  cmd = vt.mkCmd { image = "img"; serveArgs = [ (vt.raw "\${X:+--x}") ]; };
}`, &got)
	if got.DockerArgs != "-v /opt/vt:/patches/vllm-timings:ro" || !strings.Contains(got.Cmd, "set -- ${X:+--x}; shopt -s execfail; exec /patches/vllm-timings exec --on-failure warn -- vllm serve \\\"$@\\\" || exec vllm serve \\\"$@\\\"\"") {
		t.Errorf("lib.fragments gave %+v", got)
	}
}

// TestREADMEMkModelIsEvalNix: every mkModel block the documentation shows
// ("```nix" then `"NAME" = mkModel {`) is eval.nix's model NAME, word for
// word (eval.nix indents it by eight spaces), so that what the pages show
// is what is evaluated and compared with `nix model`.
func TestREADMEMkModelIsEvalNix(t *testing.T) {
	eval, err := os.ReadFile("tests/eval.nix")
	if err != nil {
		t.Fatal(err)
	}
	start := regexp.MustCompile("(?m)^```nix\n(\"[a-z0-9-]+\" = mkModel \\{\n)")
	shown := map[string]bool{}
	for _, page := range testtree.Pages(t) {
		for _, m := range start.FindAllStringSubmatchIndex(page.Text, -1) {
			block, _, _ := strings.Cut(page.Text[m[2]:], "\n```")
			name, _, _ := strings.Cut(block[1:], "\"")
			shown[name] = true
			indented := "        " + strings.ReplaceAll(block, "\n", "\n        ")
			if !strings.Contains(string(eval), indented+"\n") {
				t.Errorf("%s's %s block is not eval.nix's; copy it from modules/tests/eval.nix:\n%s", page.Path, name, block)
			}
		}
	}
	// The README's entry and docs/nix.md's Genesis-style one.
	for _, name := range []string{"qwen3-8b", "qwen-genesis"} {
		if !shown[name] {
			t.Errorf("no page of README.md and docs/ shows the %s mkModel block", name)
		}
	}
}

// needFlake skips where flake.nix is not in the tree: nix build's
// checkPhase runs the tests on a source without the flake's own files.
func needFlake(t *testing.T) {
	t.Helper()
	if _, err := os.Stat("../flake.nix"); err != nil {
		t.Skip("SKIPPED: no ../flake.nix (running inside nix build's checkPhase)")
	}
}
