package patcher

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"github.com/vllm-timings/vllm-timings/patcher/codes"
	"github.com/vllm-timings/vllm-timings/patcher/edit"
	"github.com/vllm-timings/vllm-timings/patcher/exit"
	"github.com/vllm-timings/vllm-timings/patcher/pysrc"
	"github.com/vllm-timings/vllm-timings/patcher/spec"
)

// FileState is what status reports for one target file.
type FileState string

const (
	Unpatched FileState = "unpatched" // no vllm-timings changes
	Patched   FileState = "patched"   // exactly what the chosen patch set writes
	Outdated  FileState = "outdated"  // vllm-timings changes, but not the current ones; apply updates them
	Modified  FileState = "modified"  // changed in a way no patch set explains
	Missing   FileState = "missing"   // the file does not exist
	Checked   FileState = "checked"   // the set only checks it (require blocks) and never writes it
)

// FilePlan is the planned content of one file: data, no I/O.
type FilePlan struct {
	Path     string
	Create   bool        // the patch set owns the whole file
	Exists   bool        // the file exists now
	Current  []byte      // its content now
	Original []byte      // its content without vllm-timings changes
	New      []byte      // its content once patched
	Mode     fs.FileMode // permissions to keep
	Edits    int         // insertions planned
	State    FileState

	problem string         // problemNoFile or problemFile, for the whole file
	detail  string         // why, for problemFile
	anchors []anchorResult // one per edit, then one per require
}

// changed reports whether applying the plan writes this file.
func (f *FilePlan) changed() bool {
	return f.State != Missing && (!f.Exists || !bytes.Equal(f.Current, f.New))
}

// Problems an anchor or a file can have, as the doctor reports them.
const (
	problemMissing   = "MISSING"   // the anchor matched nothing
	problemAmbiguous = "AMBIGUOUS" // the anchor matched more than once
	problemUnusable  = "UNUSABLE"  // it matched, but the position does not apply
	problemNoFile    = "NO FILE"   // the file the anchor is in does not exist
	problemFile      = "FILE"      // the file exists but cannot be planned (broken markers, foreign file)
)

// anchorResult is what one edit's or require's anchor found.
type anchorResult struct {
	Name       string
	Require    bool
	Optional   bool      // on_missing = "skip": missing is not a problem
	Anchor     string    // pysrc.Anchor.Describe()
	Declared   hcl.Range // where the .hcl declares it
	Line       int       // the statement it matched (or, for after_imports, where it inserts); 0 if none
	Problem    string    // "" when it matched; one of the problem* constants otherwise
	Detail     string    // the error, for a problem
	Candidates []candidate
	// ScopeMissing: a def or class of the anchor's "in" is not there, so
	// the candidates are defs and classes.
	ScopeMissing bool
}

// candidate is a statement near where an anchor expected one.
type candidate struct {
	Line int    // 1-based line in the target file
	Text string // the statement's first line, without indentation
	In   string // the def/class path that holds it ("" at module level)
}

// record notes a failed Locate or Find.
func (a *anchorResult) record(src *pysrc.File, err error) {
	var nf *pysrc.NotFoundError
	var amb *pysrc.AmbiguousError
	switch {
	case errors.As(err, &nf):
		if a.Optional {
			a.Detail = "not here; skipped (on_missing = \"skip\")"
			return
		}
		a.Problem, a.Detail, a.ScopeMissing = problemMissing, "no "+nf.What, nf.Scope
		for _, st := range nf.Candidates {
			a.Candidates = append(a.Candidates, candidate{Line: st.Line, Text: st.Text, In: src.ScopeOf(st)})
		}
	case errors.As(err, &amb):
		a.Problem, a.Detail = problemAmbiguous, amb.Error()
	default:
		a.Problem, a.Detail = problemUnusable, err.Error()
	}
}

// SetPlan is one patch set planned against a snapshot. Files[i] plans
// Set.Files[i], also for a set that is not applicable, so that the doctor
// can say what every anchor found.
type SetPlan struct {
	Set        *spec.PatchSet
	Files      []FilePlan
	Failures   hcl.Diagnostics // why the set does not fit; empty if it does
	Applicable bool            // every file it edits exists
	Code       exit.Code       // the exit code of the first failure
	Anchors    int             // anchors that matched
}

// fits reports whether every edit of the set found its place.
func (p *SetPlan) fits() bool { return p.Applicable && len(p.Failures) == 0 }

// Changes lists the files applying the set would write.
func (p *SetPlan) Changes() []FilePlan {
	var out []FilePlan
	for _, f := range p.Files {
		if f.changed() {
			out = append(out, f)
		}
	}
	return out
}

// matched counts the anchors without a problem (an optional one that is
// not there included); total counts them all.
func (p *SetPlan) matched() int {
	n := 0
	for _, f := range p.Files {
		for _, a := range f.anchors {
			if a.Problem == "" {
				n++
			}
		}
	}
	return n
}

func (p *SetPlan) total() int {
	n := 0
	for _, f := range p.Files {
		n += len(f.anchors)
	}
	return n
}

// problems counts what keeps the set from fitting: each anchor with a
// problem, and each file with a problem and no anchors.
func (p *SetPlan) problems() int {
	n := 0
	for _, f := range p.Files {
		if f.problem != "" && len(f.anchors) == 0 {
			n++
		}
		for _, a := range f.anchors {
			if a.Problem != "" {
				n++
			}
		}
	}
	return n
}

func (p *SetPlan) fail(code exit.Code, d *hcl.Diagnostic) {
	if len(p.Failures) == 0 {
		p.Code = code
	}
	p.Failures = append(p.Failures, d)
}

// planSet plans one patch set against a snapshot, parsing each target
// through memo. It never touches the disk.
func planSet(set *spec.PatchSet, snap snapshot, memo parseMemo) *SetPlan {
	p := &SetPlan{Set: set, Applicable: true}
	for _, f := range set.Files {
		if f.Create == nil && !snap[f.Path].Exists {
			p.Applicable = false
		}
	}
	for _, f := range set.Files {
		p.Files = append(p.Files, p.planFile(f, snap[f.Path], memo))
	}
	return p
}

// planFile plans one file of the set, recording every anchor's result and
// adding the failures to p.
func (p *SetPlan) planFile(f spec.File, st fileSnapshot, memo parseMemo) FilePlan {
	fp := FilePlan{Path: f.Path, Create: f.Create != nil, Exists: st.Exists, Current: st.Data, Mode: st.Mode}
	if fp.Mode == 0 {
		fp.Mode = 0o644
	}
	if f.Create != nil {
		fp.New = []byte(edit.WithHeader(*f.Create))
		switch {
		case !st.Exists:
			fp.State = Unpatched
		case !edit.Owned(st.Data):
			p.refuseFile(&fp, f, "File exists and is not ours",
				fmt.Sprintf("exists and was not written by vllm-timings (its first line is not %q); move it away if it is stale", edit.OwnedHeader),
				fmt.Sprintf("%s exists but was not written by vllm-timings (its first line is not %q). Move it away if it is stale; vllm-timings will not overwrite it.", f.Path, edit.OwnedHeader))
		case bytes.Equal(st.Data, fp.New):
			fp.State = Patched
			fp.Original = nil
		default:
			fp.State = Outdated
		}
		return fp
	}
	for _, e := range f.Edits {
		fp.anchors = append(fp.anchors, anchorResult{Name: e.Name, Optional: e.Optional, Anchor: e.Anchor.Describe(), Declared: e.Range})
	}
	for _, q := range f.Requires {
		fp.anchors = append(fp.anchors, anchorResult{Name: q.Name, Require: true, Anchor: q.Anchor.Describe(), Declared: q.Range})
	}
	parsed := memo.parse(st.Data)
	orig, hadMarkers, err := parsed.orig, parsed.hadMarkers, parsed.err
	switch {
	case !st.Exists:
		fp.State, fp.problem = Missing, problemNoFile
	case err != nil:
		p.refuseFile(&fp, f, "Broken vllm-timings markers",
			fmt.Sprintf("broken vllm-timings markers: %v", err),
			fmt.Sprintf("%s: %v. Something other than vllm-timings edited this file; reinstall vLLM (or restore the file) and run apply again.", f.Path, err))
	}
	if fp.problem != "" {
		for i := range fp.anchors {
			fp.anchors[i].Problem = fp.problem
		}
		return fp
	}
	fp.Original = orig
	src := parsed.src
	// A file with CRLF line endings gets CRLF inserted lines.
	crlf := usesCRLF(orig)
	var edits []edit.Edit
	for i, e := range f.Edits {
		res := &fp.anchors[i]
		pt, err := src.Locate(e.Anchor)
		if err != nil {
			res.record(src, err)
			var nf *pysrc.NotFoundError
			if !(e.Optional && errors.As(err, &nf)) {
				p.fail(anchorFailure(p.Set, f.Path, e, err))
			}
			continue
		}
		res.Line = pt.Line
		if pt.Stmt >= 0 {
			res.Line = src.Stmts[pt.Stmt].Line
		}
		p.Anchors++
		ins := edit.Insertion(p.Set.Name+"/"+e.Name, pt.Indent, e.Code)
		if crlf {
			ins = strings.ReplaceAll(ins, "\n", "\r\n")
		}
		edits = append(edits, edit.Edit{Start: pt.Offset, End: pt.Offset, New: ins})
	}
	for i, q := range f.Requires {
		res := &fp.anchors[len(f.Edits)+i]
		stmt, err := src.Find(q.Anchor)
		if err != nil {
			res.record(src, err)
			p.fail(requireFailure(p.Set, f.Path, q, err))
			continue
		}
		res.Line = src.Stmts[stmt].Line
		p.Anchors++
	}
	fp.Edits = len(edits)
	newData, err := edit.Apply(orig, edits)
	if err != nil {
		panic(fmt.Sprintf("planning %s: %v", f.Path, err)) // Locate returns line starts within the file
	}
	fp.New = newData
	switch {
	case len(f.Edits) == 0 && !hadMarkers:
		fp.State = Checked
	case bytes.Equal(st.Data, newData):
		fp.State = Patched
	case hadMarkers:
		fp.State = Outdated
	default:
		fp.State = Unpatched
	}
	return fp
}

// parsedTarget is a target file's content with its marked blocks
// removed (edit.Strip) and split into statements.
type parsedTarget struct {
	orig       []byte
	hadMarkers bool
	err        error
	src        *pysrc.File
}

// parseMemo memoizes parseTarget by content for one Session. A run plans
// every set against the same snapshot, and most sets edit the same files:
// each file is then stripped and parsed once per run, not once per set.
// Both are pure functions of the content, and nothing writes to their
// results. A nil memo parses every time.
type parseMemo map[string]*parsedTarget

func (m parseMemo) parse(data []byte) *parsedTarget {
	if p, ok := m[string(data)]; ok {
		return p
	}
	p := &parsedTarget{}
	p.orig, p.hadMarkers, p.err = edit.Strip(data)
	if p.err == nil {
		p.src = pysrc.Parse(p.orig)
	}
	if m != nil {
		m[string(data)] = p
	}
	return p
}

// refuseFile marks a file the set cannot plan at all (a foreign file where
// the set creates one, broken markers): problem is what the doctor shows,
// summary and detail the set's failure.
func (p *SetPlan) refuseFile(fp *FilePlan, f spec.File, summary, problem, detail string) {
	fp.State = Modified
	fp.problem, fp.detail = problemFile, problem
	rng := f.Range
	p.fail(ExitModified, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary, Detail: detail, Subject: &rng})
}

func requireFailure(set *spec.PatchSet, path string, q spec.Require, err error) (exit.Code, *hcl.Diagnostic) {
	rng := q.Range
	d := &hcl.Diagnostic{Severity: hcl.DiagError, Subject: &rng}
	var amb *pysrc.AmbiguousError
	if errors.As(err, &amb) {
		d.Summary = "Required statement matches more than once"
		d.Detail = fmt.Sprintf("Require %q of patch set %q, in %s: %v.", q.Name, set.Name, path, err)
		return ExitAmbiguous, d
	}
	d.Summary = "Required statement not found"
	fact := fmt.Sprintf("Require %q of patch set %q: in %s there is %v.", q.Name, set.Name, path, err)
	d.Detail = fact + " The set is for vLLMs that have this statement; this one does not, so another set (or your own) has to fit it."
	d.Extra = DiagnosticAdvice{Fact: fact, Advice: codes.AdviceRequireMissing}
	return ExitMissing, d
}

func anchorFailure(set *spec.PatchSet, path string, e spec.Edit, err error) (exit.Code, *hcl.Diagnostic) {
	rng := e.Range
	d := &hcl.Diagnostic{Severity: hcl.DiagError, Subject: &rng}
	var amb *pysrc.AmbiguousError
	var nf *pysrc.NotFoundError
	switch {
	case errors.As(err, &amb):
		d.Summary = "Anchor matches more than once"
		d.Detail = fmt.Sprintf("Edit %q of patch set %q, in %s: %v.", e.Name, set.Name, path, err)
		return ExitAmbiguous, d
	case errors.As(err, &nf):
		d.Summary = "Anchor not found"
		fact := fmt.Sprintf("Edit %q of patch set %q: in %s there is %v.", e.Name, set.Name, path, err)
		d.Detail = fact + " This vLLM differs from the one the patch set was written for: use a set written for it, or adapt the anchor."
		d.Extra = DiagnosticAdvice{Fact: fact, Advice: codes.AdviceAnchorMissing}
		return ExitMissing, d
	default:
		d.Summary = "Anchor cannot be used"
		d.Detail = fmt.Sprintf("Edit %q of patch set %q, in %s: %v.", e.Name, set.Name, path, err)
		return ExitMissing, d
	}
}

// Selection is the outcome of choosing a patch set for a tree: one per
// part. The embedded PartChoice is the chat part's (/v1/chat/completions
// and /v1/completions), which must fit: its Chosen (nil when no chat set
// fits), Why and Candidates. Parts are the others, which this vLLM may
// not serve or, as a partial fit, may serve without a set that fits.
type Selection struct {
	*PartChoice
	// Err is why no chat set can be chosen although some fit (they
	// disagree), or why the chosen sets of the parts cannot be applied
	// together; status and revert still work on such a tree.
	Err error
	// Stale are files of other layouts that fit too but that no chosen
	// set uses: left behind by an upgrade (every part's).
	Stale []string
	Parts []*PartChoice
	// merged is Chosen with the files of every other part's chosen set.
	merged *SetPlan
}

// Choices is every part's choice, chat's first.
func (s *Selection) Choices() []*PartChoice {
	return append([]*PartChoice{s.PartChoice}, s.Parts...)
}

// PartChoice is the outcome of choosing a patch set for one part.
type PartChoice struct {
	Part       string
	Chosen     *SetPlan   // nil when none fits or the part is not served
	Why        string     // one line for the user
	Candidates []*SetPlan // the part's sets, in the order they were tried
	Err        error      // as Selection.Err, for this part's sets
	Stale      []string   // as Selection.Stale, for this part's sets
}

// Served reports whether this vLLM serves the part, as far as its sets can
// tell: at least one of them finds every file it edits.
func (c *PartChoice) Served() bool {
	for _, p := range c.Candidates {
		if p.Applicable {
			return true
		}
	}
	return false
}

// Unfit reports whether the part is served but gets no set: none fits,
// or those that fit cannot be told apart (Err).
func (c *PartChoice) Unfit() bool {
	return c.Chosen == nil && (c.Err != nil || c.Served())
}

// Unfit lists the parts this vLLM serves but no set fits: a partial fit.
func (s *Selection) Unfit() []*PartChoice {
	var out []*PartChoice
	for _, c := range s.Parts {
		if c.Unfit() {
			out = append(out, c)
		}
	}
	return out
}

// Plans is the chosen set of every part, chat first: what the manifest
// records.
func (s *Selection) Plans() []*SetPlan {
	if s.Chosen == nil {
		return nil
	}
	out := []*SetPlan{s.Chosen}
	for _, c := range s.Parts {
		if c.Chosen != nil {
			out = append(out, c.Chosen)
		}
	}
	return out
}

// choose plans every set and picks one per part, each part as one set was
// always picked: the user's sets first, then the embedded ones; among
// sets that fit, identical results are fine (the first is used).
// Embedded sets that fit and differ mean files of several vLLM layouts
// are there (an upgrade left the old ones): the set the manifest or the
// markers name wins, then the one whose files the installed wheel's
// RECORD lists; the others' files are reported stale. The chosen sets of
// all parts are applied together, so they must not write one file
// differently.
func choose(lib *Library, snap snapshot, m *Manifest, inst *Install, memo parseMemo) *Selection {
	byPart := map[string][2][]*spec.PatchSet{}
	parts := []string{spec.DefaultPart}
	for i, group := range [][]*spec.PatchSet{lib.User, lib.Embedded} {
		for _, s := range group {
			g, ok := byPart[s.Part]
			if !ok && s.Part != spec.DefaultPart {
				parts = append(parts, s.Part)
			}
			g[i] = append(g[i], s)
			byPart[s.Part] = g
		}
	}
	partOrder(parts)
	sel := &Selection{}
	for _, part := range parts {
		g := byPart[part]
		c := chooseIn(part, g[0], g[1], snap, m, inst, memo)
		if part == spec.DefaultPart {
			sel.PartChoice, sel.Err, sel.Stale = c, c.Err, c.Stale
			continue
		}
		if c.Chosen == nil && c.Err == nil {
			c.Why = unfitWhy(c)
		}
		sel.Parts = append(sel.Parts, c)
	}
	if sel.Chosen == nil || sel.Err != nil {
		return sel
	}
	// Stale: every part's, except files some chosen set uses.
	used := map[string]bool{}
	for _, p := range sel.Plans() {
		for _, f := range p.Set.Files {
			used[f.Path] = true
		}
	}
	var stale []string
	for _, c := range sel.Choices() {
		for _, f := range c.Stale {
			if !used[f] && !slices.Contains(stale, f) {
				stale = append(stale, f)
			}
		}
	}
	sort.Strings(stale)
	sel.Stale = stale
	sel.merged, sel.Err = merge(sel)
	return sel
}

// chooseIn picks the set of one part.
func chooseIn(part string, user, embedded []*spec.PatchSet, snap snapshot, m *Manifest, inst *Install, memo parseMemo) *PartChoice {
	c := &PartChoice{Part: part}
	for _, group := range [][]*spec.PatchSet{user, embedded} {
		var fit []*SetPlan
		for _, s := range group {
			p := planSet(s, snap, memo)
			c.Candidates = append(c.Candidates, p)
			if p.fits() {
				fit = append(fit, p)
			}
		}
		if len(fit) == 0 {
			continue
		}
		var differ []*SetPlan
		for _, other := range fit[1:] {
			if !samePlan(fit[0], other) {
				differ = append(differ, other)
			}
		}
		chosen, how := fit[0], ""
		if len(differ) > 0 {
			if !fit[0].Set.Embedded {
				c.Err = &exit.Error{
					Code:   ExitDisagree,
					Msg:    fmt.Sprintf("your patch sets %q (%s) and %q (%s) both fit this vLLM but would write different files", fit[0].Set.Name, fit[0].Set.Source, differ[0].Set.Name, differ[0].Set.Source),
					Hint:   "Use only one of them, or make one's anchors specific to the version it was written for.",
					Advice: codes.AdviceOneUserSet,
				}
				c.Why = "your patch sets disagree"
				return c
			}
			chosen, how = chooseLayout(fit, snap, m, inst)
			if chosen == nil {
				var lines []string
				for _, p := range fit {
					lines = append(lines, fmt.Sprintf("  %s: %s", p.Set.Name, strings.Join(editedFiles(p.Set), ", ")))
				}
				what := ""
				if part != spec.DefaultPart {
					what = " for " + PartLabel(part)
				}
				c.Err = &exit.Error{
					Code: ExitLayouts,
					Msg: fmt.Sprintf("this vLLM holds the files of %d layouts%s, and each fits its own embedded patch set:\n%s\nOne layout is "+
						"vLLM's; the other's files were left by an upgrade or a copy, and nothing (no vllm-timings markers, no "+
						"manifest, no *.dist-info/RECORD) tells which", len(fit), what, strings.Join(lines, "\n")),
					Hint: "Remove the stale files (the layout your vLLM version does not have; ../shared docs list them), or reinstall vLLM. status and revert still work. Nothing was changed.",
				}
				c.Why = fmt.Sprintf("the files of %d layouts are there, and nothing tells which is installed", len(fit))
				return c
			}
			own := map[string]bool{}
			for _, f := range chosen.Set.Files {
				own[f.Path] = true
			}
			seen := map[string]bool{}
			for _, p := range fit {
				for _, f := range editedFiles(p.Set) {
					if !own[f] && !seen[f] {
						seen[f] = true
						c.Stale = append(c.Stale, f)
					}
				}
			}
			sort.Strings(c.Stale)
		}
		c.Chosen = chosen
		c.Why = fmt.Sprintf("patch set %q (%s): all %d anchors match", chosen.Set.Name, chosen.Set.Origin(), chosen.Anchors)
		if same := len(fit) - 1 - len(differ); same > 0 {
			fits := "fit"
			if same == 1 {
				fits = "fits"
			}
			c.Why += fmt.Sprintf("; %s %s with identical results", Plural(same, "other set"), fits)
		}
		if how != "" {
			c.Why += "; " + how + "; stale files of another layout: " + strings.Join(c.Stale, ", ")
		}
		return c
	}
	return c
}

// closest is the applicable candidate with the fewest failures, or nil.
func closest(candidates []*SetPlan) *SetPlan {
	var best *SetPlan
	for _, c := range candidates {
		if c.Applicable && (best == nil || len(c.Failures) < len(best.Failures)) {
			best = c
		}
	}
	return best
}

func unfitWhy(c *PartChoice) string {
	best := closest(c.Candidates)
	if best == nil {
		return "not served by this vLLM: none of its patch sets finds the files it edits"
	}
	return fmt.Sprintf("no patch set fits; the closest, %q, matches %d of %d anchors", best.Set.Name, best.matched(), best.total())
}

// merge adds the files of every other part's chosen set to the chat set's
// plan. A file two parts both write must come out the same (every set
// creates vllm/_llamacpp_timings.py from the same module).
func merge(sel *Selection) (*SetPlan, error) {
	m := &SetPlan{Set: sel.Chosen.Set, Applicable: true, Anchors: sel.Chosen.Anchors}
	m.Files = append(m.Files, sel.Chosen.Files...)
	owner := map[string]string{}
	for _, f := range m.Files {
		owner[f.Path] = sel.Chosen.Set.Name
	}
	for _, c := range sel.Parts {
		if c.Chosen == nil {
			continue
		}
		m.Anchors += c.Chosen.Anchors
	files:
		for _, f := range c.Chosen.Files {
			if other, ok := owner[f.Path]; ok {
				for _, g := range m.Files {
					if g.Path == f.Path && bytes.Equal(g.New, f.New) {
						continue files
					}
				}
				return nil, &exit.Error{
					Code: ExitDisagree, Msg: fmt.Sprintf("patch sets %q and %q (%s) would write %s differently", other, c.Chosen.Set.Name, PartLabel(c.Part), f.Path),
					Hint: "Sets of different parts must edit different files; move the edits of one part into its own file, or leave out the user's set. Nothing was changed.", Advice: codes.AdviceSeparateParts,
				}
			}
			owner[f.Path] = c.Chosen.Set.Name
			m.Files = append(m.Files, f)
		}
	}
	return m, nil
}

// partialError explains, for apply --all-parts and diff --all-parts, that
// some part this vLLM serves has no set that fits while chat has one.
func partialError(lib *Library, inst *Install, unfit []*PartChoice) *exit.Error {
	e := &PartialError{Install: inst, Files: lib.files()}
	for _, c := range unfit {
		best := closest(c.Candidates)
		e.Parts = append(e.Parts, UnfitPart{Part: c.Part, Closest: best.Set, Diagnostics: best.Failures})
	}
	return &exit.Error{Code: ExitPartial, Msg: e.Error(), Err: e}
}

// chooseLayout picks, among embedded sets that fit and differ, the one the
// tree says is in use.
func chooseLayout(fit []*SetPlan, snap snapshot, m *Manifest, inst *Install) (*SetPlan, string) {
	if m != nil {
		for _, p := range fit {
			for _, ms := range m.Sets {
				if ms.Name == p.Set.Name {
					return p, "chosen by " + ManifestName
				}
			}
		}
	}
	var marked []*SetPlan
	for _, p := range fit {
		for _, f := range p.Set.Files {
			if st := snap[f.Path]; st.Exists && edit.MarkerSets(st.Data)[p.Set.Name] {
				marked = append(marked, p)
				break
			}
		}
	}
	if len(marked) == 1 {
		return marked[0], "chosen by its markers in the files"
	}
	if record := installedRecord(inst); record != nil {
		var listed []*SetPlan
		for _, p := range fit {
			all := true
			for _, f := range editedFiles(p.Set) {
				all = all && record[f]
			}
			if all {
				listed = append(listed, p)
			}
		}
		if len(listed) == 1 {
			return listed[0], "chosen by the installed wheel's RECORD"
		}
	}
	return nil, ""
}

// editedFiles lists the files a set edits (not those it creates).
func editedFiles(set *spec.PatchSet) []string {
	var out []string
	for _, f := range set.Files {
		if f.Create == nil {
			out = append(out, f.Path)
		}
	}
	return out
}

// installedRecord reads the RECORD of the vllm wheel installed beside the
// package (site-packages/vllm-*.dist-info/RECORD): every file the
// installer wrote, so a file not in it was not installed with this vLLM.
func installedRecord(inst *Install) map[string]bool {
	if inst == nil {
		return nil
	}
	matches, _ := filepath.Glob(filepath.Join(inst.Root, "vllm-*.dist-info", "RECORD"))
	if len(matches) != 1 {
		return nil
	}
	b, err := os.ReadFile(matches[0])
	if err != nil {
		return nil
	}
	out := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		if path, _, ok := strings.Cut(line, ","); ok {
			out[path] = true
		}
	}
	return out
}

func samePlan(a, b *SetPlan) bool {
	if len(a.Files) != len(b.Files) {
		return false
	}
	files := map[string][]byte{}
	for _, f := range a.Files {
		files[f.Path] = f.New
	}
	for _, f := range b.Files {
		if n, ok := files[f.Path]; !ok || !bytes.Equal(n, f.New) {
			return false
		}
	}
	return true
}

// noFitError explains why no patch set fits, with the failures of the
// closest applicable set (the one with the fewest failures).
func noFitError(lib *Library, inst *Install, sel *Selection) *exit.Error {
	best := closest(sel.Candidates)
	if best == nil {
		e := &NoFitError{Install: inst}
		for _, c := range sel.Candidates {
			e.Needs = append(e.Needs, SetNeeds{Set: c.Set.Name, Files: editedFiles(c.Set)})
		}
		return &exit.Error{Code: ExitNotFound, Msg: e.Error(), Err: e}
	}
	e := &NoFitError{Install: inst, Closest: best.Set, Diagnostics: best.Failures, Files: lib.files()}
	return &exit.Error{Code: best.Code, Msg: e.Error(), Err: e}
}

// Plural is "1 problem", "2 problems": the one way the patcher and its
// command count things in prose.
func Plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// usesCRLF reports whether src's first line ends in CRLF.
func usesCRLF(src []byte) bool {
	i := bytes.IndexByte(src, '\n')
	return i > 0 && src[i-1] == '\r'
}
