package patcher

import (
	"fmt"
	"path/filepath"
	"slices"

	"github.com/vllm-timings/vllm-timings/patcher/edit"
	"github.com/vllm-timings/vllm-timings/patcher/spec"
	"github.com/vllm-timings/vllm-timings/patcher/write"
)

// FileStatus is one row of Status.
type FileStatus struct {
	Path  string    `json:"path"`
	State FileState `json:"state"`
	Edits int       `json:"edits,omitempty"`
}

// StatusReport is what status prints.
type StatusReport struct {
	VLLMDir  string       `json:"vllm_dir"`
	Version  string       `json:"version"`
	Via      string       `json:"found_via"`
	PatchSet string       `json:"patchset,omitempty"`
	Why      string       `json:"why"`
	State    FileState    `json:"state"`
	Files    []FileStatus `json:"files"`
	// Problem is why apply would refuse the tree (nil if it would not),
	// and Problems its text; a command sets Problems to its own
	// rendering of Problem (diagnostics with their source lines).
	Problem  error  `json:"-"`
	Problems string `json:"problems,omitempty"`
	// Applied lists the sets the manifest records.
	Applied []string `json:"applied,omitempty"`
	// Interrupted describes a run that did not finish ("" if none);
	// InProgress says another run holds the lock now.
	Interrupted string `json:"interrupted,omitempty"`
	InProgress  bool   `json:"in_progress,omitempty"`
	// Leftovers are temporary files of ours; apply and revert remove them.
	Leftovers []string `json:"leftovers,omitempty"`
	// Legacy are files the older patch_timings scripts edited.
	Legacy []string `json:"legacy,omitempty"`
	// Stale are files of another vLLM layout that the chosen set does not
	// use (left from an upgrade).
	Stale []string `json:"stale,omitempty"`
	// Overlay is the overlay looked through, if any.
	Overlay *OverlayView `json:"overlay,omitempty"`
	// Parts are the parts besides chat (PatchSet, Why and Files cover the
	// chosen sets of all parts together).
	Parts []PartStatus `json:"parts,omitempty"`
	// NoFit: no patch set fits chat/completions (nor does the manifest
	// record one); Why says how close the closest comes.
	NoFit bool `json:"no_fit,omitempty"`
	// Sets are the sets in use, chat's first: the chosen ones and those
	// known only from the manifest.
	Sets []SetStatus `json:"sets,omitempty"`
}

// PartState says what a part other than chat is on this vLLM.
type PartState string

const (
	PartFits      PartState = "fits"       // one of its sets is chosen
	PartNotServed PartState = "not served" // none of its sets finds its files
	PartUnfit     PartState = "no fit"     // its files exist, but no set's anchors all match (or several layouts' do)
	// PartRecorded: no set given fits, but the manifest records the set
	// applied (a --patchset not given now); its files are checked
	// against the hashes recorded there.
	PartRecorded PartState = "recorded"
)

// SetStatus is one patch set status reports on: chosen now, or known
// from the manifest alone (Recorded).
type SetStatus struct {
	Name     string    `json:"name"`
	Part     string    `json:"part"`
	Source   string    `json:"source"` // "embedded", or the .hcl file
	State    FileState `json:"state"`  // of the files it writes, as for the whole tree
	Recorded bool      `json:"recorded,omitempty"`
}

// PartStatus is one part of Status.
type PartStatus struct {
	Part      string    `json:"part"`
	Endpoints string    `json:"endpoints"`
	State     PartState `json:"state"`
	PatchSet  string    `json:"patchset,omitempty"`
	Why       string    `json:"why"`
}

// Status reports, per target file, whether it is unpatched, patched,
// outdated or modified, and what else is there: an interrupted run,
// leftovers, the older scripts' edits, stale files. A part none of the
// sets it was given fits, but for which the manifest records a set
// (applied with a --patchset not given now), is reported from that
// record: its files are checked against the hashes the manifest holds.
func (s *Session) Status() *StatusReport {
	r := &StatusReport{VLLMDir: s.Install.Dir, Version: s.Install.Version, Via: s.Install.Via, Legacy: s.legacy, Stale: s.Sel.Stale, Overlay: s.Overlay}
	s.reportRuns(r)
	recorded, recordedParts := s.usableRecords()
	chatRec := recorded[spec.DefaultPart]
	if s.Sel.Err != nil || (s.Sel.Chosen == nil && chatRec == nil) {
		s.reportNoFit(r)
		return r
	}
	b := &statusBuilder{r: r, legacy: s.legacy, seen: map[string]bool{}}
	if c := s.Sel.Chosen; c != nil {
		r.PatchSet, r.Why = c.Set.Name, s.Sel.Why
		b.addPlan(c, spec.DefaultPart)
	} else {
		r.PatchSet = chatRec.ms.Name
		r.Why = b.addRecorded(chatRec)
	}
	reported := map[string]bool{spec.DefaultPart: true}
	for _, c := range s.Sel.Parts {
		reported[c.Part] = true
		ps := PartStatus{Part: c.Part, Endpoints: PartLabel(c.Part), Why: c.Why, State: PartFits}
		rs := recorded[c.Part]
		switch {
		case c.Chosen != nil:
			ps.PatchSet = c.Chosen.Set.Name
			b.addPlan(c.Chosen, c.Part)
		case rs != nil && c.Err == nil:
			ps.State, ps.PatchSet, ps.Why = PartRecorded, rs.ms.Name, b.addRecorded(rs)
		case c.Unfit():
			ps.State = PartUnfit
		default:
			ps.State = PartNotServed
		}
		r.Parts = append(r.Parts, ps)
	}
	// Parts only a recorded set knows (a user's set of its own part).
	for _, part := range recordedParts {
		if !reported[part] {
			rs := recorded[part]
			r.Parts = append(r.Parts, PartStatus{Part: part, Endpoints: PartLabel(part), State: PartRecorded, PatchSet: rs.ms.Name, Why: b.addRecorded(rs)})
		}
	}
	r.State = combinedState(r.Files)
	if len(s.legacy) > 0 {
		r.Problem = s.legacyError("apply")
		r.Problems = r.Problem.Error()
	}
	return r
}

// reportRuns fills in what status says of runs: the sets the manifest
// records, one running now, one that did not finish, the leftovers.
func (s *Session) reportRuns(r *StatusReport) {
	r.InProgress = !s.lock.Held() && write.HeldElsewhere(s.Install.Dir)
	if s.manifest != nil {
		for _, set := range s.manifest.Sets {
			r.Applied = append(r.Applied, set.Name)
		}
		if s.manifest.Interrupted() && !r.InProgress {
			verb := map[string]string{StateApplying: "apply", StateReverting: "revert"}[s.manifest.State]
			r.Interrupted = fmt.Sprintf("an %s did not finish (%s says %q); every file is whole, and the next apply or revert completes it", verb, ManifestName, s.manifest.State)
		}
	}
	for _, p := range s.leftovers {
		rel, err := filepath.Rel(s.Install.Root, p)
		if err != nil {
			rel = p
		}
		r.Leftovers = append(r.Leftovers, filepath.ToSlash(rel))
	}
}

// usableRecords is the recorded set of each part no given set fits (the
// first the manifest lists for it), and those parts in the manifest's
// order.
func (s *Session) usableRecords() (map[string]*recordedSet, []string) {
	recorded := map[string]*recordedSet{}
	var parts []string
	for _, rs := range s.recordedSets() {
		if _, seen := recorded[rs.part]; !seen && rs.usable() {
			recorded[rs.part] = rs
			parts = append(parts, rs.part)
		}
	}
	return recorded, parts
}

// reportNoFit is status when no chat set fits and the manifest records
// none: why, and what is there (marked files are ours, the rest unknown).
//
// The tree is unpatched unless some file holds edits of ours (or of the
// older scripts) that no set explains, or sets that fit disagree; the
// other parts are reported as when chat fits.
func (s *Session) reportNoFit(r *StatusReport) {
	_, err := s.plan(true, false)
	r.NoFit = true
	r.Why = "no patch set fits"
	if s.Sel.Err == nil {
		r.Why = unfitWhy(&PartChoice{Candidates: s.Sel.Candidates})
	}
	r.State = Unpatched
	if s.Sel.Err != nil {
		r.State = Modified
	}
	r.Problem, r.Problems = err, err.Error()
	for _, rel := range s.Library.targets() {
		st := s.snap[rel]
		f := FileStatus{Path: rel, State: Missing}
		if st.Exists {
			f.State = Unpatched
			if _, had, err := edit.Strip(st.Data); err != nil || had || edit.Owned(st.Data) {
				f.State = Modified
				r.State = Modified
			}
		}
		r.Files = append(r.Files, f)
	}
	for _, c := range s.Sel.Parts {
		ps := PartStatus{Part: c.Part, Endpoints: PartLabel(c.Part), Why: c.Why, State: PartFits}
		switch {
		case c.Chosen != nil:
			ps.PatchSet = c.Chosen.Set.Name
		case c.Unfit():
			ps.State = PartUnfit
		default:
			ps.State = PartNotServed
		}
		r.Parts = append(r.Parts, ps)
	}
}

// statusBuilder adds the sets status reports on, and their files, each
// file once.
type statusBuilder struct {
	r      *StatusReport
	legacy []string        // files the older scripts edited: modified, whatever a set says
	seen   map[string]bool // files reported
}

func (b *statusBuilder) addFiles(files []FileStatus) {
	for _, f := range files {
		if b.seen[f.Path] {
			continue // the module, created by every set
		}
		b.seen[f.Path] = true
		if slices.Contains(b.legacy, f.Path) {
			f.State = Modified
		}
		b.r.Files = append(b.r.Files, f)
	}
}

// addPlan reports a chosen set of part.
func (b *statusBuilder) addPlan(p *SetPlan, part string) {
	var files []FileStatus
	for _, f := range p.Files {
		files = append(files, FileStatus{Path: f.Path, State: f.State, Edits: f.Edits})
	}
	b.r.Sets = append(b.r.Sets, SetStatus{Name: p.Set.Name, Part: part, Source: p.Set.Origin(), State: combinedState(files)})
	b.addFiles(files)
}

// addRecorded reports a set known from the manifest alone, and returns
// its status line.
func (b *statusBuilder) addRecorded(rs *recordedSet) string {
	b.r.Sets = append(b.r.Sets, SetStatus{Name: rs.ms.Name, Part: rs.part, Source: rs.ms.Source, State: rs.state, Recorded: true})
	b.addFiles(rs.files)
	return rs.why()
}

// A recorded set is one the manifest says was applied, checked against the
// files as they are now by the hashes recorded there. Status uses it for a
// part none of the sets it was given fits: the set was applied with a
// --patchset that this run was not given, and the manifest is enough to
// tell whether its files are still as it wrote them.
type recordedSet struct {
	ms    ManifestSet
	part  string
	files []FileStatus
	state FileState
}

// recordedSets checks every set the manifest records, in its order.
func (s *Session) recordedSets() []*recordedSet {
	if s.manifest == nil {
		return nil
	}
	var out []*recordedSet
	for _, ms := range s.manifest.Sets {
		r := &recordedSet{ms: ms, part: s.recordedPart(ms)}
		for _, f := range ms.Files {
			r.files = append(r.files, FileStatus{Path: f.Path, State: s.recordedState(f), Edits: f.Edits})
		}
		r.state = combinedState(r.files)
		out = append(out, r)
	}
	return out
}

// recordedState is one recorded file's state: patched when it holds what
// the set wrote, unpatched when nothing of ours is left in it (vLLM was
// reinstalled), modified otherwise.
func (s *Session) recordedState(f ManifestFile) FileState {
	st := s.snap[f.Path]
	switch {
	case !st.Exists:
		return Missing
	case digest(st.Data) == f.SHA256:
		return Patched
	}
	if _, had, err := edit.Strip(st.Data); err == nil && !had && !edit.Owned(st.Data) {
		return Unpatched
	}
	return Modified
}

// recordedPart is the part a recorded set patched: the manifest says so
// (from this version on); for an older manifest, the part of the known set
// of that name, else of the known sets that edit its files, else chat.
func (s *Session) recordedPart(ms ManifestSet) string {
	if ms.Part != "" {
		return ms.Part
	}
	all := s.Library.All()
	for _, set := range all {
		if set.Name == ms.Name {
			return set.Part
		}
	}
	for _, f := range ms.Files {
		if f.Created {
			continue
		}
		for _, set := range all {
			for _, sf := range set.Files {
				if sf.Path == f.Path && sf.Create == nil {
					return set.Part
				}
			}
		}
	}
	return spec.DefaultPart
}

// usable reports whether status should stand on the record: a file the
// set edited still holds its edits, as written or changed since (the
// module it created proves nothing, as every set creates it); for a set
// that only creates files, one of them is still as it wrote it. A set of
// whose edits nothing is left (vLLM reinstalled under the manifest) is
// not used.
func (r *recordedSet) usable() bool {
	edits := false
	for i, f := range r.files {
		if !r.ms.Files[i].Created {
			edits = true
			if f.State == Patched || f.State == Modified {
				return true
			}
		}
	}
	if edits {
		return false
	}
	for _, f := range r.files {
		if f.State == Patched {
			return true
		}
	}
	return false
}

// combinedState is the state of a group of written files: patched when
// all are, unpatched when none holds anything of ours, modified when one
// is, outdated (partly patched, or by another version) otherwise.
func combinedState(files []FileStatus) FileState {
	counts := map[FileState]int{}
	written := 0
	for _, f := range files {
		if f.State == Checked {
			continue
		}
		counts[f.State]++
		written++
	}
	switch {
	case counts[Modified] > 0:
		return Modified
	case counts[Patched] == written:
		return Patched
	case counts[Unpatched]+counts[Missing] == written:
		return Unpatched
	}
	return Outdated
}

// why is the status line of a part reported from the manifest.
func (r *recordedSet) why() string {
	what := "every file as applied"
	if r.state != Patched {
		n := 0
		for _, f := range r.files {
			if f.State != Patched {
				n++
			}
		}
		what = fmt.Sprintf("%s changed since it was applied", Plural(n, "file"))
	}
	return fmt.Sprintf("patch set %q (%s, recorded in vllm/%s): %s", r.ms.Name, r.ms.Source, ManifestName, what)
}
