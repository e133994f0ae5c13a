package nixgen

import (
	"errors"
	"strings"
	"testing"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"

	"github.com/vllm-timings/vllm-timings/patcher/exit"
)

// TestRefusals checks that each kind of input that cannot be carried through
// the layers is refused with its exit code and a message that names the
// input, the problem and the fix.
func TestRefusals(t *testing.T) {
	ok := Options{Binary: "/b"}
	tests := []struct {
		name  string
		opts  Options
		model *ModelOptions
		code  exit.Code
		want  []string // substrings of the message
	}{
		{"missing binary", Options{}, nil, ExitOption, []string{"--binary", "is missing", "host path"}},
		{"newline in binary", Options{Binary: "/b/x\ny"}, nil, ExitUnprintable, []string{`--binary "/b/x\ny"`, "contains a newline", "remove it"}},
		{"tab in patchset", Options{Binary: "/b", Patchsets: []string{"/p/a\tb.hcl"}}, nil, ExitUnprintable, []string{"--patchset", "non-printable character U+0009 at byte 4", "$'...'"}},
		{"no-break space", Options{Binary: "/b/a\u00a0b"}, nil, ExitUnprintable, []string{"U+00A0"}},
		{"zero-width space", Options{Binary: "/b/a\u200bb"}, nil, ExitUnprintable, []string{"U+200B"}},
		{"invalid UTF-8", Options{Binary: "/b/a\xffb"}, nil, ExitUnprintable, []string{"not valid UTF-8 at byte 4"}},
		{"relative mount", Options{Binary: "/b", Mount: "patches/vt"}, nil, ExitPath, []string{`--mount "patches/vt"`, "not an absolute path", "/path/to/patches/vt"}},
		{"relative binary", Options{Binary: "./vllm-timings"}, nil, ExitPath, []string{"--binary", "not an absolute path", "names a Docker volume"}},
		{"empty mount is the default", Options{Binary: "/b", Mount: ""}, nil, 0, nil},
		{"root mount", Options{Binary: "/b", Mount: "/"}, nil, ExitPath, []string{"root directory"}},
		{"unclean path", Options{Binary: "/b//c/../d/"}, nil, ExitPath, []string{"not a clean path", "Write it as /b/d."}},
		{"colon", Options{Binary: "/b", Patchsets: []string{"/p/a:b.hcl"}}, nil, ExitColon, []string{`contains ":"`, "HOST:CONTAINER:OPTIONS"}},
		{"macro in path", Options{Binary: "/b/${PORT}/x"}, nil, ExitMacroInPath, []string{"contains ${PORT}", "llama-swap would replace it"}},
		{"env macro in mount", Options{Binary: "/b", Mount: "/m/${env.HOME}"}, nil, ExitMacroInPath, []string{"contains ${env.HOME}", "environment variables"}},
		{"non-macro ${ in path is fine", Options{Binary: "/b/${a b}/${x+}"}, nil, 0, nil},
		{"on-failure", Options{Binary: "/b", OnFailure: "ignore"}, nil, ExitOption, []string{`--on-failure "ignore"`, `neither "warn" nor "abort"`}},
		{"missing image", ok, &ModelOptions{Name: "mm"}, ExitOption, []string{"--image", "is missing"}},
		{"model name", ok, &ModelOptions{Name: "qwen/qwen3:8b", Image: "i"}, ExitName, []string{`model name "qwen/qwen3:8b"`, "Docker container name"}},
		{"unknown macro", ok, &ModelOptions{Name: "mm", Image: "i", ServeArgs: Args("--max-model-len", "${ctx}")}, ExitUnknownMacro, []string{`serve argument 2 "${ctx}"`, "unknown macro ${ctx}", "--macro ctx=VALUE", "$ctx"}},
		{"PID", ok, &ModelOptions{Name: "mm", Image: "i", ExtraDockerArgs: []string{"--label=${PID}"}}, ExitUnknownMacro, []string{"--docker-arg", "only in cmdStop"}},
		{"env ref in word", ok, &ModelOptions{Name: "mm", Image: "i", Env: map[string]string{"T": "${env.HF_TOKEN}"}}, ExitUnknownMacro, []string{`--env "T=${env.HF_TOKEN}"`, "its own environment variable"}},
		{"env name", ok, &ModelOptions{Name: "mm", Image: "i", Env: map[string]string{"1X": "y"}}, ExitName, []string{"invalid variable name"}},
		{"reserved macro", ok, &ModelOptions{Name: "mm", Image: "i", Macros: map[string]string{"MODEL_ID": "x"}}, ExitName, []string{"reserved name MODEL_ID"}},
		{"macro name", ok, &ModelOptions{Name: "mm", Image: "i", Macros: map[string]string{"a.b": "x"}}, ExitName, []string{"invalid macro name"}},
		{"macro value with space", ok, &ModelOptions{Name: "mm", Image: "i", Macros: map[string]string{"a": "x y"}}, ExitMacroValue, []string{`--macro "a=x y"`, "cannot be quoted safely"}},
		{"empty macro value", ok, &ModelOptions{Name: "mm", Image: "i", Macros: map[string]string{"a": ""}}, ExitMacroValue, []string{"empty value"}},
		{"macro value newline", ok, &ModelOptions{Name: "mm", Image: "i", Macros: map[string]string{"a": "x\ny"}}, ExitUnprintable, []string{"newline"}},
		{"newline in serve arg", ok, &ModelOptions{Name: "mm", Image: "i", ServeArgs: Args("a", "b\nc")}, ExitUnprintable, []string{"serve argument 2", "newline"}},
		{"NUL in image", ok, &ModelOptions{Name: "mm", Image: "i\x00"}, ExitUnprintable, []string{"--image", "U+0000"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			if tt.model == nil {
				_, err = NewFragments(tt.opts)
			} else {
				_, err = NewModel(tt.opts, *tt.model)
			}
			if tt.code == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var e *exit.Error
			if !errors.As(err, &e) {
				t.Fatalf("got %v, want an *exit.Error", err)
			}
			if e.Code != tt.code {
				t.Errorf("exit code %d, want %d (%v)", e.Code, tt.code, err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("message %q lacks %q", err, w)
				}
			}
		})
	}
}

// TestShQuoteRefusesDollarQuote checks the backstop: syntax.Quote's $'...'
// form never reaches llama-swap.
func TestShQuoteRefusesDollarQuote(t *testing.T) {
	if q, _ := syntax.Quote("a\x01", syntax.LangBash); !strings.HasPrefix(q, "$'") {
		t.Fatalf("syntax.Quote(LangBash) gave %q; this test assumes $'...'", q)
	}
	_, err := shQuote("--binary", "a\x01")
	var e *exit.Error
	if !errors.As(err, &e) || e.Code != ExitUnprintable || !strings.Contains(err.Error(), "$'...'") {
		t.Fatalf("shQuote = %v, want an ExitUnprintable error naming $'...'", err)
	}
}

// TestShellSpecialMatchesQuote keeps shellSpecial, which quoteWord and
// fragments.nix use, equal to the characters that make syntax.Quote quote.
func TestShellSpecialMatchesQuote(t *testing.T) {
	for c := rune(0x20); c < 0x7f; c++ {
		s := "a" + string(c) + "b"
		q, err := syntax.Quote(s, syntax.LangPOSIX)
		if err != nil {
			t.Fatal(err)
		}
		if quoted, listed := q != s, strings.ContainsRune(shellSpecial, c); quoted != listed {
			t.Errorf("%q: syntax.Quote quotes it: %v; listed in shellSpecial: %v", c, quoted, listed)
		}
	}
}

// TestNewRefusals: the refusals issue 12 added, with their codes.
func TestNewRefusals(t *testing.T) {
	ok := Options{Binary: "/b"}
	tests := []struct {
		name  string
		model ModelOptions
		code  exit.Code
		want  []string
	}{
		{"expansion", ModelOptions{Image: "i", ServeArgs: Args("${HOME:-/root}")}, ExitExpansion, []string{`serve argument 1 "${HOME:-/root}"`, "unexpanded", "--raw"}},
		{"variable", ModelOptions{Image: "i", ServeArgs: Args("a", "$HOME/x")}, ExitExpansion, []string{"serve argument 2", `"$HOME"`}},
		{"expansion without shell", ModelOptions{Image: "i", Entrypoint: []string{"x"}, ServeArgs: Args("$HOME")}, ExitExpansion, []string{"No shell runs this command"}},
		{"empty statement", ModelOptions{Image: "i", Before: []string{" "}}, ExitStatement, []string{"before statement 1", "is empty"}},
		{"semicolon", ModelOptions{Image: "i", Before: []string{"a", "b; "}}, ExitStatement, []string{"before statement 2", `ends in ";"`}},
		{"escaped semicolon is fine", ModelOptions{Image: "i", Before: []string{`find . -exec true {} \;`}}, 0, nil},
		{"background", ModelOptions{Image: "i", Before: []string{"sleep 1 &"}}, ExitStatement, []string{`ends in "&"`, "{ sleep 1 & }"}},
		{"unfinished", ModelOptions{Image: "i", Before: []string{"a ||"}}, ExitStatement, []string{"unfinished"}},
		{"comment", ModelOptions{Image: "i", Before: []string{"a;#b"}}, ExitStatement, []string{"holds a comment", `\#`}},
		{"raw comment", ModelOptions{Image: "i", ServeArgs: []Arg{Raw("x #y")}}, ExitStatement, []string{"raw serve argument 1", "holds a comment"}},
		{"hash inside a word is fine", ModelOptions{Image: "i", Before: []string{"echo a#b"}, ServeArgs: []Arg{Raw("a#b")}}, 0, nil},
		{"publish", ModelOptions{Image: "i", Publish: "0.0.0.0:8000:8000"}, ExitPublish, []string{"does not publish ${PORT}"}},
		{"entrypoint and before", ModelOptions{Image: "i", Entrypoint: []string{"x"}, Before: []string{"true"}}, ExitForm, []string{"--before", "--entrypoint"}},
		{"entrypoint and raw", ModelOptions{Image: "i", Entrypoint: []string{"x"}, ServeArgs: []Arg{Raw("$X")}}, ExitForm, []string{"raw serve argument 1", "needs bash"}},
		{"venv and docker", ModelOptions{Venv: "/v", ExtraDockerArgs: []string{"--gpus=all"}, ServeArgs: Args("--port", "${PORT}")}, ExitForm, []string{"--docker-arg", "does not apply with --venv"}},
		{"venv relative", ModelOptions{Venv: "v", ServeArgs: Args("--port", "${PORT}")}, ExitPath, []string{"--venv", "not an absolute path"}},
		{"venv colon is fine", ModelOptions{Venv: "/v:1", ServeArgs: Args("--port", "${PORT}")}, 0, nil},
		{"venv port", ModelOptions{Venv: "/v", ServeArgs: Args("m")}, ExitHostPort, []string{"no serve argument uses ${PORT}"}},
		{"env twice", ModelOptions{Image: "i", Env: map[string]string{"A": "1"}, PassEnv: []string{"A"}}, ExitOption, []string{"given twice"}},
		{"macro inside ${...}", ModelOptions{Image: "i", ExtraDockerArgs: []string{"--x=${${PORT}}"}}, ExitUnknownMacro, []string{"becomes a macro reference like ${0}", "inside ${...}"}},
		{"macro value closing ${", ModelOptions{Image: "i", Macros: map[string]string{"c": "a}"}, ServeArgs: Args("${${c}")}, ExitUnknownMacro, []string{"${a}"}},
		{"pass-through name", ModelOptions{Image: "i", PassEnv: []string{"1A"}}, ExitName, []string{"invalid variable name"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.model.Name = "mm"
			_, err := NewModel(ok, tt.model)
			if tt.code == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var e *exit.Error
			if !errors.As(err, &e) || e.Code != tt.code {
				t.Fatalf("got %v, want exit %d", err, tt.code)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("message %q lacks %q", err, w)
				}
			}
		})
	}
}

// followArgs reads serve arguments as the nix model command line does
// ("--raw TEXT" is one raw argument) from a snippet of shell words that a
// message tells the user to write.
func followArgs(t *testing.T, snippet string) []Arg {
	t.Helper()
	f, err := syntax.NewParser().Parse(strings.NewReader(snippet), "")
	if err != nil || len(f.Stmts) != 1 {
		t.Fatalf("the advice %q is not one line of shell words: %v", snippet, err)
	}
	var words []string
	for _, w := range f.Stmts[0].Cmd.(*syntax.CallExpr).Args {
		s, err := expand.Literal(nil, w)
		if err != nil {
			t.Fatal(err)
		}
		words = append(words, s)
	}
	var args []Arg
	for i := 0; i < len(words); i++ {
		if words[i] == RawFlag {
			i++
			args = append(args, Raw(words[i]))
		} else {
			args = append(args, Arg{Text: words[i]})
		}
	}
	return args
}

// TestAdviceFollowed does what each refusal's message says, and takes the
// result through every layer: the advice must work, and do what it says.
// Each case names the snippet the message must hold; the fixed input is
// built from that snippet (followArgs) where it is command-line text.
func TestAdviceFollowed(t *testing.T) {
	const eager = "${VLLM_ENFORCE_EAGER:+--enforce-eager}"
	bad := func(m ModelOptions) ModelOptions { m.Name = "mm"; return m }
	type advice struct {
		name    string
		bad     ModelOptions
		code    exit.Code
		snippet string                         // the text the message tells the user to write
		fix     func(snippet string) layerCase // the input after following it
	}
	set := []string{"VLLM_ENFORCE_EAGER=1"}
	cases := []advice{
		{
			"expansion: pass it raw", bad(ModelOptions{Image: "img", ServeArgs: Args(eager), PassEnv: []string{"VLLM_ENFORCE_EAGER"}}), ExitExpansion,
			"--raw '" + eager + "'", func(s string) layerCase {
				return layerCase{
					v:       variant{opts: Options{Binary: "/b"}, model: ModelOptions{Image: "img", ServeArgs: followArgs(t, s), PassEnv: []string{"VLLM_ENFORCE_EAGER"}}},
					swapEnv: set, wantServe: []string{"--enforce-eager"},
				}
			},
		},
		{
			"expansion: or quote it inside raw", bad(ModelOptions{Image: "img", ServeArgs: Args(eager)}), ExitExpansion,
			`--raw "'` + `\${VLLM_ENFORCE_EAGER:+--enforce-eager}'"`, func(s string) layerCase {
				return layerCase{
					v:       variant{opts: Options{Binary: "/b"}, model: ModelOptions{Image: "img", ServeArgs: followArgs(t, s)}},
					swapEnv: set, wantServe: []string{eager},
				}
			},
		},
		{
			"unknown macro in a serve argument: raw without braces", bad(ModelOptions{Image: "img", ServeArgs: Args("${HF_HOME}")}), ExitUnknownMacro,
			"--raw '$HF_HOME'", func(s string) layerCase {
				return layerCase{
					v:         variant{opts: Options{Binary: "/b"}, model: ModelOptions{Image: "img", ServeArgs: followArgs(t, s), Env: map[string]string{"HF_HOME": "/models"}}},
					wantServe: []string{"/models"},
				}
			},
		},
		{
			"unknown macro: or declare it", bad(ModelOptions{Image: "img", ServeArgs: Args("${ctx}")}), ExitUnknownMacro,
			"--macro ctx=VALUE", func(string) layerCase {
				return layerCase{v: variant{opts: Options{Binary: "/b"}, model: ModelOptions{Image: "img", ServeArgs: Args("${ctx}"), Macros: map[string]string{"ctx": "4096"}}}}
			},
		},
		{
			"unknown macro in a statement: $NAME", bad(ModelOptions{Image: "img", Before: []string{"pip install ${PKG}"}}), ExitUnknownMacro,
			"$PKG (or ${PKG:-})", func(string) layerCase {
				return layerCase{
					v:          variant{opts: Options{Binary: "/b"}, model: ModelOptions{Image: "img", Before: []string{"pip install $PKG ${PKG:-}"}, Env: map[string]string{"PKG": "xxhash"}}},
					wantBefore: [][]string{{"pip", "install", "xxhash", "xxhash"}},
				}
			},
		},
		{
			"statement ending in ;", bad(ModelOptions{Image: "img", Before: []string{"set -e;"}}), ExitStatement,
			"drop yours: 'set -e'", func(string) layerCase {
				return layerCase{
					v:          variant{opts: Options{Binary: "/b"}, model: ModelOptions{Image: "img", Before: []string{"set -e", "pip install x"}}},
					wantBefore: [][]string{{"pip", "install", "x"}},
				}
			},
		},
		{
			"statement ending in &", bad(ModelOptions{Image: "img", Before: []string{"python3 -c x &"}}), ExitStatement,
			"{ python3 -c x & }", func(s string) layerCase {
				// The background python3 may log before or after the rest;
				// "wait" makes the order fixed.
				return layerCase{
					v:          variant{opts: Options{Binary: "/b"}, model: ModelOptions{Image: "img", Before: []string{s, "wait"}}},
					wantBefore: [][]string{{"python3", "-c", "x"}},
				}
			},
		},
		{
			"comment", bad(ModelOptions{Image: "img", Before: []string{"python3 -c #x"}}), ExitStatement,
			`"\#"`, func(string) layerCase {
				return layerCase{
					v:          variant{opts: Options{Binary: "/b"}, model: ModelOptions{Image: "img", Before: []string{`python3 -c \#x`}}},
					wantBefore: [][]string{{"python3", "-c", "#x"}},
				}
			},
		},
		{
			"publish", bad(ModelOptions{Image: "img", Publish: "8000:8000"}), ExitPublish,
			"--publish '${PORT}:8000'", func(s string) layerCase {
				return layerCase{v: variant{opts: Options{Binary: "/b"}, model: ModelOptions{Image: "img", Publish: followArgs(t, s)[1].Text}}}
			},
		},
		{
			"no shell: write the value", bad(ModelOptions{Image: "img", Entrypoint: []string{"bash", "docker/entrypoint.sh"}, ServeArgs: Args("$MODEL")}), ExitExpansion,
			"write the value itself", func(string) layerCase {
				return layerCase{v: variant{opts: Options{Binary: "/b"}, model: ModelOptions{Image: "img", Entrypoint: []string{"bash", "docker/entrypoint.sh"}, ServeArgs: Args("Qwen/Qwen3-8B")}}}
			},
		},
		{
			"before with entrypoint: drop --entrypoint", bad(ModelOptions{Image: "img", Entrypoint: []string{"bash", "docker/entrypoint.sh"}, Before: []string{"pip install x"}}), ExitForm,
			"drop --entrypoint", func(string) layerCase {
				return layerCase{
					v:          variant{opts: Options{Binary: "/b"}, model: ModelOptions{Image: "img", Before: []string{"pip install x"}}},
					wantBefore: [][]string{{"pip", "install", "x"}},
				}
			},
		},
		{
			"a macro inside ${...}: take it out", bad(ModelOptions{Image: "img", ExtraDockerArgs: []string{"--label=${${MODEL_ID}}"}}), ExitUnknownMacro,
			"do not put a macro inside ${...}", func(string) layerCase {
				return layerCase{v: variant{opts: Options{Binary: "/b"}, model: ModelOptions{Image: "img", ExtraDockerArgs: []string{"--label=${MODEL_ID}"}}}}
			},
		},
		{
			"venv with an image: remove it", bad(ModelOptions{Venv: "/v", Image: "img", ServeArgs: Args("--port", "${PORT}")}), ExitForm,
			"remove --image", func(string) layerCase {
				return layerCase{v: variant{opts: Options{Binary: "/b"}, model: ModelOptions{Venv: "/v", ServeArgs: Args("--port", "${PORT}")}}}
			},
		},
		{
			"venv without ${PORT}", bad(ModelOptions{Venv: "/v", ServeArgs: Args("Qwen/Qwen3-8B")}), ExitHostPort,
			"--host 127.0.0.1 --port '${PORT}'", func(s string) layerCase {
				return layerCase{v: variant{opts: Options{Binary: "/b"}, model: ModelOptions{Venv: "/v", ServeArgs: append(Args("Qwen/Qwen3-8B"), followArgs(t, s)...)}}}
			},
		},
	}
	var fixed []layerCase
	for _, c := range cases {
		_, err := NewModel(Options{Binary: "/b"}, c.bad)
		var e *exit.Error
		if !errors.As(err, &e) || e.Code != c.code {
			t.Errorf("%s: got %v, want exit %d", c.name, err, c.code)
			continue
		}
		if !strings.Contains(err.Error(), c.snippet) {
			t.Errorf("%s: the message does not say %q:\n%v", c.name, c.snippet, err)
			continue
		}
		f := c.fix(c.snippet)
		f.name = c.name
		fixed = append(fixed, f)
	}
	runLayers(t, fixed)
}
