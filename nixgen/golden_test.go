package nixgen

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

const storeBinary = "/nix/store/0c4y1d8r4k7m2q9l6w3s5x1v8b7n2f0h-vllm-timings-0.1.0/bin/vllm-timings"

// goldenCase is one input whose output is kept in testdata/golden.
type goldenCase struct {
	name  string
	opts  Options
	model *ModelOptions // nil: fragments only
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
		ServeArgs: []string{
			"Qwen/Qwen3-Next-80B-A3B-Instruct-FP8",
			"--served-model-name", "${MODEL_ID}",
			"--max-model-len", "${ctx}",
			"--speculative-config", `{"method":"mtp","num_speculative_tokens":3}`,
			"--host", "0.0.0.0", "--port", "8000",
		},
	}},
	{name: "model-quoting", opts: Options{
		Binary:    "/home/o'brien/bin/vllm-timings",
		OnFailure: "abort",
		Patchsets: []string{"/srv/patch sets/$HOME ${x y}.hcl"},
	}, model: &ModelOptions{
		Name:  "m1",
		Image: "registry.example/vllm:1",
		Env:   map[string]string{"GREETING": `it's "quoted" \ $HOME`},
		ServeArgs: []string{
			"", "two words", `back\slash`, "it's", `"dq"`, "$HOME", "${HOME:-/root}", "`date`", "a;b|c&d", "#hash", "~user",
			"glob*?[", "''", "café ☕", "if", "--chat-template={% if x %}{{ y }}{% endif %}",
			"--name=${MODEL_ID}:${PORT}", "it's ${MODEL_ID}",
		},
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
	m, err := NewModel(c.opts, *c.model)
	if err != nil {
		t.Fatal(err)
	}
	return m.Nix(c.opts, *c.model), m.JSON(c.model.Name)
}

// TestGolden compares the output of nix fragments and nix model, in both
// formats, with testdata/golden.
func TestGolden(t *testing.T) {
	for _, c := range goldenCases {
		t.Run(c.name, func(t *testing.T) {
			nixOut, jsonOut := c.render(t)
			checkGolden(t, filepath.Join("testdata", "golden", c.name+".nix"), nixOut)
			checkGolden(t, filepath.Join("testdata", "golden", c.name+".json"), jsonOut)
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

// TestGoldenNixEval parses every golden Nix file with nix-instantiate and
// evaluates it: the value must be exactly the golden JSON.
func TestGoldenNixEval(t *testing.T) {
	for _, c := range goldenCases {
		t.Run(c.name, func(t *testing.T) {
			nixFile := filepath.Join("testdata", "golden", c.name+".nix")
			nixInstantiate(t, "--parse", nixFile)
			var got any
			nixEval(t, nixFile, &got)
			raw, err := os.ReadFile(filepath.Join("testdata", "golden", c.name+".json"))
			if err != nil {
				t.Fatal(err)
			}
			var want any
			if err := json.Unmarshal(raw, &want); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s evaluates to something else than its JSON (-json +nix):\n%s", nixFile, diff)
			}
		})
	}
}
