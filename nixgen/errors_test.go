package nixgen

import (
	"errors"
	"strings"
	"testing"

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
		{"unknown macro", ok, &ModelOptions{Name: "mm", Image: "i", ServeArgs: []string{"--max-model-len", "${ctx}"}}, ExitUnknownMacro, []string{`serve argument 2 "${ctx}"`, "unknown macro ${ctx}", "--macro ctx=VALUE", "$ctx"}},
		{"PID", ok, &ModelOptions{Name: "mm", Image: "i", ExtraDockerArgs: []string{"--label=${PID}"}}, ExitUnknownMacro, []string{"--docker-arg", "only in cmdStop"}},
		{"env ref in word", ok, &ModelOptions{Name: "mm", Image: "i", Env: map[string]string{"T": "${env.HF_TOKEN}"}}, ExitUnknownMacro, []string{`--env "T=${env.HF_TOKEN}"`, "its own environment variable"}},
		{"env name", ok, &ModelOptions{Name: "mm", Image: "i", Env: map[string]string{"1X": "y"}}, ExitName, []string{"invalid variable name"}},
		{"reserved macro", ok, &ModelOptions{Name: "mm", Image: "i", Macros: map[string]string{"MODEL_ID": "x"}}, ExitName, []string{"reserved name MODEL_ID"}},
		{"macro name", ok, &ModelOptions{Name: "mm", Image: "i", Macros: map[string]string{"a.b": "x"}}, ExitName, []string{"invalid macro name"}},
		{"macro value with space", ok, &ModelOptions{Name: "mm", Image: "i", Macros: map[string]string{"a": "x y"}}, ExitMacroValue, []string{`--macro "a=x y"`, "cannot be quoted safely"}},
		{"empty macro value", ok, &ModelOptions{Name: "mm", Image: "i", Macros: map[string]string{"a": ""}}, ExitMacroValue, []string{"empty value"}},
		{"macro value newline", ok, &ModelOptions{Name: "mm", Image: "i", Macros: map[string]string{"a": "x\ny"}}, ExitUnprintable, []string{"newline"}},
		{"newline in serve arg", ok, &ModelOptions{Name: "mm", Image: "i", ServeArgs: []string{"a", "b\nc"}}, ExitUnprintable, []string{"serve argument 2", "newline"}},
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
