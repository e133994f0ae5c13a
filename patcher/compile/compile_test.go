package compile

import (
	"errors"
	"strings"
	"testing"

	"github.com/vllm-timings/vllm-timings/patcher/codes"
	"github.com/vllm-timings/vllm-timings/patcher/exit"
	"github.com/vllm-timings/vllm-timings/patcher/testtree"
)

// TestCompileCheckPython runs the check with python3 on several files in
// one process: each verdict must land on its own file, with its line, and
// errors only compile() finds (past the parser) must be caught.
func TestCompileCheckPython(t *testing.T) {
	py := testtree.RequireTool(t, "python3")
	c := Check{Python: py}
	good := []byte("def f():\n    return 1\n")
	for _, tt := range []struct {
		name  string
		files []Input
		want  []string // substrings of the error; none: it passes
	}{
		{"all good, a new file among them", []Input{
			{Rel: "vllm/a b.py", Old: good, New: []byte("def f():\n    x = 'é'\n    return x\n")},
			{Rel: "vllm/new.py", New: good},
		}, nil},
		{"the second of three fails, at its line", []Input{
			{Rel: "vllm/a.py", Old: good, New: good},
			{Rel: "vllm/b.py", Old: good, New: []byte("def f():\n    return 1\nif (:\n")},
			{Rel: "vllm/c.py", Old: good, New: good},
		}, []string{"vllm/b.py line 3: ", "(python3 compile())"}},
		{"await outside async: the parser takes it, compile() does not", []Input{
			{Rel: "vllm/a.py", Old: good, New: []byte("def f():\n    await g()\n")},
		}, []string{"vllm/a.py line 2: ", "'await' outside async function"}},
		{"return at module level", []Input{
			{Rel: "vllm/a.py", Old: good, New: []byte("x = 1\nreturn x\n")},
		}, []string{"vllm/a.py line 2: ", "'return' outside function"}},
		{"old and new both fail: this python cannot judge, the scanner does, and the old content fails it too", []Input{
			{Rel: "vllm/a.py", Old: []byte("match x:\n  case 1 if (: pass\n"), New: []byte("match x:\n  case 1 if (: pass\ny = 2\n")},
		}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := c.Run(tt.files)
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("got %v, want no error", err)
				}
				return
			}
			var e *exit.Error
			if !errors.As(err, &e) || e.Code != codes.Compile {
				t.Fatalf("got %v, want exit %d", err, codes.Compile)
			}
			for _, w := range tt.want {
				if !strings.Contains(e.Error(), w) {
					t.Errorf("error lacks %q:\n%s", w, e)
				}
			}
		})
	}
}

// TestParseCompileOutput: an output that is cut short or garbled is not
// taken as a verdict (the scanner decides instead).
func TestParseCompileOutput(t *testing.T) {
	files := []Input{{Rel: "vllm/a.py"}, {Rel: "vllm/b.py"}}
	m, ok := parseCompileOutput("N 1 7 invalid syntax here\nO 1 0 \ndone 2\n", files)
	if !ok || m["vllm/a.py"].New != nil || m["vllm/b.py"].New == nil || m["vllm/b.py"].New.Line != 7 ||
		m["vllm/b.py"].New.Msg != "invalid syntax here" || m["vllm/b.py"].Old == nil {
		t.Fatalf("got %+v, %v", m, ok)
	}
	for _, out := range []string{"", "N 1 7 x\n", "done 1\n", "N 2 1 x\ndone 2\n", "X 0 1 x\ndone 2\n", "N a 1 x\ndone 2\n"} {
		if _, ok := parseCompileOutput(out, files); ok {
			t.Errorf("%q taken as a complete verdict", out)
		}
	}
}
