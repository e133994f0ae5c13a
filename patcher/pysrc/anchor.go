package pysrc

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/agext/levenshtein"
)

// Position says where, relative to the matched statement, text goes.
type Position string

const (
	Before       Position = "before"        // before the statement, at its indentation
	After        Position = "after"         // after the statement (and its block, if it opens one)
	BodyStart    Position = "body_start"    // first line of the statement's block (after a docstring)
	BodyEnd      Position = "body_end"      // after the last line of the statement's block
	AfterImports Position = "after_imports" // after the last module-level import before the first def or class
)

// Positions lists every valid Position, in the order the docs give them.
var Positions = []Position{Before, After, BodyStart, BodyEnd, AfterImports}

// Anchor names a place in a file by its structure.
type Anchor struct {
	Scope string         // dotted def/class path, "" for the whole module
	After string         // optional: only statements after the one starting with this count
	Match string         // the statement's first line starts with this (indentation ignored)
	Regex *regexp.Regexp // alternative to Match, against the same text
	// Contains and Lacks filter the statements Match or Regex select by
	// their whole source (every physical line of the logical line, so the
	// arguments of a call that spans many lines): the statement must
	// contain Contains and must not contain Lacks. Empty means no filter.
	Contains string
	Lacks    string
	At       Position
}

// Describe renders the anchor for messages.
func (a Anchor) Describe() string {
	var b strings.Builder
	switch {
	case a.At == AfterImports:
		b.WriteString("after the module's imports")
	case a.Regex != nil:
		fmt.Fprintf(&b, "%sthe statement matching /%s/", atPrefix(a.At), a.Regex)
	default:
		fmt.Fprintf(&b, "%sthe statement starting %q", atPrefix(a.At), a.Match)
	}
	b.WriteString(a.filterSuffix())
	if a.After != "" {
		fmt.Fprintf(&b, " that follows %q", a.After)
	}
	if a.Scope != "" {
		fmt.Fprintf(&b, " in %s", a.Scope)
	}
	return b.String()
}

// atPrefix is "before " and the like; empty for an anchor that only
// selects a statement (a patch set's require).
func atPrefix(at Position) string {
	if at == "" {
		return ""
	}
	return string(at) + " "
}

func (a Anchor) filterSuffix() string {
	var b strings.Builder
	if a.Contains != "" {
		fmt.Fprintf(&b, " containing %q", a.Contains)
	}
	if a.Lacks != "" {
		if a.Contains != "" {
			b.WriteString(" and")
		}
		fmt.Fprintf(&b, " without %q", a.Lacks)
	}
	return b.String()
}

// Point is a resolved insertion point.
type Point struct {
	Offset int    // byte offset where the text is inserted (always a line start)
	Line   int    // the 1-based line the insertion lands before
	Indent string // indentation for the inserted lines
	Stmt   int    // index of the matched statement, -1 for AfterImports
}

// NotFoundError reports an anchor that matched nothing.
type NotFoundError struct {
	What    string // what was looked for, e.g. `def "chat_completion_full_generator"`
	Nearest *Stmt  // the most similar statement seen, if any (Candidates[0])
	// Candidates are the statements most like the one looked for, best
	// first (at most MaxCandidates), for tools that help write a new anchor.
	Candidates []*Stmt
	// Scope is true when a def or class of the anchor's "in" path is
	// missing, false when the scope was found but no statement in it fits.
	Scope bool
}

// MaxCandidates bounds NotFoundError.Candidates.
const MaxCandidates = 3

func (e *NotFoundError) Error() string {
	msg := "no " + e.What
	if e.Nearest != nil {
		msg += fmt.Sprintf("; nearest is line %d: %s", e.Nearest.Line, e.Nearest.Text)
	}
	return msg
}

// AmbiguousError reports an anchor that matched more than once.
type AmbiguousError struct {
	What  string
	Lines []int
}

func (e *AmbiguousError) Error() string {
	return fmt.Sprintf("%s matches %d statements (lines %s); an anchor must match exactly one: narrow it with a longer match, \"in\" or \"after\"",
		e.What, len(e.Lines), joinInts(e.Lines))
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ", ")
}

// Locate resolves a to an insertion point.
func (f *File) Locate(a Anchor) (Point, error) {
	if a.At == AfterImports {
		if _, _, err := f.scope(a.Scope); err != nil {
			return Point{}, err
		}
		return f.afterImports()
	}
	i, err := f.Find(a)
	if err != nil {
		return Point{}, err
	}
	return f.point(i, a.At)
}

// Find returns the index in Stmts of the one statement a selects (a.At is
// not used).
func (f *File) Find(a Anchor) (int, error) {
	lo, hi, err := f.scope(a.Scope)
	if err != nil {
		return 0, err
	}
	if a.After != "" {
		i, err := f.unique(lo, hi, f.textMatcher(prefixMatcher(a.After)), fmt.Sprintf("statement starting %q%s", a.After, scopeSuffix(a.Scope)), a.After)
		if err != nil {
			return 0, err
		}
		lo = i + 1
	}
	first, what, probe := prefixMatcher(a.Match), fmt.Sprintf("statement starting %q", a.Match), a.Match
	if a.Regex != nil {
		first, what, probe = a.Regex.MatchString, fmt.Sprintf("statement matching /%s/", a.Regex), a.Regex.String()
	}
	m := f.textMatcher(first)
	if a.Contains != "" || a.Lacks != "" {
		what += a.filterSuffix()
		m = func(s *Stmt) bool {
			if !first(s.Text) {
				return false
			}
			src := string(f.Source(s))
			return (a.Contains == "" || strings.Contains(src, a.Contains)) && (a.Lacks == "" || !strings.Contains(src, a.Lacks))
		}
	}
	if a.After != "" {
		what += fmt.Sprintf(" after %q", a.After)
	}
	what += scopeSuffix(a.Scope)
	return f.unique(lo, hi, m, what, probe)
}

func scopeSuffix(scope string) string {
	if scope == "" {
		return ""
	}
	return " in " + scope
}

func prefixMatcher(p string) func(string) bool {
	return func(s string) bool { return strings.HasPrefix(s, p) }
}

func (f *File) textMatcher(m func(string) bool) func(*Stmt) bool {
	return func(s *Stmt) bool { return m(s.Text) }
}

// Source is the whole text of a statement: every physical line of its
// logical line, with indentation and line endings. A compound statement's
// block is not included.
func (f *File) Source(s *Stmt) []byte { return f.Src[s.Start:s.End] }

// scope returns the statement index range [lo, hi) of the body named by a
// dotted path. Each segment names a def or class anywhere below the previous
// one, and must be unique there.
func (f *File) scope(path string) (lo, hi int, err error) {
	lo, hi = 0, len(f.Stmts)
	if path == "" {
		return lo, hi, nil
	}
	for _, name := range strings.Split(path, ".") {
		var hits []int
		for i := lo; i < hi; i++ {
			if f.Stmts[i].Kind != "" && f.Stmts[i].Name == name {
				hits = append(hits, i)
			}
		}
		switch len(hits) {
		case 0:
			var cands []scored
			for i := lo; i < hi; i++ {
				if f.Stmts[i].Kind == "" {
					continue
				}
				cands = append(cands, scored{i, levenshtein.Distance(name, f.Stmts[i].Name, nil)})
			}
			best := f.best(cands, -1)
			err := &NotFoundError{What: fmt.Sprintf("def or class named %q (scope %s)", name, path), Candidates: best, Scope: true}
			if len(best) > 0 {
				err.Nearest = best[0]
			}
			return 0, 0, err
		case 1:
			lo, hi = hits[0]+1, f.Stmts[hits[0]].BlockEnd
		default:
			lines := make([]int, len(hits))
			for k, h := range hits {
				lines[k] = f.Stmts[h].Line
			}
			return 0, 0, &AmbiguousError{What: fmt.Sprintf("scope %q", path), Lines: lines}
		}
	}
	return lo, hi, nil
}

func (f *File) unique(lo, hi int, match func(*Stmt) bool, what, probe string) (int, error) {
	var hits []int
	for i := lo; i < hi; i++ {
		if match(&f.Stmts[i]) {
			hits = append(hits, i)
		}
	}
	switch len(hits) {
	case 1:
		return hits[0], nil
	case 0:
		err := &NotFoundError{What: what, Candidates: f.nearest(lo, hi, probe)}
		if len(err.Candidates) > 0 {
			err.Nearest = err.Candidates[0]
		}
		return 0, err
	}
	lines := make([]int, len(hits))
	for k, h := range hits {
		lines[k] = f.Stmts[h].Line
	}
	return 0, &AmbiguousError{What: what, Lines: lines}
}

// nearest finds the statements in [lo, hi) whose first lines are most like
// probe, comparing probe with a prefix of the same length; best first.
func (f *File) nearest(lo, hi int, probe string) []*Stmt {
	var cands []scored
	for i := lo; i < hi; i++ {
		t := f.Stmts[i].Text
		if len(t) > len(probe) {
			t = t[:len(probe)]
		}
		cands = append(cands, scored{i, levenshtein.Distance(probe, t, nil)})
	}
	// Farther than this is nothing close enough to be a useful hint.
	return f.best(cands, len(probe)*2/3)
}

type scored struct{ stmt, dist int }

// best returns up to MaxCandidates statements with the smallest distance
// (at most limit, unless limit < 0), ties in source order.
func (f *File) best(cands []scored, limit int) []*Stmt {
	sort.SliceStable(cands, func(i, j int) bool { return cands[i].dist < cands[j].dist })
	var out []*Stmt
	for _, c := range cands {
		if len(out) == MaxCandidates || (limit >= 0 && c.dist > limit) {
			break
		}
		out = append(out, &f.Stmts[c.stmt])
	}
	return out
}

func (f *File) point(i int, at Position) (Point, error) {
	s := f.Stmts[i]
	switch at {
	case Before:
		return Point{Offset: s.Start, Line: s.Line, Indent: s.Indent, Stmt: i}, nil
	case After:
		last := f.Stmts[s.BlockEnd-1]
		return f.pointAt(last.End, s.Indent, i)
	case BodyStart, BodyEnd:
		if !s.Compound || s.BlockEnd == i+1 {
			return Point{}, fmt.Errorf("line %d (%s) does not open an indented block, so it has no body for %s", s.Line, s.Text, at)
		}
		body := f.Stmts[i+1]
		if at == BodyEnd {
			return f.pointAt(f.Stmts[s.BlockEnd-1].End, body.Indent, i)
		}
		if s.Kind != "" && isDocstring(body.Text) && s.BlockEnd > i+2 {
			body = f.Stmts[i+2]
		}
		return Point{Offset: body.Start, Line: body.Line, Indent: body.Indent, Stmt: i}, nil
	}
	return Point{}, fmt.Errorf("unknown position %q", at)
}

func (f *File) pointAt(offset int, indent string, stmt int) (Point, error) {
	if offset == len(f.Src) && (len(f.Src) == 0 || f.Src[len(f.Src)-1] != '\n') {
		return Point{}, fmt.Errorf("the anchor is at the end of a file that does not end with a newline; vllm-timings inserts whole lines only")
	}
	return Point{Offset: offset, Line: 1 + strings.Count(string(f.Src[:offset]), "\n"), Indent: indent, Stmt: stmt}, nil
}

func isDocstring(text string) bool {
	t := strings.TrimLeft(text, "rRuUbB")
	return strings.HasPrefix(t, `"`) || strings.HasPrefix(t, `'`)
}

// afterImports finds the last module-level import statement that comes
// before the first module-level def or class.
func (f *File) afterImports() (Point, error) {
	last := -1
	for i, s := range f.Stmts {
		if s.Parent != -1 {
			continue
		}
		if s.Kind != "" {
			break
		}
		if strings.HasPrefix(s.Text, "import ") || strings.HasPrefix(s.Text, "from ") {
			last = i
		}
	}
	if last < 0 {
		return Point{}, &NotFoundError{What: "module-level import statement"}
	}
	p, err := f.pointAt(f.Stmts[last].End, "", -1)
	return p, err
}

// ScopeOf is the dotted path of defs and classes that encloses s (a
// statement of f), "" at module level: where a candidate line lives, in
// the form an anchor's "in" takes.
func (f *File) ScopeOf(s *Stmt) string {
	i := sort.Search(len(f.Stmts), func(i int) bool { return f.Stmts[i].Start >= s.Start })
	if i >= len(f.Stmts) || f.Stmts[i].Start != s.Start {
		return ""
	}
	var names []string
	for p := f.Stmts[i].Parent; p >= 0; p = f.Stmts[p].Parent {
		if f.Stmts[p].Kind != "" {
			names = append([]string{f.Stmts[p].Name}, names...)
		}
	}
	return strings.Join(names, ".")
}
