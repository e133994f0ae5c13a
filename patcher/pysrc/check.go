package pysrc

import (
	"fmt"
	"strings"
)

// SyntaxError is a problem Check found, at a 1-based line.
type SyntaxError struct {
	Line int
	Msg  string
}

func (e *SyntaxError) Error() string { return fmt.Sprintf("line %d: %s", e.Line, e.Msg) }

// Check is the scanner's own syntax check, for when no Python is at hand:
// every bracket is closed by its own kind, every string literal ends
// (a one-quoted string on its line, a triple-quoted one anywhere after),
// and no backslash continues the last line. It is far from a parser (it
// does not know the grammar), but it catches what a patch set's code most
// often breaks: an opened bracket or string that swallows the rest of the
// file. It runs in one pass over the source.
func Check(src []byte) *SyntaxError {
	type open struct {
		c    byte
		line int
	}
	var stack []open
	closer := map[byte]byte{')': '(', ']': '[', '}': '{'}
	line := 1
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == '#':
			for i < len(src) && src[i] != '\n' {
				i++
			}
			continue
		case c == '\n':
			line++
		case c == '\\':
			if i+1 < len(src) && src[i+1] == '\n' {
				if strings.TrimSpace(string(src[i+2:])) == "" {
					return &SyntaxError{line, "a backslash continues the last line"}
				}
				line++
				i += 2
				continue
			}
			if i+2 < len(src) && src[i+1] == '\r' && src[i+2] == '\n' {
				line++
				i += 3
				continue
			}
		case c == '(' || c == '[' || c == '{':
			stack = append(stack, open{c, line})
		case c == ')' || c == ']' || c == '}':
			if len(stack) == 0 {
				return &SyntaxError{line, fmt.Sprintf("%q closes nothing", c)}
			}
			top := stack[len(stack)-1]
			if top.c != closer[c] {
				return &SyntaxError{line, fmt.Sprintf("%q closes the %q opened on line %d", c, top.c, top.line)}
			}
			stack = stack[:len(stack)-1]
		case c == '"' || c == '\'':
			end, lines, ok := scanString(src, i)
			if !ok {
				what := "string"
				if end-i >= 3 && src[i+1] == c && src[i+2] == c {
					what = "triple-quoted string"
				}
				return &SyntaxError{line, fmt.Sprintf("the %s opened here never ends", what)}
			}
			line += lines
			i = end
			continue
		}
		i++
	}
	if len(stack) > 0 {
		top := stack[len(stack)-1]
		return &SyntaxError{top.line, fmt.Sprintf("%q is never closed", top.c)}
	}
	return nil
}

// InsideStatement reports, for each of the given 1-based lines, whether it
// lies inside a statement that began on an earlier line: inside brackets,
// a string or a backslash continuation, where a comment there is no
// longer a line of its own.
func (f *File) InsideStatement(lines []int) map[int]bool {
	out := map[int]bool{}
	k := 0
	for _, l := range lines {
		for k < len(f.Stmts) && f.Stmts[k].EndLine < l {
			k++
		}
		if k < len(f.Stmts) && f.Stmts[k].Line < l && l <= f.Stmts[k].EndLine {
			out[l] = true
		}
	}
	return out
}
