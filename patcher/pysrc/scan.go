package pysrc

import (
	"bytes"
	"regexp"
	"strings"
)

// Stmt is one logical line of Python source.
type Stmt struct {
	Start, End    int    // byte offsets: start of the first physical line, end after the last one's newline
	Line, EndLine int    // 1-based physical line numbers, inclusive
	Indent        string // leading whitespace of the first line
	Text          string // first physical line without indentation or line ending
	Compound      bool   // opens an indented block (ends in ':')
	Kind          string // "def", "class" or ""
	Name          string // the name defined by a def or class
	Parent        int    // index of the enclosing compound statement, -1 at module level
	BlockEnd      int    // for compound statements: index one past the last statement of the block
}

// File is parsed Python source.
type File struct {
	Src   []byte
	Stmts []Stmt
}

var defRE = regexp.MustCompile(`^(?:async\s+)?(def|class)\s+([A-Za-z_][A-Za-z0-9_]*)`)

// Parse splits src into statements. It never fails: text it cannot make
// sense of (an unterminated string, say) simply ends the last statement at
// the end of the file, and anchors inside it will not match.
func Parse(src []byte) *File {
	// A statement takes at least one line: room for all of them at once
	// saves the copies of a growing slice (Stmt is large).
	f := &File{Src: src, Stmts: make([]Stmt, 0, bytes.Count(src, []byte("\n"))+1)}
	var (
		depth    int  // bracket depth
		inStmt   bool // a logical line has started
		cont     bool // previous physical line ended with a backslash
		lastSig  byte // last significant byte of the current logical line
		cur      Stmt
		line     = 1
		lineHead = 0 // offset of the current physical line
	)
	finish := func(end int) {
		cur.End = end
		cur.EndLine = line
		cur.Compound = lastSig == ':'
		f.Stmts = append(f.Stmts, cur)
		inStmt = false
	}
	i := 0
	for i < len(src) {
		c := src[i]
		if !inStmt {
			// At the start of a physical line outside any statement: skip
			// blank and comment-only lines.
			j := i
			for j < len(src) && (src[j] == ' ' || src[j] == '\t' || src[j] == '\f') {
				j++
			}
			if j >= len(src) {
				break
			}
			if src[j] == '\n' || src[j] == '\r' || src[j] == '#' {
				nl := bytes.IndexByte(src[j:], '\n')
				if nl < 0 {
					break
				}
				i = j + nl + 1
				line++
				lineHead = i
				continue
			}
			inStmt = true
			cur = Stmt{Start: lineHead, Line: line, Indent: string(src[lineHead:j]), Parent: -1}
			eol := bytes.IndexByte(src[j:], '\n')
			if eol < 0 {
				eol = len(src) - j
			}
			cur.Text = strings.TrimRight(string(src[j:j+eol]), "\r")
			// defRE is anchored at "async", "def" or "class": the regexp
			// runs only on lines that start with one.
			if t := cur.Text; strings.HasPrefix(t, "def") || strings.HasPrefix(t, "class") || strings.HasPrefix(t, "async") {
				if m := defRE.FindStringSubmatch(t); m != nil {
					cur.Kind, cur.Name = m[1], m[2]
				}
			}
			lastSig = 0
			cont = false
			i = j
			continue
		}
		switch {
		case c == '#':
			nl := bytes.IndexByte(src[i:], '\n')
			if nl < 0 {
				i = len(src)
				continue
			}
			i += nl
			continue
		case c == '\\' && i+1 < len(src) && (src[i+1] == '\n' || src[i+1] == '\r'):
			cont = true
			i++
			continue
		case c == '\n':
			if depth == 0 && !cont {
				finish(i + 1)
			}
			line++
			lineHead = i + 1
			cont = false
			i++
			continue
		case c == '(' || c == '[' || c == '{':
			depth++
		case c == ')' || c == ']' || c == '}':
			if depth > 0 {
				depth--
			}
		case c == '"' || c == '\'':
			end, lines, _ := scanString(src, i) // unterminated: its newline ends the statement
			line += lines
			if lines > 0 {
				lineHead = bytes.LastIndexByte(src[:end], '\n') + 1
			}
			lastSig = c
			i = end
			continue
		}
		if c != ' ' && c != '\t' && c != '\r' && c != '\f' {
			lastSig = c
		}
		i++
	}
	if inStmt {
		finish(len(src))
	}
	f.link()
	return f
}

// scanString returns the offset just past the string literal that starts
// with the quote at src[i], how many newlines it spans, and whether it
// ends: an unterminated single-quoted literal stops at its newline (which
// then ends the statement), an unterminated triple-quoted one at the end of
// src. String prefixes (r, b, f, u) are ordinary identifier bytes before
// the quote, so they need no handling; a backslash always protects the
// next byte from ending the literal, which holds for raw strings too.
func scanString(src []byte, i int) (end, lines int, ok bool) {
	q := src[i]
	triple := i+2 < len(src) && src[i+1] == q && src[i+2] == q
	j := i + 1
	if triple {
		j = i + 3
	}
	for j < len(src) {
		switch c := src[j]; {
		case c == '\\':
			if j+1 < len(src) && src[j+1] == '\n' {
				lines++
			}
			j += 2
			continue
		case c == '\n':
			if !triple {
				return j, lines, false
			}
			lines++
		case c == q:
			if !triple {
				return j + 1, lines, true
			}
			if j+2 < len(src) && src[j+1] == q && src[j+2] == q {
				return j + 3, lines, true
			}
		}
		j++
	}
	return len(src), lines, false
}

// link fills Parent and BlockEnd from indentation.
func (f *File) link() {
	var stack []int
	for i := range f.Stmts {
		s := &f.Stmts[i]
		for len(stack) > 0 && len(f.Stmts[stack[len(stack)-1]].Indent) >= len(s.Indent) {
			stack = stack[:len(stack)-1]
		}
		if len(stack) > 0 {
			s.Parent = stack[len(stack)-1]
		}
		s.BlockEnd = i + 1
		if s.Compound {
			stack = append(stack, i)
		}
	}
	for i := len(f.Stmts) - 1; i >= 0; i-- {
		s := f.Stmts[i]
		if s.Parent >= 0 && f.Stmts[s.Parent].BlockEnd < f.Stmts[i].BlockEnd {
			f.Stmts[s.Parent].BlockEnd = f.Stmts[i].BlockEnd
		}
	}
}
