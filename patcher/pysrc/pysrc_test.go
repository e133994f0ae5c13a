package pysrc

import (
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const sample = `"""Module docstring with a fake statement:
x = Foo(
"""
import os
from typing import (
    Any,
    Final,
)

logger = object()  # a comment with ( an open bracket


class Server:
    """Class doc."""

    async def stream(self, result_generator):
        s = 'it''s' + "a \" quote" + r'\'
        async for res in result_generator:
            # comment before body
            chunk = Response(
                id=1,
                text=")]}",
            )
            if chunk:
                yield chunk
        final = Response(usage=1)
        return final

    def full(self):
        x = 1 + \
            2
        return Response(x=x)
`

func TestParseStatements(t *testing.T) {
	f := Parse([]byte(sample))
	type row struct {
		Line, EndLine int
		Indent        int
		Text          string
		Compound      bool
		Name          string
	}
	var got []row
	for _, s := range f.Stmts {
		got = append(got, row{s.Line, s.EndLine, len(s.Indent), s.Text, s.Compound, s.Name})
	}
	want := []row{
		{1, 3, 0, `"""Module docstring with a fake statement:`, false, ""},
		{4, 4, 0, "import os", false, ""},
		{5, 8, 0, "from typing import (", false, ""},
		{10, 10, 0, "logger = object()  # a comment with ( an open bracket", false, ""},
		{13, 13, 0, "class Server:", true, "Server"},
		{14, 14, 4, `"""Class doc."""`, false, ""},
		{16, 16, 4, "async def stream(self, result_generator):", true, "stream"},
		{17, 17, 8, `s = 'it''s' + "a \" quote" + r'\'`, false, ""},
		{18, 18, 8, "async for res in result_generator:", true, ""},
		{20, 23, 12, "chunk = Response(", false, ""},
		{24, 24, 12, "if chunk:", true, ""},
		{25, 25, 16, "yield chunk", false, ""},
		{26, 26, 8, "final = Response(usage=1)", false, ""},
		{27, 27, 8, "return final", false, ""},
		{29, 29, 4, "def full(self):", true, "full"},
		{30, 31, 8, "x = 1 + \\", false, ""},
		{32, 32, 8, "return Response(x=x)", false, ""},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("statements (-want +got):\n%s", diff)
	}
	if p := f.Stmts[8].Parent; f.Stmts[p].Name != "stream" {
		t.Errorf("parent of async for = %q, want stream", f.Stmts[p].Text)
	}
	if end := f.Stmts[8].BlockEnd; f.Stmts[end-1].Text != "yield chunk" {
		t.Errorf("async for block ends at %q", f.Stmts[end-1].Text)
	}
}

func lineAt(src string, off int) string {
	rest := src[off:]
	if i := strings.IndexByte(rest, '\n'); i >= 0 {
		rest = rest[:i]
	}
	return rest
}

func TestLocate(t *testing.T) {
	f := Parse([]byte(sample))
	tests := []struct {
		name     string
		a        Anchor
		nextLine string // the line the insertion lands before
		indent   int
	}{
		{"before", Anchor{Scope: "stream", Match: "async for res in", At: Before}, "        async for res in result_generator:", 8},
		{"after compound takes whole block", Anchor{Scope: "stream", Match: "async for res in", At: After}, "        final = Response(usage=1)", 8},
		{"body start skips comments", Anchor{Scope: "Server.stream", Match: "async for res in", At: BodyStart}, "            chunk = Response(", 12},
		{"body end", Anchor{Scope: "stream", Match: "async for", At: BodyEnd}, "        final = Response(usage=1)", 12},
		{"after balanced brackets", Anchor{Match: "chunk = Response(", At: After}, "            if chunk:", 12},
		{"after narrows", Anchor{Scope: "stream", After: "async for", Match: "final = Response(", At: After}, "        return final", 8},
		{"class body start skips docstring", Anchor{Match: "class Server", At: BodyStart}, "    async def stream(self, result_generator):", 4},
		{"class body end", Anchor{Match: "class Server", At: BodyEnd}, "", 4},
		{"regex", Anchor{Regex: regexp.MustCompile(`^return Response\(`), At: Before}, "        return Response(x=x)", 8},
		{"after imports", Anchor{At: AfterImports}, "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := f.Locate(tt.a)
			if err != nil {
				t.Fatal(err)
			}
			if got := lineAt(sample, p.Offset); got != tt.nextLine {
				t.Errorf("insertion before %q, want before %q", got, tt.nextLine)
			}
			if len(p.Indent) != tt.indent {
				t.Errorf("indent %d, want %d", len(p.Indent), tt.indent)
			}
			if p.Offset > 0 && sample[p.Offset-1] != '\n' {
				t.Errorf("offset %d is not at a line start", p.Offset)
			}
		})
	}
}

func TestLocateErrors(t *testing.T) {
	f := Parse([]byte(sample))
	var nf *NotFoundError
	_, err := f.Locate(Anchor{Scope: "stream", Match: "chunk = Respons(", At: After})
	if !errors.As(err, &nf) || nf.Nearest == nil || nf.Nearest.Line != 20 {
		t.Errorf("missing anchor: got %v, want NotFoundError nearest line 20", err)
	}
	_, err = f.Locate(Anchor{Scope: "strem", Match: "x", At: After})
	if !errors.As(err, &nf) || nf.Nearest == nil || nf.Nearest.Name != "stream" {
		t.Errorf("missing scope: got %v, want nearest def stream", err)
	}
	var amb *AmbiguousError
	_, err = f.Locate(Anchor{Match: "return ", At: Before})
	if !errors.As(err, &amb) || cmp.Diff([]int{27, 32}, amb.Lines) != "" {
		t.Errorf("doubled anchor: got %v, want AmbiguousError lines 27, 32", err)
	}
	if _, err = f.Locate(Anchor{Match: "final = Response(", At: BodyStart}); err == nil {
		t.Error("body_start of a simple statement: want error")
	}
	noNL := Parse([]byte("import os\nx = 1"))
	if _, err = noNL.Locate(Anchor{Match: "x = 1", At: After}); err == nil {
		t.Error("insert at end of file without newline: want error")
	}
}

// TestContainsLacks: the filters see every physical line of a statement,
// so a call's arguments can tell two versions apart.
func TestContainsLacks(t *testing.T) {
	f := Parse([]byte(sample))
	i, err := f.Find(Anchor{Scope: "stream", Match: "chunk = Response(", Contains: `text=")]}"`})
	if err != nil || f.Stmts[i].Line != 20 {
		t.Errorf("contains: statement %d, err %v; want line 20", i, err)
	}
	var nf *NotFoundError
	_, err = f.Find(Anchor{Scope: "stream", Match: "chunk = Response(", Lacks: "id=1"})
	if !errors.As(err, &nf) || !strings.Contains(err.Error(), `statement starting "chunk = Response(" without "id=1" in stream`) {
		t.Errorf("lacks: got %v", err)
	}
	// Two statements start "return "; only one lacks "x=x".
	i, err = f.Find(Anchor{Match: "return ", Lacks: "x=x"})
	if err != nil || f.Stmts[i].Text != "return final" {
		t.Errorf("lacks narrows: statement %d, err %v", i, err)
	}
	// A compound statement's source is its header only, not its block.
	if _, err := f.Find(Anchor{Match: "async for res", Contains: "yield"}); err == nil {
		t.Error("contains matched text in the block of a compound statement")
	}
	if got := (Anchor{Match: "x", Contains: "a", Lacks: "b", Scope: "S", At: Before}).Describe(); got != `before the statement starting "x" containing "a" and without "b" in S` {
		t.Errorf("describe = %q", got)
	}
	if got := (Anchor{Match: "x", Lacks: "b"}).Describe(); got != `the statement starting "x" without "b"` {
		t.Errorf("describe of a require = %q", got)
	}
}

func TestCandidates(t *testing.T) {
	f := Parse([]byte(sample))
	var nf *NotFoundError
	_, err := f.Find(Anchor{Scope: "stream", Match: "final = Respons(usage"})
	if !errors.As(err, &nf) || nf.Scope {
		t.Fatalf("got %v", err)
	}
	var lines []int
	for _, c := range nf.Candidates {
		lines = append(lines, c.Line)
	}
	if len(lines) == 0 || lines[0] != 26 || len(lines) > MaxCandidates || nf.Nearest != nf.Candidates[0] {
		t.Errorf("candidates at lines %v, want best first (26), at most %d", lines, MaxCandidates)
	}
	if got := f.ScopeOf(nf.Candidates[0]); got != "Server.stream" {
		t.Errorf("scope of the best candidate = %q", got)
	}
	if got := f.ScopeOf(&f.Stmts[0]); got != "" {
		t.Errorf("scope of a module-level statement = %q", got)
	}
	_, err = f.Find(Anchor{Scope: "Server.ful", Match: "x"})
	if !errors.As(err, &nf) || !nf.Scope || nf.Nearest == nil || nf.Nearest.Name != "full" {
		t.Errorf("missing scope: got %v (scope %v)", err, nf != nil && nf.Scope)
	}
}

func FuzzParse(f *testing.F) {
	f.Add(sample)
	f.Add("x = '''\n")
	f.Add("a = (\\\n")
	f.Fuzz(func(t *testing.T, src string) {
		file := Parse([]byte(src))
		prev := 0
		for _, s := range file.Stmts {
			if s.Start < prev || s.End < s.Start || s.End > len(src) {
				t.Fatalf("statement %+v out of order or range", s)
			}
			if s.BlockEnd <= 0 || s.BlockEnd > len(file.Stmts) {
				t.Fatalf("bad BlockEnd %d", s.BlockEnd)
			}
			prev = s.End
		}
	})
}

// BenchmarkParse parses a file about the size of vLLM's chat serving.py
// (sample repeated to ~1800 lines).
func BenchmarkParse(b *testing.B) {
	src := []byte(strings.Repeat(sample, 60))
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		Parse(src)
	}
}
