package nixgen

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vllm-timings/vllm-timings/patcher/exit"
)

// variant is one input to both implementations: Go's NewFragments and
// NewModel, and fragments.nix with mkModel.
type variant struct {
	opts  Options
	model ModelOptions
}

// nixArgs is the variant as the arguments of fragments.nix and mkModel.
func (v variant) nixArgs() map[string]any {
	frag := map[string]any{"binary": v.opts.Binary, "patchsets": nonNil(v.opts.Patchsets)}
	if v.opts.Mount != "" {
		frag["mountPath"] = v.opts.Mount
	}
	if v.opts.OnFailure != "" {
		frag["onFailure"] = v.opts.OnFailure
	}
	model := map[string]any{
		"image":           v.model.Image,
		"serveArgs":       nonNil(v.model.ServeArgs),
		"extraDockerArgs": nonNil(v.model.ExtraDockerArgs),
		"env":             nonNilMap(v.model.Env),
		"macros":          nonNilMap(v.model.Macros),
	}
	if v.model.Docker != "" {
		model["docker"] = v.model.Docker
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
  try = v: let r = builtins.tryEval (builtins.deepSeq v v); in if r.success then { ok = r.value; } else { failed = true; };
  nixSide = file: let a = builtins.fromJSON (builtins.readFile file); in {
    fragments = try (let f = fragments a.fragments; in { inherit (f) dockerArgs cmdPrefix; });
    model = try ((fragments a.fragments).mkModel a.model);
  };
in [
`, nixString(fragmentsNix(t)))
	for i, v := range vs {
		o := &outs[i]
		o.frag, o.fragErr = NewFragments(v.opts)
		o.model, o.modelErr = NewModel(v.opts, v.model)
		args, err := json.Marshal(v.nixArgs())
		if err != nil {
			t.Fatal(err)
		}
		write := func(name string, data []byte) string {
			p := filepath.Join(dir, fmt.Sprintf("%d.%s", i, name))
			if err := os.WriteFile(p, data, 0o644); err != nil {
				t.Fatal(err)
			}
			return "./" + filepath.Base(p)
		}
		goFrag, goModel := "null", "null"
		if o.fragErr == nil {
			goFrag = "import " + write("fragments.nix", o.frag.Nix(v.opts))
		}
		if o.modelErr == nil {
			goModel = "import " + write("model.nix", o.model.Nix(v.opts, v.model))
		}
		fmt.Fprintf(&expr, "  { go = { fragments = %s; model = %s; }; nix = nixSide %s; }\n",
			goFrag, goModel, write("args.json", args))
	}
	expr.WriteString("]\n")
	exprFile := filepath.Join(dir, "all.nix")
	if err := os.WriteFile(exprFile, []byte(expr.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	var results []json.RawMessage
	nixEval(t, exprFile, &results)
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
	{opts: Options{Binary: storeBinary, Patchsets: []string{"/nix/store/5x2h3w4f8l0p0j1d6k9r7q2m3n4b5v6c-extra/extra.hcl"}},
		model: ModelOptions{Name: "store", Image: "vllm/vllm-openai:v0.11.0", ServeArgs: []string{"Qwen/Qwen3-8B"}}},
	{opts: Options{Binary: "/home/me/My Tools/vllm-timings", Mount: "/opt/with space/vt", Patchsets: []string{"/a b/c d.hcl"}},
		model: ModelOptions{Name: "spaces", Image: "img", ServeArgs: []string{"two words", "  lead", "trail  "}, Env: map[string]string{"A": "b c"}}},
	{opts: Options{Binary: `/q/it's "x"/vllm-timings`, OnFailure: "abort", Patchsets: []string{`/q/"dq".hcl`, "/q/o'neil.hcl", `/q/back\slash.hcl`}},
		model: ModelOptions{Name: "quotes", Image: "img", ServeArgs: []string{"it's", `"dq"`, `\`, `\\"`, "''", `'"'"'`}, Docker: "/usr/bin/podman"}},
	{opts: Options{Binary: "/b", Patchsets: []string{"/p/1.hcl", "/q/1.hcl", "/r/s/t.hcl", "/u.hcl"}},
		model: ModelOptions{Name: "many.patchsets", Image: "img"}},
	{opts: Options{Binary: "/b/$HOME/${x y}/`x`/vt"},
		model: ModelOptions{Name: "dollar", Image: "img", ServeArgs: []string{"$HOME", "${HOME}x", "${x:-y}", "$${MODEL_ID}", "\\${MODEL_ID}"}}},
	{opts: Options{Binary: "/opt/ünïcödé/☕/vt"},
		model: ModelOptions{Name: "unicode", Image: "img", ServeArgs: []string{"café", "日本語", "emoji 🎉"}}},
	{opts: Options{Binary: "/b"}, model: ModelOptions{Name: "macros", Image: "vllm/vllm-openai:${tag}",
		Macros:    map[string]string{"tag": "v0.11.0", "ctx": "75000", "model-path": "/models/Qwen3-8B", "x": "if"},
		Env:       map[string]string{"CTX": "${ctx}", "P": "${MODEL_ID}:${PORT}"},
		ServeArgs: []string{"${model-path}", "--max-model-len=${ctx}", "${x}", "it's ${ctx}", "a b${ctx}", "${ctx}${ctx}", `"${ctx}"`}}},
	{opts: Options{Binary: "/b"}, model: ModelOptions{Name: "shellchars", Image: "img",
		ExtraDockerArgs: []string{"--gpus", "all", "--shm-size=16g", "-v", "/models:/models:ro", "#x", "~", "a=b", "{", "}", "!", "[[", "elif", "*"},
		ServeArgs:       []string{";", "|", "&", ">", "<", "(", ")", "`", "#", "{", "~", "*", "?", "[", "=", "!", "time", "]]"}}},
	{opts: Options{Binary: "/b", OnFailure: "abort", Mount: "/vt"}, model: ModelOptions{Name: "json", Image: "img",
		ServeArgs: []string{"--speculative-config", `{"method":"mtp","num_speculative_tokens":3}`, "--override-generation-config", `{"temperature": 0.6, "stop": ["</s>", "\n"]}`}}},
	// Refused by both.
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
	{opts: Options{Binary: "/b"}, model: ModelOptions{Name: "bad", Image: "img", ServeArgs: []string{"${ctx}"}}},
	{opts: Options{Binary: "/b"}, model: ModelOptions{Name: "bad", Image: "img", ServeArgs: []string{"${PID}"}}},
	{opts: Options{Binary: "/b"}, model: ModelOptions{Name: "bad", Image: "img", ServeArgs: []string{"${env.HF_TOKEN}"}}},
	{opts: Options{Binary: "/b"}, model: ModelOptions{Name: "bad", Image: "img", Env: map[string]string{"1X": "y"}}},
	{opts: Options{Binary: "/b"}, model: ModelOptions{Name: "bad", Image: "img", Macros: map[string]string{"PORT": "1"}}},
	{opts: Options{Binary: "/b"}, model: ModelOptions{Name: "bad", Image: "img", Macros: map[string]string{"a.b": "1"}}},
	{opts: Options{Binary: "/b"}, model: ModelOptions{Name: "bad", Image: "img", Macros: map[string]string{"ctx": "two words"}}},
	{opts: Options{Binary: "/b"}, model: ModelOptions{Name: "bad", Image: "img", Macros: map[string]string{"ctx": ""}}},
	{opts: Options{Binary: "/b"}, model: ModelOptions{Name: "bad", Image: "img", Macros: map[string]string{"ctx": "it's"}}},
	{opts: Options{Binary: "/b"}, model: ModelOptions{Name: "bad", Image: "img", ServeArgs: []string{"a\nb"}}},
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
	parityVariants = append(parityVariants, variant{opts: Options{Binary: "/b"},
		model: ModelOptions{Name: "ascii", Image: "img", ServeArgs: args, ExtraDockerArgs: args}})
}
