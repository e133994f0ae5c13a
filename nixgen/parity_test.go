package nixgen

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vllm-timings/vllm-timings/nixgen/nixtest"
	"github.com/vllm-timings/vllm-timings/patcher/exit"
)

// variant is one input to both implementations: Go's NewFragments and
// NewModel, and fragments.nix with mkModel.
type variant struct {
	opts  Options
	model ModelOptions
}

// nixArgs is the variant as the arguments of fragments.nix and mkModel.
// Go's zero values mean "not given", so only what is set is passed. A raw
// serve argument is {"raw": TEXT}, which the evaluation turns into
// (fragments.raw TEXT); a variable passed through is an env value null.
func (v variant) nixArgs() map[string]any {
	frag := map[string]any{"binary": v.opts.Binary, "patchsets": nonNil(v.opts.Patchsets)}
	if v.opts.Mount != "" {
		frag["mountPath"] = v.opts.Mount
	}
	if v.opts.OnFailure != "" {
		frag["onFailure"] = v.opts.OnFailure
	}
	serve := []any{}
	for _, a := range v.model.ServeArgs {
		if a.Raw {
			serve = append(serve, map[string]string{"raw": a.Text})
		} else {
			serve = append(serve, a.Text)
		}
	}
	env := map[string]any{}
	for k, val := range v.model.Env {
		env[k] = val
	}
	for _, k := range v.model.PassEnv {
		env[k] = nil
	}
	model := map[string]any{
		"serveArgs":       serve,
		"extraDockerArgs": nonNil(v.model.ExtraDockerArgs),
		"env":             env,
		"macros":          nonNilMap(v.model.Macros),
		"before":          nonNil(v.model.Before),
	}
	set := func(k, val string) {
		if val != "" {
			model[k] = val
		}
	}
	set("image", v.model.Image)
	set("docker", v.model.Docker)
	set("publish", v.model.Publish)
	set("venv", v.model.Venv)
	set("overlay", v.model.Overlay)
	if v.model.Entrypoint != nil {
		model["entrypoint"] = v.model.Entrypoint
	}
	if v.model.Venv == "" && v.model.Image == "" {
		model["image"] = "" // the "missing image" refusal
	}
	return map[string]any{"fragments": frag, "model": model}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func nonNilMap(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

// outcome is what each side made of one variant.
type outcome struct {
	frag     Fragments
	fragErr  error
	model    Model
	modelErr error
	// goNix holds the values of the Nix files that Go rendered, evaluated
	// by nix-instantiate; nix holds fragments.nix's results.
	goNix struct {
		Fragments *Fragments       `json:"fragments"`
		Model     map[string]Model `json:"model"`
	}
	nix struct {
		Fragments struct {
			OK     *Fragments `json:"ok"`
			Failed bool       `json:"failed"`
		} `json:"fragments"`
		Model struct {
			OK     *Model `json:"ok"`
			Failed bool   `json:"failed"`
		} `json:"model"`
	}
}

// evalVariants runs both implementations on every variant, with one call of
// nix-instantiate for all of them. Go's output goes through its own Nix
// rendering and nix-instantiate; fragments.nix gets its arguments as JSON,
// so that its inputs do not depend on nixgen's Nix escaping.
func evalVariants(t testing.TB, vs []variant) []outcome {
	t.Helper()
	dir := t.TempDir()
	outs := make([]outcome, len(vs))
	var expr strings.Builder
	fmt.Fprintf(&expr, `let
  fragments = import %s;
  args = builtins.fromJSON (builtins.readFile ./args.json);
  try = v: let r = builtins.tryEval (builtins.deepSeq v v); in if r.success then { ok = r.value; } else { failed = true; };
  nixSide = i: let
    a = builtins.elemAt args i;
    f = fragments a.fragments;
    serve = map (x: if builtins.isAttrs x then f.raw x.raw else x) a.model.serveArgs;
  in {
    fragments = try { inherit (f) dockerArgs cmdPrefix; };
    model = try (f.mkModel (a.model // { serveArgs = serve; }));
  };
in [
`, nixtest.Path("modules/nixos/fragments.nix"))
	var args []any
	for i, v := range vs {
		o := &outs[i]
		o.frag, o.fragErr = NewFragments(v.opts)
		o.model, o.modelErr = NewModel(v.opts, v.model)
		args = append(args, v.nixArgs())
		// Go's Nix files, inline: each is one expression after its comments.
		goFrag, goModel := "null", "null"
		if o.fragErr == nil {
			goFrag = "(\n" + string(o.frag.Nix(v.opts)) + ")"
		}
		if o.modelErr == nil {
			goModel = "(\n" + string(o.model.Nix(v.opts, v.model)) + ")"
		}
		fmt.Fprintf(&expr, "  { go = { fragments = %s; model = %s; }; nix = nixSide %d; }\n", goFrag, goModel, i)
	}
	expr.WriteString("]\n")
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "args.json"), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	exprFile := filepath.Join(dir, "all.nix")
	if err := os.WriteFile(exprFile, []byte(expr.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	var results []json.RawMessage
	nixtest.EvalFile(t, exprFile, &results)
	if len(results) != len(vs) {
		t.Fatalf("nix-instantiate gave %d results for %d variants", len(results), len(vs))
	}
	for i, raw := range results {
		var r struct {
			Go  json.RawMessage `json:"go"`
			Nix json.RawMessage `json:"nix"`
		}
		if err := json.Unmarshal(raw, &r); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(r.Go, &outs[i].goNix); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(r.Nix, &outs[i].nix); err != nil {
			t.Fatal(err)
		}
	}
	return outs
}

// nixChecksToo reports whether fragments.nix is expected to refuse an input
// that Go refused. Go alone checks model names (fragments.nix has none)
// and every non-printable character (fragments.nix knows a list).
func nixChecksToo(err error) bool {
	var e *exit.Error
	if !errors.As(err, &e) {
		return true
	}
	return e.Code != ExitUnprintable && !(e.Code == ExitName && strings.HasPrefix(e.Pos, "model name "))
}

// checkParity fails t unless Go, Go's rendered Nix and fragments.nix agree.
func checkParity(t testing.TB, v variant, o outcome) {
	t.Helper()
	if o.fragErr == nil {
		if o.goNix.Fragments == nil || *o.goNix.Fragments != o.frag {
			t.Errorf("fragments: Go's Nix output evaluates to %+v, want %+v", o.goNix.Fragments, o.frag)
		}
		if o.nix.Fragments.OK == nil {
			t.Errorf("fragments: fragments.nix refused %+v, which Go accepts", v.opts)
		} else if diff := cmp.Diff(o.frag, *o.nix.Fragments.OK); diff != "" {
			t.Errorf("fragments: fragments.nix differs from Go (-go +nix):\n%s", diff)
		}
	} else if nixChecksToo(o.fragErr) && !o.nix.Fragments.Failed {
		t.Errorf("fragments: Go refused (%v) but fragments.nix accepted: %+v", o.fragErr, o.nix.Fragments.OK)
	}
	if o.modelErr == nil {
		if diff := cmp.Diff(map[string]Model{v.model.Name: o.model}, o.goNix.Model); diff != "" {
			t.Errorf("model: Go's Nix output evaluates to something else (-go +nix):\n%s", diff)
		}
		if o.nix.Model.OK == nil {
			t.Errorf("model: fragments.nix's mkModel refused %+v, which Go accepts", v.model)
		} else if diff := cmp.Diff(o.model, *o.nix.Model.OK); diff != "" {
			t.Errorf("model: mkModel differs from Go (-go +nix):\n%s", diff)
		}
	} else if nixChecksToo(o.modelErr) && !o.nix.Model.Failed {
		t.Errorf("model: Go refused (%v) but mkModel accepted: %+v", o.modelErr, o.nix.Model.OK)
	}
}

var parityVariants = []variant{
	{opts: Options{Binary: "/usr/local/bin/vllm-timings"}, model: ModelOptions{Name: "plain", Image: "vllm/vllm-openai:latest"}},
	{
		opts:  Options{Binary: storeBinary, Patchsets: []string{"/nix/store/5x2h3w4f8l0p0j1d6k9r7q2m3n4b5v6c-extra/extra.hcl"}},
		model: ModelOptions{Name: "store", Image: "vllm/vllm-openai:v0.11.0", ServeArgs: Args("Qwen/Qwen3-8B")},
	},
	{
		opts:  Options{Binary: "/home/me/My Tools/vllm-timings", Mount: "/opt/with space/vt", Patchsets: []string{"/a b/c d.hcl"}},
		model: ModelOptions{Name: "spaces", Image: "img", ServeArgs: Args("two words", "  lead", "trail  "), Env: map[string]string{"A": "b c"}},
	},
	{
		opts:  Options{Binary: `/q/it's "x"/vllm-timings`, OnFailure: "abort", Patchsets: []string{`/q/"dq".hcl`, "/q/o'neil.hcl", `/q/back\slash.hcl`}},
		model: ModelOptions{Name: "quotes", Image: "img", ServeArgs: Args("it's", `"dq"`, `\`, `\\"`, "''", `'"'"'`), Docker: "/usr/bin/podman"},
	},
	{
		opts:  Options{Binary: "/b", Patchsets: []string{"/p/1.hcl", "/q/1.hcl", "/r/s/t.hcl", "/u.hcl"}},
		model: ModelOptions{Name: "many.patchsets", Image: "img"},
	},
	{
		opts: Options{Binary: "/b/$HOME/${x y}/`x`/vt"},
		model: ModelOptions{
			Name: "dollar", Image: "img", ServeArgs: Args("$", "$$", "$1", "$?", "a$", "$-x", "$(x)", "$${MODEL_ID}", "\\${MODEL_ID}"),
			ExtraDockerArgs: []string{"$HOME", "${x:-y}"}, Env: map[string]string{"A": "$HOME"},
		},
	},
	{
		opts:  Options{Binary: "/opt/ünïcödé/☕/vt"},
		model: ModelOptions{Name: "unicode", Image: "img", ServeArgs: Args("café", "日本語", "emoji 🎉")},
	},
	{opts: Options{Binary: "/b"}, model: ModelOptions{
		Name: "macros", Image: "vllm/vllm-openai:${tag}",
		Macros:    map[string]string{"tag": "v0.11.0", "ctx": "75000", "model-path": "/models/Qwen3-8B", "x": "if"},
		Env:       map[string]string{"CTX": "${ctx}", "P": "${MODEL_ID}:${PORT}"},
		ServeArgs: Args("${model-path}", "--max-model-len=${ctx}", "${x}", "it's ${ctx}", "a b${ctx}", "${ctx}${ctx}", `"${ctx}"`),
	}},
	{opts: Options{Binary: "/b"}, model: ModelOptions{
		Name: "shellchars", Image: "img",
		ExtraDockerArgs: []string{"--gpus", "all", "--shm-size=16g", "-v", "/models:/models:ro", "#x", "~", "a=b", "{", "}", "!", "[[", "elif", "*"},
		ServeArgs:       Args(";", "|", "&", ">", "<", "(", ")", "`", "#", "{", "~", "*", "?", "[", "=", "!", "time", "]]"),
	}},
	{opts: Options{Binary: "/b", OnFailure: "abort", Mount: "/vt"}, model: ModelOptions{
		Name: "json", Image: "img",
		ServeArgs: Args("--speculative-config", `{"method":"mtp","num_speculative_tokens":3}`, "--override-generation-config", `{"temperature": 0.6, "stop": ["</s>", "\n"]}`),
	}},
	{opts: Options{Binary: "/b"}, model: ModelOptions{
		Name: "raw", Image: "img", Macros: map[string]string{"ctx": "8"},
		ServeArgs: []Arg{Raw("${VLLM_ENFORCE_EAGER:+--enforce-eager}"), Raw("$HOME"), Raw("'it''s $x'"), Raw(`"${A:-a b}"`), Raw("--n=${ctx}"), Raw(""), Raw(`\#`)},
	}},
	{opts: Options{Binary: "/b", OnFailure: "abort"}, model: ModelOptions{
		Name: "before", Image: "img",
		Before: []string{"set -e", "pip install xxhash pandas scipy -q", "python3 -m vllm._genesis.patches.apply_all", `echo "it's" \\ $HOME > /dev/null`, "{ true & }", `find / -maxdepth 0 -exec true {} \;`, "a=1 ", "echo ${MODEL_ID}"},
	}},
	{opts: Options{Binary: "/b"}, model: ModelOptions{Name: "passenv", Image: "img", PassEnv: []string{"VLLM_ENFORCE_EAGER", "A"}, Env: map[string]string{"B": "x"}, Publish: "${PORT}:8000"}},
	{opts: Options{Binary: "/b", Mount: "/o/vt", Patchsets: []string{"/p/x.hcl"}}, model: ModelOptions{
		Name: "launcher", Image: "img", Entrypoint: []string{"bash", "docker/entrypoint.sh"},
		ServeArgs: Args("single", "it's", "${MODEL_ID}"), Publish: "0.0.0.0:${PORT}:9000",
	}},
	{opts: Options{Binary: "/h/bin/vllm-timings", OnFailure: "abort", Patchsets: []string{"/p/x y.hcl"}}, model: ModelOptions{
		Name: "venv", Venv: "/opt/my venv",
		ServeArgs: Args("Qwen/Qwen3-8B", "--port", "${PORT}", "it's"),
	}},
	{opts: Options{Binary: "/b", Patchsets: []string{"/p/x.hcl"}}, model: ModelOptions{
		Name: "overlay", Image: "img", Overlay: "/tmp/vllm-timings",
		Before: []string{"set -e"}, ServeArgs: append(Args("m", "it's"), Raw("${A:+--a}")), ExtraDockerArgs: []string{"--read-only", "--user=65534:65534", "--tmpfs=/tmp", "--ipc", "host"},
	}},
	{opts: Options{Binary: "/b", OnFailure: "abort"}, model: ModelOptions{
		Name: "overlay-entrypoint", Image: "img", Overlay: "/run/vt overlay",
		Entrypoint: []string{"bash", "docker/entrypoint.sh"}, ServeArgs: Args("m"),
	}},
	{opts: Options{Binary: "/b"}, model: ModelOptions{
		Name: "overlay-venv", Venv: "/v", Overlay: "/var/cache/vt",
		ServeArgs: Args("--port", "${PORT}"),
	}},
	// Refused by both.
	{opts: Options{Binary: "/b"}, model: ModelOptions{Name: "bad", Image: "img", Overlay: "tmp/vt"}},
	{opts: Options{Binary: "/b"}, model: ModelOptions{Name: "bad", Image: "img", Overlay: "/tmp/a:b"}},
	{opts: Options{Binary: "/b"}, model: ModelOptions{Name: "bad", Venv: "/v", Overlay: "/tmp/../vt", ServeArgs: Args("--port", "${PORT}")}},
	{opts: Options{Binary: "/b"}, model: ModelOptions{Name: "bad", Venv: "/v", Overlay: "/tmp/a:b", ServeArgs: Args("--port", "${PORT}")}},
	{opts: Options{Binary: "/b"}, model: ModelOptions{Name: "bad", Image: "img", ExtraDockerArgs: []string{"${${PORT}}"}}},
	{opts: Options{Binary: "/b"}, model: ModelOptions{Name: "bad", Image: "img", Env: map[string]string{"A": "${a${MODEL_ID}b}"}}},
	{opts: Options{Binary: "/b"}, model: ModelOptions{Name: "bad", Image: "img", Macros: map[string]string{"ctx": "a}"}, ServeArgs: Args("${${ctx}")}},
	{opts: Options{Binary: "/b"}, model: ModelOptions{Name: "bad", Image: "img", ServeArgs: Args("$HOME")}},
	{opts: Options{Binary: "/b"}, model: ModelOptions{Name: "bad", Image: "img", ServeArgs: Args("${HOME:-/root}")}},
	{opts: Options{Binary: "/b"}, model: ModelOptions{Name: "bad", Image: "img", ServeArgs: Args("${VLLM_ENFORCE_EAGER:+--enforce-eager}")}},
	{opts: Options{Binary: "/b"}, model: ModelOptions{Name: "bad", Image: "img", ServeArgs: Args("${HOME}x")}},
	{opts: Options{Binary: "/b"}, model: ModelOptions{Name: "bad", Image: "img", ServeArgs: Args("a_$_b", "x$Y")}},
	{opts: Options{Binary: "/b"}, model: ModelOptions{Name: "bad", Image: "img", ServeArgs: []Arg{Raw("${X}")}}},
	{opts: Options{Binary: "/b"}, model: ModelOptions{Name: "bad", Image: "img", ServeArgs: []Arg{Raw("a #b")}}},
	{opts: Options{Binary: "/b"}, model: ModelOptions{Name: "bad", Image: "img", Before: []string{"set -e;"}}},
	{opts: Options{Binary: "/b"}, model: ModelOptions{Name: "bad", Image: "img", Before: []string{"sleep 1 &"}}},
	{opts: Options{Binary: "/b"}, model: ModelOptions{Name: "bad", Image: "img", Before: []string{"a &&"}}},
	{opts: Options{Binary: "/b"}, model: ModelOptions{Name: "bad", Image: "img", Before: []string{"a |"}}},
	{opts: Options{Binary: "/b"}, model: ModelOptions{Name: "bad", Image: "img", Before: []string{"  "}}},
	{opts: Options{Binary: "/b"}, model: ModelOptions{Name: "bad", Image: "img", Before: []string{"pip install x # quiet"}}},
	{opts: Options{Binary: "/b"}, model: ModelOptions{Name: "bad", Image: "img", Before: []string{"a;#x"}}},
	{opts: Options{Binary: "/b"}, model: ModelOptions{Name: "bad", Image: "img", Before: []string{"echo ${X}"}}},
	{opts: Options{Binary: "/b"}, model: ModelOptions{Name: "bad", Image: "img", Publish: "8000:8000"}},
	{opts: Options{Binary: "/b"}, model: ModelOptions{Name: "bad", Image: "img", Entrypoint: []string{"x"}, Before: []string{"true"}}},
	{opts: Options{Binary: "/b"}, model: ModelOptions{Name: "bad", Image: "img", Entrypoint: []string{"x"}, ServeArgs: []Arg{Raw("$X")}}},
	{opts: Options{Binary: "/b"}, model: ModelOptions{Name: "bad", Image: "img", Entrypoint: []string{"x"}, ServeArgs: Args("$X")}},
	{opts: Options{Binary: "/b"}, model: ModelOptions{Name: "bad", Venv: "/v", Image: "img", ServeArgs: Args("--port", "${PORT}")}},
	{opts: Options{Binary: "/b"}, model: ModelOptions{Name: "bad", Venv: "/v", PassEnv: []string{"X"}, ServeArgs: Args("--port", "${PORT}")}},
	{opts: Options{Binary: "/b"}, model: ModelOptions{Name: "bad", Venv: "/v", Publish: "${PORT}:1", ServeArgs: Args("--port", "${PORT}")}},
	{opts: Options{Binary: "/b", Mount: "/m"}, model: ModelOptions{Name: "bad", Venv: "/v", ServeArgs: Args("--port", "${PORT}")}},
	{opts: Options{Binary: "/b"}, model: ModelOptions{Name: "bad", Venv: "/v", ServeArgs: Args("--port", "8000")}},
	{opts: Options{Binary: "/b"}, model: ModelOptions{Name: "bad", Venv: "v", ServeArgs: Args("--port", "${PORT}")}},
	{opts: Options{Binary: "/b"}, model: ModelOptions{Name: "bad", Venv: "/v", Before: []string{"true"}, ServeArgs: Args("--port", "${PORT}")}},
	{opts: Options{Binary: "relative/vllm-timings"}, model: ModelOptions{Name: "bad", Image: "img"}},
	{opts: Options{Binary: "/b", Mount: "patches/vt"}, model: ModelOptions{Name: "bad", Image: "img"}},
	{opts: Options{Binary: "/b", Mount: "/"}, model: ModelOptions{Name: "bad", Image: "img"}},
	{opts: Options{Binary: "/b//c"}, model: ModelOptions{Name: "bad", Image: "img"}},
	{opts: Options{Binary: "/b/c/"}, model: ModelOptions{Name: "bad", Image: "img"}},
	{opts: Options{Binary: "/b/./c"}, model: ModelOptions{Name: "bad", Image: "img"}},
	{opts: Options{Binary: "/b/line\nbreak"}, model: ModelOptions{Name: "bad", Image: "img"}},
	{opts: Options{Binary: "/b/tab\there"}, model: ModelOptions{Name: "bad", Image: "img"}},
	{opts: Options{Binary: "/b/c:d"}, model: ModelOptions{Name: "bad", Image: "img"}},
	{opts: Options{Binary: "/b/${PORT}"}, model: ModelOptions{Name: "bad", Image: "img"}},
	{opts: Options{Binary: "/b/${env.HOME}"}, model: ModelOptions{Name: "bad", Image: "img"}},
	{opts: Options{Binary: "/b", Patchsets: []string{"/p/${ctx}.hcl"}}, model: ModelOptions{Name: "bad", Image: "img"}},
	{opts: Options{Binary: "/b", OnFailure: "ignore"}, model: ModelOptions{Name: "bad", Image: "img"}},
	{opts: Options{Binary: "/b"}, model: ModelOptions{Name: "bad", Image: ""}},
	{opts: Options{Binary: "/b"}, model: ModelOptions{Name: "bad", Image: "img", ServeArgs: Args("${ctx}")}},
	{opts: Options{Binary: "/b"}, model: ModelOptions{Name: "bad", Image: "img", ServeArgs: Args("${PID}")}},
	{opts: Options{Binary: "/b"}, model: ModelOptions{Name: "bad", Image: "img", ServeArgs: Args("${env.HF_TOKEN}")}},
	{opts: Options{Binary: "/b"}, model: ModelOptions{Name: "bad", Image: "img", Env: map[string]string{"1X": "y"}}},
	{opts: Options{Binary: "/b"}, model: ModelOptions{Name: "bad", Image: "img", Macros: map[string]string{"PORT": "1"}}},
	{opts: Options{Binary: "/b"}, model: ModelOptions{Name: "bad", Image: "img", Macros: map[string]string{"a.b": "1"}}},
	{opts: Options{Binary: "/b"}, model: ModelOptions{Name: "bad", Image: "img", Macros: map[string]string{"ctx": "two words"}}},
	{opts: Options{Binary: "/b"}, model: ModelOptions{Name: "bad", Image: "img", Macros: map[string]string{"ctx": ""}}},
	{opts: Options{Binary: "/b"}, model: ModelOptions{Name: "bad", Image: "img", Macros: map[string]string{"ctx": "it's"}}},
	{opts: Options{Binary: "/b"}, model: ModelOptions{Name: "bad", Image: "img", ServeArgs: Args("a\nb")}},
	{opts: Options{Binary: "/b/nbsp\u00a0x"}, model: ModelOptions{Name: "bad", Image: "img"}},
	{opts: Options{Binary: "/b/zwsp\u200bx"}, model: ModelOptions{Name: "bad", Image: "img"}},
	// Refused by Go only: fragments.nix has no model name.
	{opts: Options{Binary: "/b"}, model: ModelOptions{Name: "qwen/qwen3:8b", Image: "img"}},
}

// TestFragmentsNixParity evaluates fragments.nix for many option sets and
// compares its strings with Go's: they must be identical, and inputs that Go
// refuses must make fragments.nix throw.
func TestFragmentsNixParity(t *testing.T) {
	outs := evalVariants(t, parityVariants)
	for i, v := range parityVariants {
		t.Run(fmt.Sprintf("%d-%s", i, v.model.Name), func(t *testing.T) {
			checkParity(t, v, outs[i])
		})
	}
}

// An "ascii" variant passes every printable ASCII character, alone and
// between letters, and bash's keywords, as serve and docker arguments: the
// quoting port in fragments.nix must decide like syntax.Quote for each.
func init() {
	var args []string
	for c := rune(0x20); c < 0x7f; c++ {
		args = append(args, string(c), "a"+string(c)+"b")
	}
	args = append(args, "!", "[[", "]]", "case", "coproc", "do", "done", "elif", "else", "esac", "fi", "for",
		"function", "if", "in", "select", "then", "time", "until", "while", "{", "}")
	// "a$b" is a bash variable, refused as a plain serve argument.
	serve := slices.DeleteFunc(slices.Clone(args), func(s string) bool { return s == "a$b" })
	parityVariants = append(parityVariants, variant{
		opts:  Options{Binary: "/b"},
		model: ModelOptions{Name: "ascii", Image: "img", ServeArgs: Args(serve...), ExtraDockerArgs: args},
	})
}
