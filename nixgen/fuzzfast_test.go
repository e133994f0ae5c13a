package nixgen

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// FuzzWordsInProcess is FuzzLayers without external programs, so that it
// runs thousands of times a second: the llama-swap layer is the same model
// and splitter, and the bash layer is mvdan.cc/sh's parser and word
// expansion instead of bash (no globbing, so bash itself stays the judge
// in TestLayerSeeds and FuzzLayers). The Nix layer is left to those. Its
// seeds are FuzzLayers' corpus, added here with f.Add; TestLayers holds the
// model of llama-swap to llama-swap's own loader.
//
// Search with: go test ./nixgen -run '^$' -fuzz FuzzWordsInProcess
// (findings land in testdata/fuzz/FuzzWordsInProcess; move them to
// testdata/fuzz/FuzzLayers so that every layer runs them).
func FuzzWordsInProcess(f *testing.F) {
	for _, s := range readSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		roles := []variant{
			{opts: Options{Binary: "/h/vt"}, model: ModelOptions{Name: "mm", Image: "img", ServeArgs: Args(s, "--x="+s)}},
			{opts: Options{Binary: "/h/vt"}, model: ModelOptions{Name: "mm", Image: "img", Macros: map[string]string{"ctx": "75000"}, ServeArgs: Args(s+"${ctx}", "${MODEL_ID}"+s)}},
			{opts: Options{Binary: "/h/vt"}, model: ModelOptions{Name: "mm", Image: s, ExtraDockerArgs: []string{s}, Env: map[string]string{"V": s}}},
			{opts: Options{Binary: "/h/" + s, Mount: "/c/" + s + "/vt", Patchsets: []string{"/p/" + s + ".hcl"}}, model: ModelOptions{Name: "mm", Image: "img"}},
			{opts: Options{Binary: "/h/vt"}, model: ModelOptions{Name: "mm", Image: "img", Macros: map[string]string{"m": s}, ServeArgs: Args("${m}", "a b${m}")}},
		}
		for _, v := range roles {
			lc := layerCase{v: v}
			intended := func(_ variant, s string) string { return lc.intended(testPort, s) }
			m, err := NewModel(v.opts, v.model)
			if err != nil {
				checkRefusal(t, err)
				continue
			}
			argv, err := llamaSwapArgv(m.Cmd, v.model.Name, v.model.Macros, testPort)
			if err != nil {
				t.Fatalf("llama-swap would refuse: %v\n%s", err, m.Cmd)
			}
			mount := v.opts.Mount
			if mount == "" {
				mount = DefaultMount
			}
			want := []string{"docker", "run", "--rm", "--name", "mm", "-p", "127.0.0.1:" + strconv.Itoa(testPort) + ":8000", "-v", v.opts.Binary + ":" + mount + ":ro"}
			v.opts.Mount = mount
			containerPaths := wantContainerPaths(v.opts)
			for i, p := range v.opts.Patchsets {
				want = append(want, "-v", p+":"+containerPaths[i]+":ro")
			}
			for k, val := range v.model.Env {
				want = append(want, "-e", k+"="+intended(v, val))
			}
			want = append(want, wantShm(v.model.ExtraDockerArgs)...)
			for _, a := range v.model.ExtraDockerArgs {
				want = append(want, intended(v, a))
			}
			want = append(want, "--entrypoint", "/bin/bash", intended(v, v.model.Image), "-c")
			if len(argv) != len(want)+1 {
				t.Fatalf("llama-swap splits into %d words, want %d (-want +got):\n%s", len(argv), len(want)+1, cmp.Diff(want, argv))
			}
			if diff := cmp.Diff(want, argv[:len(want)]); diff != "" {
				t.Fatalf("docker argv (-want +got):\n%s", diff)
			}

			var serve []string
			for _, a := range v.model.ServeArgs {
				serve = append(serve, intended(v, a.Text))
			}
			wantPatcher := []string{"exec", mount, "exec", "--on-failure", "warn"}
			for _, p := range containerPaths {
				wantPatcher = append(wantPatcher, "--patchset", p)
			}
			wantPatcher = append(append(wantPatcher, "--", "vllm", "serve"), serve...)
			wantExec := append([]string{"exec", "vllm", "serve"}, serve...)
			patcher, exec := bashWords(t, argv[len(argv)-1])
			if diff := cmp.Diff(wantPatcher, patcher); diff != "" {
				t.Errorf("patcher argv in bash (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(wantExec, exec); diff != "" {
				t.Errorf("exec argv in bash (-want +got):\n%s", diff)
			}
		}
	})
}

// testPort is the port llama-swap allocates in this test.
const testPort = 5800

// bashWords parses the -c script of the stock form, "set -- ARGS; shopt
// -s execfail; exec PATCHER exec ... -- vllm serve "$@" || exec vllm serve
// "$@"", and expands the words of its two exec statements, "$@" being the
// words of set --.
func bashWords(t *testing.T, script string) (patcher, exec []string) {
	t.Helper()
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(script), "")
	if err != nil {
		t.Fatalf("bash cannot parse %q: %v", script, err)
	}
	if len(f.Stmts) != 3 {
		t.Fatalf("script %q has %d statements, want 3", script, len(f.Stmts))
	}
	or, ok := f.Stmts[2].Cmd.(*syntax.BinaryCmd)
	if !ok || or.Op != syntax.OrStmt {
		t.Fatalf("third statement of %q is not CMD || CMD", script)
	}
	call := func(st *syntax.Stmt) *syntax.CallExpr {
		c, ok := st.Cmd.(*syntax.CallExpr)
		if !ok || len(c.Assigns) > 0 || len(st.Redirs) > 0 {
			t.Fatalf("not a plain command in %q", script)
		}
		return c
	}
	set, err := expand.Fields(nil, call(f.Stmts[0]).Args...)
	if err != nil || len(set) < 2 || set[0] != "set" || set[1] != "--" {
		t.Fatalf("first statement of %q is not set -- ARGS (%q, %v)", script, set, err)
	}
	if shopt, _ := expand.Fields(nil, call(f.Stmts[1]).Args...); !slices.Equal(shopt, []string{"shopt", "-s", "execfail"}) {
		t.Fatalf("second statement of %q is not shopt -s execfail", script)
	}
	fields := func(st *syntax.Stmt) []string {
		args := call(st).Args
		last := args[len(args)-1]
		if dq, ok := last.Parts[0].(*syntax.DblQuoted); !ok || len(last.Parts) != 1 || len(dq.Parts) != 1 {
			t.Fatalf("%q does not end in \"$@\"", script)
		} else if pe, ok := dq.Parts[0].(*syntax.ParamExp); !ok || pe.Param.Value != "@" {
			t.Fatalf("%q does not end in \"$@\"", script)
		}
		words, err := expand.Fields(nil, args[:len(args)-1]...)
		if err != nil {
			t.Fatalf("expanding %q: %v", script, err)
		}
		return append(slices.Clip(words), set[2:]...)
	}
	return fields(or.X), fields(or.Y)
}
