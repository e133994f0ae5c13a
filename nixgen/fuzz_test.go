package nixgen

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/vllm-timings/vllm-timings/patcher/exit"
)

// FuzzLayers puts a string into every role a user's text can take (serve
// argument, next to a macro, docker argument, environment value, image,
// container path, host path, macro value) and requires, for each role,
// that the string either comes out unchanged at the end of every layer
// (Go's Nix rendering and fragments.nix evaluated by nix-instantiate,
// llama-swap's substitution and splitting, bash -c) or is refused with an
// *Error and an exit code from 10 to 19, by fragments.nix too. It also
// round-trips the string through nixString and nixIndented alone.
//
// The seed corpus is testdata/fuzz/FuzzLayers; go test runs it. Search
// further with: go test ./nixgen -run '^$' -fuzz FuzzLayers
// With -v, each role logs how far the string went.
func FuzzLayers(f *testing.F) {
	f.Fuzz(func(t *testing.T, s string) {
		bash := needTool(t, "bash")
		checkNixEscaping(t, s)

		dir := t.TempDir()
		mount := dir + "/m/vt"
		base := func(name string) variant {
			return variant{opts: Options{Binary: "/h/vllm-timings", Mount: mount}, model: ModelOptions{Name: name, Image: "img"}}
		}
		roles := map[string]variant{}
		add := func(name string, edit func(*variant)) {
			v := base(name)
			edit(&v)
			roles[name] = v
		}
		add("serve-arg", func(v *variant) { v.model.ServeArgs = []string{s, "--x=" + s} })
		add("with-macro", func(v *variant) {
			v.model.Macros = map[string]string{"ctx": "75000"}
			v.model.ServeArgs = []string{s + "${ctx}", "${MODEL_ID}" + s}
		})
		add("docker-arg", func(v *variant) { v.model.ExtraDockerArgs = []string{s} })
		add("env-value", func(v *variant) { v.model.Env = map[string]string{"V": s} })
		add("image", func(v *variant) { v.model.Image = s })
		add("mount", func(v *variant) { v.opts.Mount = dir + "/c/" + s + "/vt" })
		add("host-paths", func(v *variant) { v.opts.Binary = "/h/" + s; v.opts.Patchsets = []string{"/p/" + s + ".hcl"} })
		add("macro-value", func(v *variant) {
			v.model.Macros = map[string]string{"m": s}
			v.model.ServeArgs = []string{"${m}", "--x=${m}", "a b${m}"}
		})

		names := make([]string, 0, len(roles))
		vs := make([]variant, 0, len(roles))
		for name, v := range roles {
			names = append(names, name)
			vs = append(vs, v)
		}
		outs := evalVariants(t, vs)
		for i, v := range vs {
			t.Run(names[i], func(t *testing.T) {
				o := outs[i]
				checkParity(t, v, o)
				if o.modelErr != nil {
					var e *exit.Error
					if !errors.As(o.modelErr, &e) || e.Code < 10 || e.Code > 19 {
						t.Fatalf("refused without an exit code from 10 to 19: %v", o.modelErr)
					}
					t.Logf("%q: refused, exit %d (fragments.nix refused too: %v): %v", s, e.Code, o.nix.Model.Failed, e)
					return
				}
				checkLayers(t, bash, v, o.goNix.Model[v.model.Name].Cmd)
				if !t.Failed() {
					t.Logf("%q: passed Nix (Go's rendering and fragments.nix), llama-swap (substitution, splitting) and bash -c", s)
				}
			})
		}
	})
}

// checkNixEscaping evaluates nixString(s) and, where it applies,
// nixIndented(s) with nix-instantiate: both must give s. Nix strings hold
// no NUL byte and its JSON output needs UTF-8, so those inputs are skipped.
func checkNixEscaping(t *testing.T, s string) {
	t.Helper()
	if strings.Contains(s, "\x00") || !utf8.ValidString(s) {
		return
	}
	exprs := []string{nixString(s)}
	for _, in := range []string{s, s + "\n", "x " + s + " y\n"} {
		if ind, ok := nixIndented(in, "    "); ok {
			exprs = append(exprs, ind)
		}
	}
	file := filepath.Join(t.TempDir(), "strings.nix")
	if err := os.WriteFile(file, []byte("[\n"+strings.Join(exprs, "\n")+"\n]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var got []string
	nixEval(t, file, &got)
	for i, g := range got {
		want := s
		if i > 0 {
			want = []string{s, s + "\n", "x " + s + " y\n"}[indentedIndex(s, i)]
		}
		if g != want {
			t.Errorf("Nix string %s evaluates to %q, want %q", exprs[i], g, want)
		}
	}
}

// indentedIndex maps the i-th indented expression back to its input.
func indentedIndex(s string, i int) int {
	n := 0
	for j, in := range []string{s, s + "\n", "x " + s + " y\n"} {
		if _, ok := nixIndented(in, "    "); ok {
			n++
			if n == i {
				return j
			}
		}
	}
	panic(fmt.Sprint("no indented expression ", i))
}
