package nixgen

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vllm-timings/vllm-timings/nixgen/nixtest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

const storeBinary = "/nix/store/0c4y1d8r4k7m2q9l6w3s5x1v8b7n2f0h-vllm-timings-0.1.0/bin/vllm-timings"

// goldenCase is one input whose output is kept in testdata/golden.
type goldenCase struct {
	name     string
	opts     Options
	model    *ModelOptions // nil: fragments only
	function bool          // --format nix-function: a .nix file only
}

// genesis is the README's complete model entry: Genesis-style steps before
// the patcher, a bash expansion of a variable passed through from
// llama-swap's environment, and the port published on all interfaces.
var genesis = ModelOptions{
	Name:   "qwen-vllm",
	Image:  "vllm/vllm-openai:nightly-1acd67a795ebccdf9b9db7697ae9082058301657",
	Docker: "/run/current-system/sw/bin/docker",
	Before: []string{
		"set -e",
		"pip install xxhash pandas scipy -q",
		"python3 -m vllm._genesis.patches.apply_all",
	},
	PassEnv:         []string{"VLLM_ENFORCE_EAGER"},
	ExtraDockerArgs: []string{"--device=nvidia.com/gpu=all", "--ipc=host"},
	Publish:         "${PORT}:8000",
	Macros:          map[string]string{"ctx": "75000"},
	ServeArgs: append([]Arg{Raw("${VLLM_ENFORCE_EAGER:+--enforce-eager}")}, Args(
		"--served-model-name", "${MODEL_ID}",
		"--max-model-len", "${ctx}",
		"--speculative-config", `{"method":"mtp","num_speculative_tokens":3}`,
		"--host", "0.0.0.0", "--port", "8000",
	)...),
}

var goldenCases = []goldenCase{
	{name: "fragments-store", opts: Options{Binary: storeBinary}},
	{name: "fragments-patchsets-abort", opts: Options{
		Binary:    "/opt/vllm timings/vllm-timings",
		Mount:     "/opt/vt",
		OnFailure: "abort",
		Patchsets: []string{"/etc/vllm-timings/extra.hcl", `/home/me/my "patch" sets/it's.hcl`},
	}},
	{name: "model-qwen", opts: Options{Binary: storeBinary}, model: &ModelOptions{
		Name:            "qwen-vllm",
		Image:           "vllm/vllm-openai:nightly-1acd67a795ebccdf9b9db7697ae9082058301657",
		Docker:          "/run/current-system/sw/bin/docker",
		ExtraDockerArgs: []string{"--device=nvidia.com/gpu=all", "--ipc=host"},
		Env:             map[string]string{"HF_HOME": "/models/hf"},
		Macros:          map[string]string{"ctx": "75000"},
		ServeArgs: Args(
			"Qwen/Qwen3-Next-80B-A3B-Instruct-FP8",
			"--served-model-name", "${MODEL_ID}",
			"--max-model-len", "${ctx}",
			"--speculative-config", `{"method":"mtp","num_speculative_tokens":3}`,
			"--host", "0.0.0.0", "--port", "8000",
		),
	}},
	{name: "model-quoting", opts: Options{
		Binary:    "/home/o'brien/bin/vllm-timings",
		OnFailure: "abort",
		Patchsets: []string{"/srv/patch sets/$HOME ${x y}.hcl"},
	}, model: &ModelOptions{
		Name:  "m1",
		Image: "registry.example/vllm:1",
		Env:   map[string]string{"GREETING": `it's "quoted" \ $HOME`},
		ServeArgs: Args(
			"", "two words", `back\slash`, "it's", `"dq"`, "`date`", "a;b|c&d", "#hash", "~user",
			"glob*?[", "''", "café ☕", "if", "--chat-template={% if x %}{{ y }}{% endif %}",
			"--name=${MODEL_ID}:${PORT}", "it's ${MODEL_ID}", "--raw",
		),
	}},
	{name: "model-genesis", opts: Options{Binary: storeBinary}, model: &genesis},
	{name: "model-genesis-function", model: &genesis, function: true},
	{name: "model-launcher", opts: Options{Binary: storeBinary, Patchsets: []string{"/etc/vllm-timings/extra.hcl"}}, model: &ModelOptions{
		Name:            "qwen-launcher",
		Image:           "ghcr.io/example/qwen3-vllm:latest",
		Docker:          "/run/current-system/sw/bin/docker",
		Entrypoint:      []string{"bash", "docker/entrypoint.sh"},
		ExtraDockerArgs: []string{"--device=nvidia.com/gpu=all"},
		Env:             map[string]string{"MODEL": "Qwen/Qwen3-8B"},
		ServeArgs:       Args("single"),
	}},
	{name: "model-image-entrypoint", opts: Options{Binary: storeBinary}, model: &ModelOptions{
		Name:            "qwen-openai",
		Image:           "vllm/vllm-openai:v0.11.0",
		Docker:          "/run/current-system/sw/bin/docker",
		Entrypoint:      []string{"vllm", "serve"},
		ExtraDockerArgs: []string{"--device=nvidia.com/gpu=all", "--ipc=host"},
		ServeArgs:       Args("Qwen/Qwen3-8B", "--served-model-name", "${MODEL_ID}"),
	}},
	{name: "model-hardened", opts: Options{Binary: storeBinary}, model: &ModelOptions{
		Name:            "qwen-hardened",
		Image:           "vllm/vllm-openai:v0.11.0",
		Docker:          "/run/current-system/sw/bin/docker",
		Overlay:         "/tmp/vllm-timings",
		ExtraDockerArgs: []string{"--read-only", "--user=1000:1000", "--tmpfs=/tmp", "--device=nvidia.com/gpu=all"},
		Env:             map[string]string{"HOME": "/tmp"},
		ServeArgs:       Args("Qwen/Qwen3-8B", "--served-model-name", "${MODEL_ID}"),
	}},
	{name: "model-venv", opts: Options{Binary: storeBinary, OnFailure: "abort"}, model: &ModelOptions{
		Name:      "qwen-venv",
		Venv:      "/srv/vllm/venv",
		Macros:    map[string]string{"ctx": "32768"},
		ServeArgs: Args("Qwen/Qwen3-8B", "--served-model-name", "${MODEL_ID}", "--max-model-len", "${ctx}", "--host", "127.0.0.1", "--port", "${PORT}"),
	}},
}

func (c goldenCase) render(t *testing.T) (nixOut, jsonOut []byte) {
	t.Helper()
	if c.model == nil {
		f, err := NewFragments(c.opts)
		if err != nil {
			t.Fatal(err)
		}
		return f.Nix(c.opts), f.JSON()
	}
	opts := c.opts
	if c.function {
		opts.Binary = FunctionBinary
	}
	m, err := NewModel(opts, *c.model)
	if err != nil {
		t.Fatal(err)
	}
	if c.function {
		out, err := m.NixFunction(opts, *c.model)
		if err != nil {
			t.Fatal(err)
		}
		return out, nil
	}
	return m.Nix(opts, *c.model), m.JSON(c.model.Name)
}

// TestGolden compares the output of nix fragments and nix model, in both
// formats, with testdata/golden.
func TestGolden(t *testing.T) {
	for _, c := range goldenCases {
		t.Run(c.name, func(t *testing.T) {
			nixOut, jsonOut := c.render(t)
			checkGolden(t, filepath.Join("testdata", "golden", c.name+".nix"), nixOut)
			if !c.function {
				checkGolden(t, filepath.Join("testdata", "golden", c.name+".json"), jsonOut)
			}
		})
	}
}

func checkGolden(t *testing.T, file string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(file, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v\nto create it, run: go test ./nixgen -run TestGolden -update", err)
	}
	if !bytes.Equal(want, got) {
		t.Errorf("%s is out of date (-want +got):\n%s\nif the change is intended, run: go test ./nixgen -run TestGolden -update",
			file, cmp.Diff(string(want), string(got)))
	}
}

// TestGoldenNixEval evaluates every golden Nix file, in one nix-instantiate
// call: the value must be exactly the golden JSON.
func TestGoldenNixEval(t *testing.T) {
	var files []string
	var want []any
	for _, c := range goldenCases {
		if c.function {
			continue
		}
		files = append(files, "(import "+nixtest.Path(filepath.Join("nixgen", "testdata", "golden", c.name+".nix"))+")")
		raw, err := os.ReadFile(filepath.Join("testdata", "golden", c.name+".json"))
		if err != nil {
			t.Fatal(err)
		}
		var w any
		if err := json.Unmarshal(raw, &w); err != nil {
			t.Fatal(err)
		}
		want = append(want, w)
	}
	var got []any
	nixtest.EvalExpr(t, "[\n"+strings.Join(files, "\n")+"\n]", &got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("golden Nix files evaluate to something else than their JSON (-json +nix):\n%s", diff)
	}
}

// TestFunctionFileInModelsDir puts the function-shaped golden file into a
// models/ directory, one file per model, imported the way such setups do
// (each file a function of { pkgs, lib, ... }), with nixpkgs' lib and a pkgs
// whose vllm-timings package is a stand-in: the entry must be the one that
// nix model prints with --binary at that package's path. Without the
// package, the evaluation must fail with a message that says what to add.
func TestFunctionFileInModelsDir(t *testing.T) {
	lib := nixtest.NixpkgsLib(t)
	dir := t.TempDir()
	fn, err := os.ReadFile(filepath.Join("testdata", "golden", "model-genesis-function.nix"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "models"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "models", "qwen-vllm.nix"), fn, 0o644); err != nil {
		t.Fatal(err)
	}
	pkg := strings.TrimSuffix(storeBinary, "/bin/vllm-timings")
	expr := `let
  lib = import ` + nixtest.String(lib) + `;
  pkgs = { vllm-timings = { type = "derivation"; name = "vllm-timings-0.1.0"; outPath = ` + nixtest.String(pkg) + `; meta.mainProgram = "vllm-timings"; }; };
  backends = { };
  models = dir: lib.mapAttrs' (file: _: {
    name = lib.removeSuffix ".nix" file;
    value = import (dir + "/${file}") { inherit pkgs lib backends; };
  }) (builtins.readDir dir);
  try = v: (builtins.tryEval (builtins.deepSeq v v)).success;
in {
  models = models ` + "./models" + `;
  withoutPackage = try (import ./models/qwen-vllm.nix { inherit lib; pkgs = { }; });
}`
	file := filepath.Join(dir, "config.nix")
	if err := os.WriteFile(file, []byte(expr), 0o644); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Models         map[string]Model `json:"models"`
		WithoutPackage bool             `json:"withoutPackage"`
	}
	nixtest.EvalFile(t, file, &got)
	m, err := NewModel(Options{Binary: storeBinary}, genesis)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]Model{"qwen-vllm": m}, got.Models); diff != "" {
		t.Errorf("the models/ directory gives another entry than nix model --binary (-want +got):\n%s", diff)
	}
	if got.WithoutPackage {
		t.Error("the function file evaluated without a vllm-timings package")
	}
	r := nixtest.Run(t, dir, "--eval", "--strict", "--expr", `import ./models/qwen-vllm.nix { lib = import `+nixtest.String(lib)+`; pkgs = { }; }`)
	if r.OK || !bytes.Contains(r.Stderr, []byte("add the vllm-timings flake's overlays.default to nixpkgs.overlays")) {
		t.Errorf("without a package: ok=%v, stderr:\n%s", r.OK, r.Stderr)
	}
	r = nixtest.Run(t, dir, "--eval", "--strict", "--expr", `(import ./models/qwen-vllm.nix { lib = import `+nixtest.String(lib)+`; pkgs = { }; vllm-timings = { type = "derivation"; name = "x"; outPath = "/nix/store/x-it's"; meta.mainProgram = "vt"; }; }).cmd`)
	if r.OK || !bytes.Contains(r.Stderr, []byte("holds characters that the generated cmd does not quote")) {
		t.Errorf("a package path that needs quoting: ok=%v, stderr:\n%s", r.OK, r.Stderr)
	}
}
