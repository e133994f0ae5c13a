package patcher

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"

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
}

// Changed reports whether applying the plan writes this file.
func (f *FilePlan) Changed() bool { return !f.Exists || !bytes.Equal(f.Current, f.New) }

// SetPlan is one patch set planned against a snapshot.
type SetPlan struct {
	Set        *spec.PatchSet
	Files      []FilePlan
	Failures   hcl.Diagnostics // why the set does not fit; empty if it does
	Applicable bool            // every file it edits exists
	Kind       Kind            // the kind of the first failure
	Anchors    int             // anchors that matched
}

// Fits reports whether every edit of the set found its place.
func (p *SetPlan) Fits() bool { return p.Applicable && len(p.Failures) == 0 }

// Changes lists the files applying the set would write.
func (p *SetPlan) Changes() []FilePlan {
	var out []FilePlan
	for _, f := range p.Files {
		if f.Changed() {
			out = append(out, f)
		}
	}
	return out
}

func (p *SetPlan) fail(k Kind, d *hcl.Diagnostic) {
	if len(p.Failures) == 0 {
		p.Kind = k
	}
	p.Failures = append(p.Failures, d)
}

// planSet plans one patch set against a snapshot. It never touches the disk.
func planSet(set *spec.PatchSet, snap snapshot) *SetPlan {
	p := &SetPlan{Set: set, Applicable: true}
	for _, f := range set.Files {
		if f.Create == nil && !snap[f.Path].Exists {
			p.Applicable = false
		}
	}
	if !p.Applicable {
		return p
	}
	for _, f := range set.Files {
		st := snap[f.Path]
		fp := FilePlan{Path: f.Path, Create: f.Create != nil, Exists: st.Exists, Current: st.Data, Mode: st.Mode}
		if fp.Mode == 0 {
			fp.Mode = 0o644
		}
		if f.Create != nil {
			fp.New = []byte(withHeader(*f.Create))
			switch {
			case !st.Exists:
				fp.State = Unpatched
			case !owned(st.Data):
				fp.State = Modified
				rng := f.Range
				p.fail(KindModified, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "File exists and is not ours",
					Detail:  fmt.Sprintf("%s exists but was not written by vllm-timings (its first line is not %q). Move it away if it is stale; vllm-timings will not overwrite it.", f.Path, ownedHeader),
					Subject: &rng})
			case bytes.Equal(st.Data, fp.New):
				fp.State = Patched
				fp.Original = nil
			default:
				fp.State = Outdated
			}
			p.Files = append(p.Files, fp)
			continue
		}
		orig, hadMarkers, err := strip(st.Data)
		if err != nil {
			fp.State = Modified
			rng := f.Range
			p.fail(KindModified, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Broken vllm-timings markers",
				Detail:  fmt.Sprintf("%s: %v. Something other than vllm-timings edited this file; reinstall vLLM (or restore the file) and run apply again.", f.Path, err),
				Subject: &rng})
			p.Files = append(p.Files, fp)
			continue
		}
		fp.Original = orig
		src := pysrc.Parse(orig)
		// A file with CRLF line endings gets CRLF inserted lines.
		crlf := usesCRLF(orig)
		var edits []Edit
		for _, e := range f.Edits {
			pt, err := src.Locate(e.Anchor)
			if err != nil {
				var nf *pysrc.NotFoundError
				if e.Optional && errors.As(err, &nf) {
					continue
				}
				p.fail(anchorFailure(set, f.Path, e, err))
				continue
			}
			p.Anchors++
			ins := insertion(set.Name+"/"+e.Name, pt.Indent, e.Code)
			if crlf {
				ins = strings.ReplaceAll(ins, "\n", "\r\n")
			}
			edits = append(edits, Edit{Start: pt.Offset, End: pt.Offset, New: ins})
		}
		for _, q := range f.Requires {
			if _, err := src.Find(q.Anchor); err != nil {
				p.fail(requireFailure(set, f.Path, q, err))
				continue
			}
			p.Anchors++
		}
		fp.Edits = len(edits)
		newData, err := ApplyEdits(orig, edits)
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
		p.Files = append(p.Files, fp)
	}
	return p
}

func requireFailure(set *spec.PatchSet, path string, q spec.Require, err error) (Kind, *hcl.Diagnostic) {
	rng := q.Range
	d := &hcl.Diagnostic{Severity: hcl.DiagError, Subject: &rng}
	var amb *pysrc.AmbiguousError
	if errors.As(err, &amb) {
		d.Summary = "Required statement matches more than once"
		d.Detail = fmt.Sprintf("Require %q of patch set %q, in %s: %v.", q.Name, set.Name, path, err)
		return KindAmbiguous, d
	}
	d.Summary = "Required statement not found"
	d.Detail = fmt.Sprintf("Require %q of patch set %q: in %s there is %v. The set is for vLLMs that have this statement; this one does not, so another set (or your own, --patchset) has to fit it.",
		q.Name, set.Name, path, err)
	return KindMissing, d
}

func anchorFailure(set *spec.PatchSet, path string, e spec.Edit, err error) (Kind, *hcl.Diagnostic) {
	rng := e.Range
	d := &hcl.Diagnostic{Severity: hcl.DiagError, Subject: &rng}
	var amb *pysrc.AmbiguousError
	var nf *pysrc.NotFoundError
	switch {
	case errors.As(err, &amb):
		d.Summary = "Anchor matches more than once"
		d.Detail = fmt.Sprintf("Edit %q of patch set %q, in %s: %v.", e.Name, set.Name, path, err)
		return KindAmbiguous, d
	case errors.As(err, &nf):
		d.Summary = "Anchor not found"
		d.Detail = fmt.Sprintf("Edit %q of patch set %q: in %s there is %v. This vLLM differs from the one the patch set was written for: run \"vllm-timings patchsets\" to see what each set covers, or adapt the anchor and pass your patch set with --patchset.",
			e.Name, set.Name, path, err)
		return KindMissing, d
	default:
		d.Summary = "Anchor cannot be used"
		d.Detail = fmt.Sprintf("Edit %q of patch set %q, in %s: %v.", e.Name, set.Name, path, err)
		return KindMissing, d
	}
}

// Selection is the outcome of choosing a patch set for a tree.
type Selection struct {
	Chosen     *SetPlan   // nil when no set fits
	Why        string     // one line for the user
	Candidates []*SetPlan // every set, in the order they were tried
	// Err is why no set can be chosen although some fit (they disagree);
	// status and revert still work on such a tree.
	Err error
	// Stale are files of other layouts that fit too but that the chosen
	// set does not use: left behind by an upgrade.
	Stale []string
}

// choose plans every set and picks the one to use: the user's sets first,
// then the embedded ones; among sets that fit, identical results are fine
// (the first is used). Embedded sets that fit and differ mean files of
// several vLLM layouts are there (an upgrade left the old ones): the set
// the manifest or the markers name wins, then the one whose files the
// installed wheel's RECORD lists; the others' files are reported stale.
func choose(lib *Library, snap snapshot, m *Manifest, inst *Install) *Selection {
	sel := &Selection{}
	for _, group := range [][]*spec.PatchSet{lib.User, lib.Embedded} {
		var fit []*SetPlan
		for _, s := range group {
			p := planSet(s, snap)
			sel.Candidates = append(sel.Candidates, p)
			if p.Fits() {
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
				sel.Err = errorf(KindDisagree, "your patch sets %q (%s) and %q (%s) both fit this vLLM but would write different files. Pass only one of them with --patchset, or make one's anchors specific to the version it was written for.", fit[0].Set.Name, fit[0].Set.Source, differ[0].Set.Name, differ[0].Set.Source)
				return sel
			}
			chosen, how = chooseLayout(fit, snap, m, inst)
			if chosen == nil {
				var lines []string
				for _, p := range fit {
					lines = append(lines, fmt.Sprintf("  %s: %s", p.Set.Name, strings.Join(editedFiles(p.Set), ", ")))
				}
				sel.Err = errorf(KindLayouts, "this vLLM holds the files of %d layouts, and each fits its own embedded patch set:\n%s\nOne layout is vLLM's; the other's files were left by an upgrade or a copy, and nothing (no vllm-timings markers, no manifest, no *.dist-info/RECORD) tells which. Remove the stale files (the layout your vLLM version does not have; ../shared docs list them), or reinstall vLLM. status and revert still work. Nothing was changed.", len(fit), strings.Join(lines, "\n"))
				return sel
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
						sel.Stale = append(sel.Stale, f)
					}
				}
			}
			sort.Strings(sel.Stale)
		}
		sel.Chosen = chosen
		src := "embedded"
		if !chosen.Set.Embedded {
			src = chosen.Set.Source
		}
		sel.Why = fmt.Sprintf("patch set %q (%s): all %d anchors match", chosen.Set.Name, src, chosen.Anchors)
		if same := len(fit) - 1 - len(differ); same > 0 {
			sel.Why += fmt.Sprintf("; %d other %s with identical results", same, pluralWord(same, "set fits", "sets fit"))
		}
		if how != "" {
			sel.Why += "; " + how + "; stale files of another layout: " + strings.Join(sel.Stale, ", ")
		}
		return sel
	}
	return sel
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
			if st := snap[f.Path]; st.Exists && markerSets(st.Data)[p.Set.Name] {
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

// markerSets returns the names of the sets whose markers are in src.
func markerSets(src []byte) map[string]bool {
	out := map[string]bool{}
	for _, line := range bytes.Split(src, []byte("\n")) {
		t := strings.TrimSpace(string(line))
		if id, ok := strings.CutPrefix(t, markerBegin+" "); ok {
			if set, _, ok := strings.Cut(id, "/"); ok {
				out[set] = true
			}
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

func pluralWord(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
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
func noFitError(lib *Library, inst *Install, sel *Selection) *Error {
	var best *SetPlan
	for _, c := range sel.Candidates {
		if c.Applicable && (best == nil || len(c.Failures) < len(best.Failures)) {
			best = c
		}
	}
	if best == nil {
		var need []string
		for _, c := range sel.Candidates {
			var files []string
			for _, f := range c.Set.Files {
				if f.Create == nil {
					files = append(files, f.Path)
				}
			}
			need = append(need, fmt.Sprintf("  %s needs %s", c.Set.Name, strings.Join(files, ", ")))
		}
		return errorf(KindNotFound, "vLLM %s at %s has a layout no patch set knows:\n%s\nIf this is a new vLLM, write a patch set for it and pass it with --patchset (see \"vllm-timings patchsets\" and \"vllm-timings doctor\").",
			inst.Version, inst.Dir, strings.Join(need, "\n"))
	}
	msg := lib.Render(best.Failures)
	msg += fmt.Sprintf("vllm-timings: no patch set fits vLLM %s at %s; the closest, %q, fails as shown above (%s). Nothing was changed. Run \"vllm-timings doctor\" for the closest lines and a patch set to adapt.",
		inst.Version, inst.Dir, best.Set.Name, plural(len(best.Failures), "problem"))
	return &Error{Kind: best.Kind, Msg: msg}
}

// plural is "1 problem", "2 problems".
func plural(n int, what string) string {
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
