package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vllm-timings/vllm-timings/nixgen/nixtest"
)

// TestCLIMatchesFragmentsNix runs "vllm-timings nix fragments --format json"
// and "nix model --format json" for several option sets and evaluates
// modules/nixos/fragments.nix for the same options with nix-instantiate:
// the strings must be identical. (nixgen's tests do the same for many more
// inputs against the library; this one holds the command's output to it.)
func TestCLIMatchesFragmentsNix(t *testing.T) {
	type set struct {
		flags     []string       // nix fragments/model flags
		fragments map[string]any // the same as fragments.nix arguments
		model     []string       // nix model NAME and flags after the common ones
		mkModel   map[string]any // the same as mkModel arguments
	}
	sets := []set{
		{
			flags:     []string{"--binary", "/usr/local/bin/vllm-timings"},
			fragments: map[string]any{"binary": "/usr/local/bin/vllm-timings"},
			model:     []string{"plain", "--image", "vllm/vllm-openai:latest"},
			mkModel:   map[string]any{"image": "vllm/vllm-openai:latest"},
		},
		{
			flags:     []string{"--binary", "/nix/store/0c4y1d8r4k7m2q9l6w3s5x1v8b7n2f0h-vllm-timings-0.1.0/bin/vllm-timings", "--patchset", "/nix/store/5x2h3w4f8l0p0j1d6k9r7q2m3n4b5v6c-extra/extra.hcl"},
			fragments: map[string]any{"binary": "/nix/store/0c4y1d8r4k7m2q9l6w3s5x1v8b7n2f0h-vllm-timings-0.1.0/bin/vllm-timings", "patchsets": []string{"/nix/store/5x2h3w4f8l0p0j1d6k9r7q2m3n4b5v6c-extra/extra.hcl"}},
			model:     []string{"qwen-vllm", "--image", "vllm/vllm-openai:v0.11.0", "--docker-arg=--device=nvidia.com/gpu=all", "--macro", "ctx=75000", "--", "Qwen/Qwen3-8B", "--max-model-len", "${ctx}", "--speculative-config", `{"method":"mtp","num_speculative_tokens":3}`},
			mkModel:   map[string]any{"image": "vllm/vllm-openai:v0.11.0", "extraDockerArgs": []string{"--device=nvidia.com/gpu=all"}, "macros": map[string]string{"ctx": "75000"}, "serveArgs": []string{"Qwen/Qwen3-8B", "--max-model-len", "${ctx}", "--speculative-config", `{"method":"mtp","num_speculative_tokens":3}`}},
		},
		{
			flags:     []string{"--binary", "/home/me/My Tools/vllm-timings", "--mount", "/opt/with space/vt", "--on-failure", "abort"},
			fragments: map[string]any{"binary": "/home/me/My Tools/vllm-timings", "mountPath": "/opt/with space/vt", "onFailure": "abort"},
			model:     []string{"spaces", "--image", "img", "--env", "A=b c", "--docker", "/run/current-system/sw/bin/podman", "--", "two words"},
			mkModel:   map[string]any{"image": "img", "env": map[string]string{"A": "b c"}, "docker": "/run/current-system/sw/bin/podman", "serveArgs": []string{"two words"}},
		},
		{
			flags:     []string{"--binary", `/q/it's "x"/vllm-timings`, "--patchset", `/q/"dq".hcl`, "--patchset", "/q/o'neil.hcl", "--patchset", `/q/back\slash $x.hcl`},
			fragments: map[string]any{"binary": `/q/it's "x"/vllm-timings`, "patchsets": []string{`/q/"dq".hcl`, "/q/o'neil.hcl", `/q/back\slash $x.hcl`}},
			model:     []string{"quotes", "--image", "img", "--", "it's", `"dq"`, `\`, "--raw", "'$HOME'", "--raw", "${HOME:-/root}"},
			mkModel:   map[string]any{"image": "img", "serveArgs": []any{"it's", `"dq"`, `\`, map[string]string{"raw": "'$HOME'"}, map[string]string{"raw": "${HOME:-/root}"}}},
		},
		{
			flags:     []string{"--binary", "/b"},
			fragments: map[string]any{"binary": "/b"},
			model: []string{
				"genesis", "--image", "img", "--before", "set -e", "--before", "pip install xxhash -q", "--env", "VLLM_ENFORCE_EAGER", "--env", "A=1",
				"--publish", "${PORT}:8000", "--", "--raw", "${VLLM_ENFORCE_EAGER:+--enforce-eager}", "Qwen/Qwen3-8B",
			},
			mkModel: map[string]any{
				"image": "img", "before": []string{"set -e", "pip install xxhash -q"}, "env": map[string]any{"VLLM_ENFORCE_EAGER": nil, "A": "1"},
				"publish": "${PORT}:8000", "serveArgs": []any{map[string]string{"raw": "${VLLM_ENFORCE_EAGER:+--enforce-eager}"}, "Qwen/Qwen3-8B"},
			},
		},
		{
			flags:     []string{"--binary", "/b", "--patchset", "/p/x.hcl"},
			fragments: map[string]any{"binary": "/b", "patchsets": []string{"/p/x.hcl"}},
			model:     []string{"launcher", "--image", "img", "--entrypoint", "bash", "--entrypoint", "docker/entrypoint.sh", "--", "single"},
			mkModel:   map[string]any{"image": "img", "entrypoint": []string{"bash", "docker/entrypoint.sh"}, "serveArgs": []string{"single"}},
		},
		{
			flags:     []string{"--binary", "/b", "--on-failure", "abort"},
			fragments: map[string]any{"binary": "/b", "onFailure": "abort"},
			model:     []string{"venv", "--venv", "/srv/venv", "--", "Qwen/Qwen3-8B", "--port", "${PORT}"},
			mkModel:   map[string]any{"venv": "/srv/venv", "serveArgs": []string{"Qwen/Qwen3-8B", "--port", "${PORT}"}},
		},
	}

	dir := t.TempDir()
	var expr strings.Builder
	expr.WriteString("let fragments = import ./fragments.nix; in [\n")
	var wantFrags, wantModels []string
	for i, s := range sets {
		var frag, model bytes.Buffer
		if code := run(append([]string{"nix", "fragments", "--format", "json"}, s.flags...), &frag, os.Stderr); code != 0 {
			t.Fatalf("nix fragments %v: exit %d", s.flags, code)
		}
		args := append([]string{"nix", "model", s.model[0], "--format", "json"}, s.flags...)
		if code := run(append(args, s.model[1:]...), &model, os.Stderr); code != 0 {
			t.Fatalf("nix model %v: exit %d", s.model, code)
		}
		wantFrags = append(wantFrags, frag.String())
		var m map[string]json.RawMessage
		if err := json.Unmarshal(model.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		wantModels = append(wantModels, string(m[s.model[0]]))

		raw, err := json.Marshal(map[string]any{"fragments": s.fragments, "model": s.mkModel})
		if err != nil {
			t.Fatal(err)
		}
		argsFile := filepath.Join(dir, fmt.Sprintf("%d.json", i))
		if err := os.WriteFile(argsFile, raw, 0o644); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&expr, "  (let a = builtins.fromJSON (builtins.readFile ./%d.json); f = fragments a.fragments; raw = x: if builtins.isAttrs x then f.raw x.raw else x; in { fragments = { inherit (f) dockerArgs cmdPrefix; }; model = f.mkModel (a.model // { serveArgs = map raw (a.model.serveArgs or [ ]); }); })\n", i)
	}
	expr.WriteString("]\n")
	// A link next to the expression keeps fragments.nix's path unquoted.
	fragmentsNix, err := filepath.Abs(filepath.Join("..", "..", "modules", "nixos", "fragments.nix"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(fragmentsNix, filepath.Join(dir, "fragments.nix")); err != nil {
		t.Fatal(err)
	}
	exprFile := filepath.Join(dir, "all.nix")
	if err := os.WriteFile(exprFile, []byte(expr.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	var got []struct {
		Fragments json.RawMessage `json:"fragments"`
		Model     json.RawMessage `json:"model"`
	}
	nixtest.EvalFile(t, exprFile, &got)
	for i := range sets {
		if diff := cmp.Diff(nixDecodeJSON(t, wantFrags[i]), nixDecodeJSON(t, string(got[i].Fragments))); diff != "" {
			t.Errorf("set %d: nix fragments --format json vs fragments.nix (-cli +nix):\n%s", i, diff)
		}
		if diff := cmp.Diff(nixDecodeJSON(t, wantModels[i]), nixDecodeJSON(t, string(got[i].Model))); diff != "" {
			t.Errorf("set %d: nix model --format json vs mkModel (-cli +nix):\n%s", i, diff)
		}
	}
}

func nixDecodeJSON(t *testing.T, s string) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("%v: %s", err, s)
	}
	return v
}
