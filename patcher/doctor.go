package patcher

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/vllm-timings/vllm-timings/patcher/pysrc"
	"github.com/vllm-timings/vllm-timings/patcher/spec"
)

// Candidate is a statement near where an anchor expected one.
type Candidate struct {
	Line int    // 1-based line in the target file
	Text string // the statement's first line, without indentation
	In   string // the def/class path that holds it ("" at module level)
}

// Problems an anchor or a file can have, as the doctor reports them.
const (
	ProblemMissing   = "MISSING"   // the anchor matched nothing
	ProblemAmbiguous = "AMBIGUOUS" // the anchor matched more than once
	ProblemUnusable  = "UNUSABLE"  // it matched, but the position does not apply
	ProblemNoFile    = "NO FILE"   // the file the anchor is in does not exist
	ProblemFile      = "FILE"      // the file exists but cannot be planned (broken markers, foreign file)
)

// AnchorCheck is the outcome of one edit's or require's anchor.
type AnchorCheck struct {
	Name       string
	Require    bool
	Optional   bool      // on_missing = "skip": missing is not a problem
	Anchor     string    // pysrc.Anchor.Describe()
	Declared   hcl.Range // where the .hcl declares it
	Line       int       // the statement it matched (or, for after_imports, where it inserts); 0 if none
	Problem    string    // "" when it matched; one of the Problem* constants otherwise
	Detail     string    // the error, for a problem
	Candidates []Candidate
	// ScopeMissing: a def or class of the anchor's "in" is not there, so
	// the candidates are defs and classes.
	ScopeMissing bool
}

// FileCheck is one file of a set, checked against the tree.
type FileCheck struct {
	Path      string
	Create    bool
	Exists    bool
	Problem   string   // ProblemNoFile or ProblemFile, for the whole file
	Detail    string   // why, for ProblemFile
	Elsewhere []string // for a missing file: package files that define the classes its anchors name
	Anchors   []AnchorCheck
}

// SetCheck is one patch set checked anchor by anchor.
type SetCheck struct {
	Set     *spec.PatchSet
	Matched int // anchors that matched
	Total   int // anchors in the set
	Files   []FileCheck
}

// Problems counts what keeps the set from fitting.
func (c *SetCheck) Problems() int {
	n := 0
	for _, f := range c.Files {
		if f.Problem != "" && len(f.Anchors) == 0 {
			n++
		}
		for _, a := range f.Anchors {
			if a.Problem != "" {
				n++
			}
		}
	}
	return n
}

// Diagnosis is what the doctor found: every set checked, the one apply
// would use if any, and otherwise the closest ones.
type Diagnosis struct {
	Install *Install
	Sets    []*SetCheck
	Chosen  *SetCheck   // the set apply uses, or nil
	Why     string      // why it was chosen
	Closest []*SetCheck // when none fits: the sets with the fewest problems
}

// Diagnose checks every set's anchors one by one against the session's
// snapshot. It writes nothing.
func (s *Session) Diagnose() *Diagnosis {
	d := &Diagnosis{Install: s.Install}
	for _, set := range s.Library.All() {
		c := s.checkSet(set)
		d.Sets = append(d.Sets, c)
		if s.Sel.Chosen != nil && s.Sel.Chosen.Set == set {
			d.Chosen, d.Why = c, s.Sel.Why
		}
	}
	if d.Chosen != nil {
		return d
	}
	best := -1
	for _, c := range d.Sets {
		switch p := c.Problems(); {
		case best < 0 || p < best:
			best, d.Closest = p, []*SetCheck{c}
		case p == best:
			d.Closest = append(d.Closest, c)
		}
	}
	return d
}

func (s *Session) checkSet(set *spec.PatchSet) *SetCheck {
	c := &SetCheck{Set: set}
	for _, f := range set.Files {
		st := s.snap[f.Path]
		fc := FileCheck{Path: f.Path, Create: f.Create != nil, Exists: st.Exists}
		c.Total += len(f.Edits) + len(f.Requires)
		if f.Create != nil {
			if st.Exists && !owned(st.Data) {
				fc.Problem, fc.Detail = ProblemFile, fmt.Sprintf("exists and was not written by vllm-timings (its first line is not %q); move it away if it is stale", ownedHeader)
			}
			c.Files = append(c.Files, fc)
			continue
		}
		var src *pysrc.File
		switch orig, _, err := strip(st.Data); {
		case !st.Exists:
			fc.Problem = ProblemNoFile
			fc.Elsewhere = s.elsewhere(f)
		case err != nil:
			fc.Problem, fc.Detail = ProblemFile, fmt.Sprintf("broken vllm-timings markers: %v", err)
		default:
			src = pysrc.Parse(orig)
		}
		for _, e := range f.Edits {
			ac := AnchorCheck{Name: e.Name, Optional: e.Optional, Anchor: e.Anchor.Describe(), Declared: e.Range}
			if src != nil {
				pt, err := src.Locate(e.Anchor)
				ac.record(src, err)
				if err == nil {
					ac.Line = pt.Line
					if pt.Stmt >= 0 {
						ac.Line = src.Stmts[pt.Stmt].Line
					}
				}
			} else {
				ac.Problem = fc.Problem
			}
			if ac.Problem == "" {
				c.Matched++
			}
			fc.Anchors = append(fc.Anchors, ac)
		}
		for _, q := range f.Requires {
			ac := AnchorCheck{Name: q.Name, Require: true, Anchor: q.Anchor.Describe(), Declared: q.Range}
			if src != nil {
				i, err := src.Find(q.Anchor)
				ac.record(src, err)
				if err == nil {
					ac.Line = src.Stmts[i].Line
				}
			} else {
				ac.Problem = fc.Problem
			}
			if ac.Problem == "" {
				c.Matched++
			}
			fc.Anchors = append(fc.Anchors, ac)
		}
		c.Files = append(c.Files, fc)
	}
	return c
}

func (a *AnchorCheck) record(src *pysrc.File, err error) {
	if err == nil {
		return
	}
	var nf *pysrc.NotFoundError
	var amb *pysrc.AmbiguousError
	switch {
	case errors.As(err, &nf):
		if a.Optional {
			a.Detail = "not here; skipped (on_missing = \"skip\")"
			return
		}
		a.Problem, a.Detail, a.ScopeMissing = ProblemMissing, "no "+nf.What, nf.Scope
		for _, st := range nf.Candidates {
			a.Candidates = append(a.Candidates, Candidate{Line: st.Line, Text: st.Text, In: src.ScopeOf(st)})
		}
	case errors.As(err, &amb):
		a.Problem, a.Detail = ProblemAmbiguous, amb.Error()
	default:
		a.Problem, a.Detail = ProblemUnusable, err.Error()
	}
}

// elsewhere looks through the package for the classes a missing file's
// anchors name ("in" starts with them), to say where the code moved.
func (s *Session) elsewhere(f spec.File) []string {
	var classes []string
	seen := map[string]bool{}
	for _, e := range f.Edits {
		if name, _, _ := strings.Cut(e.Anchor.Scope, "."); name != "" && !seen[name] {
			seen[name] = true
			classes = append(classes, regexp.QuoteMeta(name))
		}
	}
	for _, q := range f.Requires {
		if name, _, _ := strings.Cut(q.Anchor.Scope, "."); name != "" && !seen[name] {
			seen[name] = true
			classes = append(classes, regexp.QuoteMeta(name))
		}
	}
	if len(classes) == 0 {
		return nil
	}
	re := regexp.MustCompile(`(?m)^class (` + strings.Join(classes, "|") + `)\b`)
	var found []string
	_ = filepath.WalkDir(s.Install.Dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || len(found) >= 5 {
			return filepath.SkipDir
		}
		if d.IsDir() && d.Name() == "__pycache__" {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".py") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err == nil && re.Match(b) {
			rel, _ := filepath.Rel(s.Install.Root, p)
			found = append(found, filepath.ToSlash(rel))
		}
		return nil
	})
	sort.Strings(found)
	return found
}

// WriteReport prints the diagnosis for people: the set apply would use, or
// per anchor of the closest sets what matched, what did not, and the
// closest statements.
func (d *Diagnosis) WriteReport(w io.Writer) {
	fmt.Fprintf(w, "vLLM %s at %s (found via %s)\n\n", d.Install.Version, d.Install.Dir, d.Install.Via)
	if d.Chosen != nil {
		fmt.Fprintf(w, "%s.\nNothing to adapt: \"vllm-timings apply\" uses this set.\n", d.Why)
		return
	}
	names := make([]string, len(d.Closest))
	for i, c := range d.Closest {
		names[i] = fmt.Sprintf("%q (%d of %d anchors match)", c.Set.Name, c.Matched, c.Total)
	}
	fmt.Fprintf(w, "No patch set fits this vLLM. Closest: %s.\n", strings.Join(names, ", "))
	for _, c := range d.Closest {
		fmt.Fprintln(w)
		writeSetCheck(w, c)
	}
	var others []string
	for _, c := range d.Sets {
		if !contains(d.Closest, c) {
			others = append(others, fmt.Sprintf("  %s: %d of %d anchors match", c.Set.Name, c.Matched, c.Total))
		}
	}
	if len(others) > 0 {
		fmt.Fprintf(w, "\nThe other sets are further off:\n%s\n", strings.Join(others, "\n"))
	}
}

func contains(cs []*SetCheck, c *SetCheck) bool {
	for _, x := range cs {
		if x == c {
			return true
		}
	}
	return false
}

func writeSetCheck(w io.Writer, c *SetCheck) {
	fmt.Fprintf(w, "%s (%s)\n", c.Set.Name, c.Set.Source)
	for _, f := range c.Files {
		switch {
		case f.Create && f.Problem != "":
			fmt.Fprintf(w, "  %s: %s\n", f.Path, f.Detail)
			continue
		case f.Create:
			fmt.Fprintf(w, "  %s: created by the set\n", f.Path)
			continue
		case f.Problem == ProblemNoFile:
			fmt.Fprintf(w, "  %s: does not exist in this vLLM", f.Path)
			if len(f.Elsewhere) > 0 {
				fmt.Fprintf(w, "; the classes its anchors name are in %s", strings.Join(f.Elsewhere, ", "))
			}
			fmt.Fprintln(w)
			continue
		case f.Problem == ProblemFile:
			fmt.Fprintf(w, "  %s: %s\n", f.Path, f.Detail)
			continue
		}
		fmt.Fprintf(w, "  %s\n", f.Path)
		for _, a := range f.Anchors {
			kind := "edit"
			if a.Require {
				kind = "require"
			}
			if a.Problem == "" {
				where := fmt.Sprintf("line %d", a.Line)
				if a.Line == 0 {
					where = a.Detail
				}
				fmt.Fprintf(w, "    ok         %s %q: %s\n", kind, a.Name, where)
				continue
			}
			fmt.Fprintf(w, "    %-10s %s %q (%s line %d)\n", a.Problem, kind, a.Name, a.Declared.Filename, a.Declared.Start.Line)
			fmt.Fprintf(w, "               wanted: %s\n", a.Anchor)
			if a.Problem != ProblemMissing || a.ScopeMissing {
				fmt.Fprintf(w, "               found:  %s\n", a.Detail)
			}
			if len(a.Candidates) > 0 {
				fmt.Fprintf(w, "               closest:\n")
				for _, cand := range a.Candidates {
					in := ""
					if cand.In != "" {
						in = "   (in " + cand.In + ")"
					}
					fmt.Fprintf(w, "                 %5d  %s%s\n", cand.Line, cand.Text, in)
				}
			}
		}
	}
}

// Skeleton is a patch set for the user to adapt: the closest set's own HCL
// text, renamed for this vLLM, with a comment above every anchor that did
// not match saying what was wanted and which statements come closest. It
// parses as it is, and fails on this vLLM exactly as the original does
// until the user changes those anchors, so an unread skeleton never
// patches anything.
func (s *Session) Skeleton(c *SetCheck) ([]byte, error) {
	src, ok := s.Library.sources[c.Set.Source]
	if !ok {
		return nil, errorf(KindInternal, "no source for patch set %q", c.Set.Name)
	}
	f, diags := hclsyntax.ParseConfig(src, c.Set.Source, hcl.InitialPos)
	if diags.HasErrors() {
		return nil, errorf(KindInternal, "re-reading %s: %s", c.Set.Source, diags.Error())
	}
	var blk *hclsyntax.Block
	for _, b := range f.Body.(*hclsyntax.Body).Blocks {
		if b.Type == "patchset" && len(b.Labels) == 1 && b.Labels[0] == c.Set.Name {
			blk = b
		}
	}
	if blk == nil {
		return nil, errorf(KindInternal, "patch set %q not found in %s", c.Set.Name, c.Set.Source)
	}
	version := s.Install.Version
	r := &rewriter{src: src}
	r.replace(blk.LabelRanges[0], fmt.Sprintf("%q", skeletonName(version)))
	desc := fmt.Sprintf("adapted from %q for vLLM %s (vllm-timings doctor)", c.Set.Name, version)
	covers := fmt.Sprintf("[%q]", "vllm "+version)
	attrs := blk.Body.Attributes
	if a, ok := attrs["description"]; ok {
		r.replace(a.Expr.Range(), fmt.Sprintf("%q", desc))
	} else {
		r.afterOpen(blk, fmt.Sprintf("description = %q", desc))
	}
	if a, ok := attrs["covers"]; ok {
		r.replace(a.Expr.Range(), covers)
	} else {
		r.afterOpen(blk, "covers = "+covers)
	}
	files := map[string]FileCheck{}
	for _, fc := range c.Files {
		files[fc.Path] = fc
	}
	for _, fb := range blk.Body.Blocks {
		if fb.Type != "file" || len(fb.Labels) != 1 {
			continue
		}
		fc := files[fb.Labels[0]]
		switch fc.Problem {
		case ProblemNoFile:
			note := []string{"vllm-timings doctor: this file does not exist in vLLM " + version + "."}
			if len(fc.Elsewhere) > 0 {
				note = append(note, "The classes its anchors name are now in: "+strings.Join(fc.Elsewhere, ", "), "Change the path above to the one that holds this code, and check every anchor there.")
			} else {
				note = append(note, "Find where this code lives now (grep -rn \"class \" in the vllm package) and change the path above.")
			}
			r.afterOpen(fb, note...)
		case ProblemFile:
			r.afterOpen(fb, "vllm-timings doctor: "+fc.Detail)
		}
		anchors := map[string]AnchorCheck{}
		for _, a := range fc.Anchors {
			anchors[a.Name] = a
		}
		for _, eb := range fb.Body.Blocks {
			if (eb.Type != "edit" && eb.Type != "require") || len(eb.Labels) != 1 {
				continue
			}
			a, ok := anchors[eb.Labels[0]]
			if !ok || a.Problem == "" || a.Problem == ProblemNoFile {
				continue
			}
			note := []string{fmt.Sprintf("vllm-timings doctor: %s in vLLM %s: %s.", a.Problem, version, a.Detail)}
			if len(a.Candidates) > 0 {
				what := "statements"
				if a.ScopeMissing {
					what = "defs and classes"
				}
				note = append(note, "Closest "+what+" (line: text [in]); pick the one this "+map[bool]string{true: "require", false: "edit"}[a.Require]+" belongs at,", "read the code around it, and change in/after/match below to select it:")
				for _, cand := range a.Candidates {
					in := ""
					if cand.In != "" {
						in = "  [in " + cand.In + "]"
					}
					note = append(note, fmt.Sprintf("  %d: %s%s", cand.Line, cand.Text, in))
				}
			}
			r.afterOpen(eb, note...)
		}
	}
	body := r.apply(blk.Range().Start.Byte, blk.Range().End.Byte)
	var b bytes.Buffer
	fmt.Fprintf(&b, `# A patch set to adapt for vLLM %s, written by "vllm-timings doctor"
# from the patch set %q (%s).
#
# Comments that start "vllm-timings doctor:" mark each anchor that does not
# match this vLLM, with the statements that come closest. Change those
# anchors (in, after, match) to select the right statement, read the vLLM
# code around it to be sure the inserted code still fits there (the names
# it uses must exist), then check and use the set:
#
#   vllm-timings apply --dry-run --patchset THIS_FILE
#   vllm-timings apply --patchset THIS_FILE
#
# As written, it fails on this vLLM exactly as the set it comes from
# does, so it patches nothing until it is adapted.
`, version, c.Set.Name, c.Set.Source)
	b.Write(body)
	b.WriteString("\n")
	return b.Bytes(), nil
}

// skeletonName is a valid patch set name for a version string.
func skeletonName(version string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(version) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-' {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	return "my-vllm-" + strings.Trim(b.String(), "-.")
}

// rewriter collects replacements and insertions in an HCL source.
type rewriter struct {
	src   []byte
	edits []srcEdit
}

type srcEdit struct {
	start, end int
	text       string
}

func (r *rewriter) replace(rng hcl.Range, text string) {
	r.edits = append(r.edits, srcEdit{rng.Start.Byte, rng.End.Byte, text})
}

// afterOpen inserts comment lines (or, for an attribute, that line) right
// after the line that opens a block, at the indentation of its body.
func (r *rewriter) afterOpen(b *hclsyntax.Block, lines ...string) {
	at := b.OpenBraceRange.End.Byte
	if i := bytes.IndexByte(r.src[at:], '\n'); i >= 0 {
		at += i + 1
	}
	lineStart := bytes.LastIndexByte(r.src[:b.TypeRange.Start.Byte], '\n') + 1
	indent := string(r.src[lineStart:b.TypeRange.Start.Byte]) + "  "
	var t strings.Builder
	for _, l := range lines {
		if strings.HasPrefix(l, "description =") || strings.HasPrefix(l, "covers =") {
			t.WriteString(indent + l + "\n")
			continue
		}
		t.WriteString(strings.TrimRight(indent+"# "+l, " ") + "\n")
	}
	r.edits = append(r.edits, srcEdit{at, at, t.String()})
}

// apply returns src[from:to] with the edits made.
func (r *rewriter) apply(from, to int) []byte {
	sort.SliceStable(r.edits, func(i, j int) bool { return r.edits[i].start < r.edits[j].start })
	var b bytes.Buffer
	pos := from
	for _, e := range r.edits {
		if e.start < pos || e.end > to {
			continue
		}
		b.Write(r.src[pos:e.start])
		b.WriteString(e.text)
		pos = e.end
	}
	b.Write(r.src[pos:to])
	return b.Bytes()
}
