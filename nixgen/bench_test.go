package nixgen

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/vllm-timings/vllm-timings/nixgen/nixtest"
)

func benchModel() (Options, ModelOptions) {
	for _, c := range goldenCases {
		if c.name == "model-qwen" {
			return c.opts, *c.model
		}
	}
	panic("no model-qwen golden case")
}

func BenchmarkNewFragments(b *testing.B) {
	o := Options{Binary: storeBinary, Patchsets: []string{"/etc/vllm-timings/extra.hcl"}}
	for b.Loop() {
		if _, err := NewFragments(o); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkNewModel(b *testing.B) {
	o, m := benchModel()
	for b.Loop() {
		if _, err := NewModel(o, m); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkModelNix(b *testing.B) {
	o, m := benchModel()
	model, err := NewModel(o, m)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		model.Nix(o, m)
	}
}

// BenchmarkFragmentsNixEval measures one nix-instantiate evaluation of
// fragments.nix's mkModel, the cost each Nix-checking test pays per call.
func BenchmarkFragmentsNixEval(b *testing.B) {
	file := filepath.Join(b.TempDir(), "e.nix")
	src := "(import " + nixtest.Path("modules/nixos/fragments.nix") + ` { binary = "/b"; }).mkModel { image = "img"; serveArgs = [ "a b" "\${ctx}" ]; macros.ctx = "1"; }`
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		nixtest.Instantiate(b, "--eval", "--strict", "--json", file)
	}
}
