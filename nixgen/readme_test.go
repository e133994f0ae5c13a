package nixgen

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vllm-timings/vllm-timings/nixgen/swaptest"
	"github.com/vllm-timings/vllm-timings/patcher/testtree"
)

const readmeMarker = "<!-- genesis-run: go test ./nixgen -run TestReadmeGenesisRun -update rewrites this block -->\n```text\n"

// TestReadmeGenesisRun computes what docs/nix.md shows under "What
// llama-swap and bash make of it": the Genesis-style entry (genesis, the
// golden model-genesis), evaluated by Nix, loaded by llama-swap's own loader
// with PORT 5800, and run with VLLM_ENFORCE_EAGER unset and set. The block
// must be exactly that; -update rewrites it.
func TestReadmeGenesisRun(t *testing.T) {
	dir := t.TempDir()
	common := filepath.Join(dir, "common")
	for _, name := range []string{"vllm", "pip", "python3"} {
		writeFile(t, filepath.Join(common, "bin", name), stubProgram, 0o755)
	}
	// The container's /patches/vllm-timings is under dir; the text shows it
	// without that prefix.
	root := filepath.Join(dir, "root")
	v := variant{opts: Options{Binary: storeBinary, Mount: root + DefaultMount}, model: genesis}
	writeFile(t, v.opts.Mount, stubPatcher, 0o755)
	out := evalVariants(t, []variant{v})[0]
	if out.modelErr != nil {
		t.Fatal(out.modelErr)
	}
	run := func(swapEnv []string) (swaptest.Model, [][]string) {
		entry := map[string]any{}
		raw, _ := json.Marshal(out.goNix.Model[genesis.Name])
		if err := json.Unmarshal(raw, &entry); err != nil {
			t.Fatal(err)
		}
		entry["env"] = swapEnv
		config, _ := json.Marshal(map[string]any{"startPort": 5800, "models": map[string]any{genesis.Name: entry}})
		loaded, err := swaptest.Load(t, config)
		if err != nil {
			t.Fatal(err)
		}
		lm := loaded[genesis.Name]
		image := -1
		for i, w := range lm.Argv {
			if w == genesis.Image {
				image = i - 1
			}
		}
		calls, code := runArgv(t, root, common, lm, image, "", 0)
		if code != 0 {
			t.Fatalf("exit %d", code)
		}
		return lm, calls
	}
	lm, unset := run(nil)
	_, set := run([]string{"VLLM_ENFORCE_EAGER=1"})

	show := func(argv []string) string {
		s := shellLine(argv)
		s = strings.ReplaceAll(s, root, "")
		return strings.ReplaceAll(s, filepath.Join(common, "bin")+"/", "")
	}
	var b strings.Builder
	b.WriteString("llama-swap runs (PORT is 5800; words quoted as for a shell):\n  " + show(lm.Argv) + "\n")
	b.WriteString("in the container, bash -c runs, in order:\n")
	for _, c := range unset {
		b.WriteString("  " + show(c) + "\n")
	}
	b.WriteString("with VLLM_ENFORCE_EAGER=1 in llama-swap's environment, the last one is:\n")
	b.WriteString("  " + show(set[len(set)-1]) + "\n")
	got := b.String()

	page := testtree.PageWith(t, readmeMarker)
	before, after, _ := strings.Cut(page.Text, readmeMarker)
	shown, rest, ok := strings.Cut(after, "```\n")
	if !ok {
		t.Fatalf("%s: the genesis-run block is not closed", page.Path)
	}
	if *update {
		page.Write(t, before+readmeMarker+got+"```\n"+rest)
		return
	}
	if diff := cmp.Diff(got, shown); diff != "" {
		t.Errorf("%s's genesis-run block differs from the run (-run +page):\n%s\nFix: go test ./nixgen -run TestReadmeGenesisRun -update", page.Path, diff)
	}
	if len(unset) != 4 || len(set) != 4 {
		t.Fatalf("the run made %d and %d calls, want pip, python3, the patcher and vllm", len(unset), len(set))
	}
	if diff := cmp.Diff(append([]string{set[3][0], set[3][1], "--enforce-eager"}, unset[3][2:]...), set[3]); diff != "" {
		t.Errorf("with VLLM_ENFORCE_EAGER set, vllm's argv should differ by exactly --enforce-eager (-want +got):\n%s", diff)
	}
}
