package nixgen

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"mvdan.cc/sh/v3/syntax"

	"github.com/vllm-timings/vllm-timings/nixgen/nixtest"
	"github.com/vllm-timings/vllm-timings/patcher/exit"
)

// seedDir holds the one seed corpus: FuzzLayers' folder, which go test
// -fuzz also reads and writes its findings to. FuzzWordsInProcess adds the
// same seeds with f.Add.
var seedDir = filepath.Join("testdata", "fuzz", "FuzzLayers")

// readSeeds reads the corpus files ("go test fuzz v1" and one string(...)
// line), by file name.
func readSeeds(t testing.TB) map[string]string {
	t.Helper()
	files, err := os.ReadDir(seedDir)
	if err != nil {
		t.Fatal(err)
	}
	seeds := map[string]string{}
	for _, f := range files {
		raw, err := os.ReadFile(filepath.Join(seedDir, f.Name()))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
		lit, ok := strings.CutPrefix(strings.TrimSpace(lines[len(lines)-1]), "string(")
		if len(lines) != 2 || lines[0] != "go test fuzz v1" || !ok {
			t.Fatalf("%s: not a go test fuzz v1 file of one string", f.Name())
		}
		s, err := strconv.Unquote(strings.TrimSuffix(lit, ")"))
		if err != nil {
			t.Fatalf("%s: %v", f.Name(), err)
		}
		seeds[f.Name()] = s
	}
	if len(seeds) < 60 {
		t.Fatalf("only %d seeds in %s", len(seeds), seedDir)
	}
	return seeds
}

// seedRoles puts s into every role a user's text can take. Each case must
// either come out unchanged at the end of every layer or be refused with a
// nixgen exit code, by fragments.nix too.
func seedRoles(s string) []layerCase {
	base := func(role string, edit func(*variant)) layerCase {
		v := variant{opts: Options{Binary: "/h/vllm-timings", Mount: "/m/vt"}, model: ModelOptions{Image: "img"}}
		edit(&v)
		return layerCase{name: role, v: v, mayRefuse: true}
	}
	roles := []layerCase{
		base("serve-arg", func(v *variant) { v.model.ServeArgs = Args(s, "--x="+s) }),
		base("with-macro", func(v *variant) {
			v.model.Macros = map[string]string{"ctx": "75000"}
			v.model.ServeArgs = Args(s+"${ctx}", "${MODEL_ID}"+s)
		}),
		base("docker-arg", func(v *variant) { v.model.ExtraDockerArgs = []string{s} }),
		base("env-value", func(v *variant) { v.model.Env = map[string]string{"V": s} }),
		base("image", func(v *variant) { v.model.Image = s }),
		base("publish", func(v *variant) { v.model.Publish = "${PORT}:" + s }),
		base("host-paths", func(v *variant) { v.opts.Binary = "/h/" + s; v.opts.Patchsets = []string{"/p/" + s + ".hcl"} }),
		base("macro-value", func(v *variant) {
			v.model.Macros = map[string]string{"m": s}
			v.model.ServeArgs = Args("${m}", "--x=${m}", "a b${m}")
		}),
		base("entrypoint", func(v *variant) {
			v.model.Entrypoint = []string{"bash", "docker/entrypoint.sh", s}
			v.model.ServeArgs = Args(s, "--x="+s)
		}),
		base("venv-arg", func(v *variant) {
			v.model = ModelOptions{Venv: "/v", ServeArgs: Args(s, "--port", "${PORT}")}
			v.opts.Mount = ""
		}),
		base("venv-path", func(v *variant) {
			v.model = ModelOptions{Venv: "/v/" + s, ServeArgs: Args("--port", "${PORT}")}
			v.opts.Mount = ""
		}),
	}
	// These words reach docker, or the exec forms' commands, as argv: no
	// shell reads them, so the argv after llama-swap is their last layer
	// (TestLayers runs every form to the end).
	for i := range roles {
		switch roles[i].name {
		case "docker-arg", "env-value", "image", "publish", "host-paths", "entrypoint", "venv-arg", "venv-path":
			roles[i].argvOnly = true
		}
	}
	// The container path and the failure modes, once.
	mount := base("mount", func(v *variant) { v.opts.Mount = "/c/" + s + "/vt"; v.opts.OnFailure = "abort" })
	mount.patcherFails = true
	roles = append(roles, mount)
	// A before statement that passes s to a program, quoted for bash (not
	// with $'...', which needs a UTF-8 locale for \u escapes).
	if q, err := syntax.Quote(s, syntax.LangPOSIX); err == nil && !strings.HasPrefix(q, "$'") {
		c := base("before", func(v *variant) { v.model.Before = []string{"python3 " + q} })
		c.wantBefore = [][]string{{"python3", s}}
		roles = append(roles, c)
	}
	return roles
}

// TestLayerSeeds takes every seed of the corpus through every role and every
// layer, in one nix-instantiate call and one llama-swap config for all
// (FuzzLayers, which does the same one input at a time, is for -fuzz).
func TestLayerSeeds(t *testing.T) {
	seeds := readSeeds(t)
	names := make([]string, 0, len(seeds))
	for n := range seeds {
		names = append(names, n)
	}
	sort.Strings(names)
	var cases []layerCase
	var strs []string
	for _, n := range names {
		strs = append(strs, seeds[n])
		for _, c := range seedRoles(seeds[n]) {
			c.name = strings.TrimPrefix(n, "seed-") + "-" + c.name
			cases = append(cases, c)
		}
	}
	checkNixEscaping(t, strs)
	runLayers(t, cases)
}

// fuzzing reports whether go test runs with -fuzz.
func fuzzing() bool {
	f := flag.Lookup("test.fuzz")
	return f != nil && f.Value.String() != ""
}

// FuzzLayers is TestLayerSeeds for one input at a time, for the fuzzer:
//
//	go test ./nixgen -run '^$' -fuzz FuzzLayers
//
// New findings land in testdata/fuzz/FuzzLayers, which TestLayerSeeds then
// runs with the other seeds; without -fuzz this target does nothing else.
func FuzzLayers(f *testing.F) {
	if !fuzzing() {
		f.Skip("the corpus runs in one batch in TestLayerSeeds; this target is for go test -fuzz FuzzLayers")
	}
	f.Fuzz(func(t *testing.T, s string) {
		checkNixEscaping(t, []string{s})
		runLayers(t, seedRoles(s))
	})
}

// isNixgenCode reports whether code is one of nixgen's exit codes.
func isNixgenCode(code exit.Code) bool { return code >= 10 && code <= 19 || code >= 50 && code <= 54 }

// checkRefusal fails t unless err is an *exit.Error with a nixgen exit code.
func checkRefusal(t testing.TB, err error) {
	t.Helper()
	var e *exit.Error
	if !errors.As(err, &e) || !isNixgenCode(e.Code) {
		t.Fatalf("refused without a nixgen exit code (10-19, 50-54): %v", err)
	}
}

// checkNixEscaping evaluates nixString(s) and, where it applies,
// nixIndented(s) for every s in one nix-instantiate call: each must give s.
// Nix strings hold no NUL byte and its JSON output needs UTF-8, so those
// inputs are left out.
func checkNixEscaping(t *testing.T, strs []string) {
	t.Helper()
	var exprs, want []string
	for _, s := range strs {
		if strings.Contains(s, "\x00") || !utf8.ValidString(s) {
			continue
		}
		exprs, want = append(exprs, nixString(s)), append(want, s)
		for _, in := range []string{s, s + "\n", "x " + s + " y\n"} {
			if ind, ok := nixIndented(in, "    "); ok {
				exprs, want = append(exprs, ind), append(want, in)
			}
		}
	}
	var got []string
	nixtest.EvalExpr(t, "[\n"+strings.Join(exprs, "\n")+"\n]", &got)
	if len(got) != len(want) {
		t.Fatalf("nix-instantiate gave %d strings for %d", len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("Nix string %s evaluates to %q, want %q", exprs[i], got[i], want[i])
		}
	}
}
