package nixgen

import (
	"slices"
	"testing"
)

// TestLayersBash takes the bash text of a model, before statements and raw
// serve arguments, through every layer and checks what bash made of it:
// the README's Genesis-style entry with VLLM_ENFORCE_EAGER unset, set and
// set to "" (the vllm argv must differ by exactly --enforce-eager), set -e
// stopping at a failing step, and the parity variants "raw" and "before".
func TestLayersBash(t *testing.T) {
	g := variant{opts: Options{Binary: storeBinary}, model: genesis}
	g.model.Docker = "" // the stub docker stands in for the real one
	steps := [][]string{{"pip", "install", "xxhash", "pandas", "scipy", "-q"}, {"python3", "-m", "vllm._genesis.patches.apply_all"}}
	unset := []string{
		"--served-model-name", "${MODEL_ID}", "--max-model-len", "75000",
		"--speculative-config", `{"method":"mtp","num_speculative_tokens":3}`, "--host", "0.0.0.0", "--port", "8000",
	}
	eager := slices.Insert(slices.Clone(unset), 0, "--enforce-eager")

	var raw, before variant
	for _, v := range parityVariants {
		switch v.model.Name {
		case "raw":
			raw = v
		case "before":
			before = v
		}
	}
	cases := []layerCase{
		{name: "genesis-unset", v: g, wantBefore: steps, wantServe: unset, patcherFails: true},
		{name: "genesis-set", v: g, swapEnv: []string{"VLLM_ENFORCE_EAGER=1"}, wantBefore: steps, wantServe: eager},
		{name: "genesis-empty", v: g, swapEnv: []string{"VLLM_ENFORCE_EAGER="}, wantBefore: steps, wantServe: unset},
		{name: "genesis-pip-fails", v: g, stubFail: "pip", wantBefore: steps[:1], wantStop: 7},
		// HOME is unset in the container, x too; A is not set either.
		{name: "raw", v: raw, wantServe: []string{"its $x", "a b", "--n=8", "#"}},
		{name: "before", v: before, wantBefore: [][]string{steps[0], steps[1]}, patcherFails: true},
	}
	// ${MODEL_ID} is the case's own name, which runLayers gives it.
	runLayers(t, cases)
}
