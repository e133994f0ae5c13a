package patcher

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	udiff "github.com/aymanbagabas/go-udiff"

	"github.com/vllm-timings/vllm-timings/patcher/exit"
	"github.com/vllm-timings/vllm-timings/patcher/spec"
)

// Options are what every command that touches vLLM shares.
type Options struct {
	Find      FindOptions
	PatchSets []string // user patch set files, tried before the embedded ones
	// Lock takes the tree's lock (vllm/.vllm-timings.lock) before reading
	// it; commands that may write set it. Apply and Revert take it
	// themselves (and read the tree again) when it was not taken.
	Lock     bool
	LockWait time.Duration // how long to wait for another run; 0 means DefaultLockWait
	// TakeOver lets Apply and Revert remove the edits of the older
	// patch_timings scripts; without it, a tree holding them is refused.
	TakeOver bool
	// Python compiles the patched files before they are written: "" is
	// python3 from PATH, "-" only the project's scanner.
	Python string
	// A part other than chat that this vLLM serves but no set fits is
	// left without timings while Plan, and so Apply, Diff and
	// ApplyOverlay, go ahead with the parts that fit; the commands warn
	// and name it. AllParts (apply --all-parts) makes it an ExitPartial
	// error instead, with nothing written. Partial (apply --on-failure
	// warn) also skips a part whose sets disagree or whose layouts
	// cannot be told apart (8, 35), which is that error without it. A
	// chat part that does not fit is an error either way.
	AllParts bool
	Partial  bool
	// Overlay, if set, is an overlay directory (apply --overlay) to look
	// through: the session sees each module as Python will with the
	// overlay on PYTHONPATH. Only for status; apply and revert with an
	// overlay open the tree itself and call ApplyOverlay, RevertOverlay.
	Overlay string
}

// Session is one look at an installed vLLM: where it is, which patch sets
// exist, what its target files hold, and which set fits. Opening a session
// reads files; everything after that is planning on that snapshot until
// Apply or Revert writes.
type Session struct {
	Install *Install
	Library *Library
	Sel     *Selection
	// Warnings are things the user should know that stopped nothing
	// (a --patchset that fits nothing, bytecode that could not be
	// removed, leftovers removed). Commands print them.
	Warnings []string
	Overlay  *OverlayView // the overlay looked through (Options.Overlay), or nil

	opts      Options
	snap      snapshot // the files as they are
	clean     snapshot // the same without the old scripts' edits
	legacy    []string // files holding the old scripts' edits
	legacyErr error    // why they cannot be removed exactly, if so
	manifest  *Manifest
	rawMan    []byte // the manifest's bytes, nil if none
	leftovers []string
	lock      *treeLock
}

// Open finds vLLM, loads the patch sets, takes the lock if asked, reads
// every file they (and the manifest, and the older scripts) target and
// chooses the set that fits.
func Open(o Options) (*Session, error) {
	lib, err := LoadLibrary(o.PatchSets)
	if err != nil {
		return nil, err
	}
	inst, err := find(o.Find)
	if err != nil {
		return nil, err
	}
	s := &Session{Install: inst, Library: lib, opts: o}
	if o.Lock {
		if s.lock, err = lockTree(inst.Dir, o.lockWait()); err != nil {
			return nil, err
		}
	}
	if err := s.read(); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func (o Options) lockWait() time.Duration {
	if o.LockWait <= 0 {
		return DefaultLockWait
	}
	return o.LockWait
}

// read takes the snapshot and chooses.
func (s *Session) read() error {
	m, err := readManifest(s.Install.Dir)
	if err != nil {
		return err
	}
	s.manifest = m
	s.rawMan = nil
	if m != nil {
		s.rawMan, _ = os.ReadFile(manifestPath(s.Install.Dir))
	}
	snap, err := readSnapshot(s.Install, s.files())
	if err != nil {
		return err
	}
	if s.opts.Overlay != "" {
		snap, s.Overlay = viewThroughOverlay(s.Install, snap, s.opts.Overlay)
	}
	s.snap, s.clean, s.legacy, s.legacyErr = snap, snapshot{}, nil, nil
	for rel, st := range snap {
		s.clean[rel] = st
		if st.Exists && hasLegacy(st.Data) {
			s.legacy = append(s.legacy, rel)
			out, _, err := removeLegacy(st.Data)
			if err != nil {
				s.legacyErr = fmt.Errorf("%s: %v", rel, err)
				continue
			}
			st.Data = out
			s.clean[rel] = st
		}
	}
	sort.Strings(s.legacy)
	s.leftovers = findLeftovers(s.Install, s.files())
	sel := choose(s.Library, s.clean, s.manifest, s.Install)
	s.Sel = sel
	s.Warnings = nil
	// Per part: the user's sets of a part whose chosen set is embedded
	// fit nothing.
	chosen := map[string]*SetPlan{spec.DefaultPart: sel.Chosen}
	for _, c := range sel.Parts {
		chosen[c.Part] = c.Chosen
	}
	for _, part := range append([]string{spec.DefaultPart}, partsOf(sel)...) {
		c := chosen[part]
		if c == nil || !c.Set.Embedded {
			continue
		}
		var names []string
		for _, u := range s.Library.User {
			if u.Part == part {
				names = append(names, fmt.Sprintf("%q (%s)", u.Name, u.Source))
			}
		}
		if len(names) > 0 {
			s.Warnings = append(s.Warnings, fmt.Sprintf("your patch set %s fits nothing in this vLLM; the embedded %q is used instead. Run \"vllm-timings doctor --patchset ...\" to see why yours does not fit.", strings.Join(names, ", "), c.Set.Name))
		}
	}
	return nil
}

// files is every file a run looks at: the sets' targets, the manifest's
// files and the old scripts' files.
func (s *Session) files() []string {
	return mergeSorted(s.Library.targets(), s.manifest.paths(), legacyFiles)
}

// Close releases the lock. When no manifest remains (the tree holds
// nothing of ours) the lock file goes too.
func (s *Session) Close() {
	if s == nil || !s.lock.held() {
		return
	}
	_, err := os.Stat(manifestPath(s.Install.Dir))
	s.lock.release(errors.Is(err, fs.ErrNotExist))
}

// ensureLocked takes the lock for a session opened without it, and reads
// the tree again under it. The returned func releases a lock taken here.
func (s *Session) ensureLocked() (func(), error) {
	if s.lock != nil {
		return func() {}, nil
	}
	l, err := lockTree(s.Install.Dir, s.opts.lockWait())
	if err != nil {
		return nil, err
	}
	s.lock = l
	release := func() {
		s.Close()
		s.lock = nil
	}
	if err := s.read(); err != nil {
		release()
		return nil, err
	}
	return release, nil
}

func partsOf(sel *Selection) []string {
	var out []string
	for _, c := range sel.Parts {
		out = append(out, c.Part)
	}
	return out
}

// Plan returns what apply writes: the chat set's plan with the files of
// every other part's chosen set, or an error that explains why no chat
// set fits, or (Options.AllParts) which served part fits none, or
// (without Options.Partial) which part's sets cannot be told apart.
func (s *Session) Plan() (*SetPlan, error) {
	return s.plan(s.opts.Partial, s.opts.AllParts)
}

// plan is Plan; skipAll skips every part that cannot be applied,
// allParts refuses a part that fits no set.
func (s *Session) plan(skipAll, allParts bool) (*SetPlan, error) {
	if s.Sel.Err != nil {
		return nil, s.Sel.Err
	}
	if s.Sel.Chosen == nil {
		return nil, noFitError(s.Library, s.Install, s.Sel)
	}
	unfit := s.Sel.Unfit()
	if !skipAll {
		// A part whose sets disagree or whose layouts cannot be told
		// apart says so with its own code (8, 35).
		for _, c := range unfit {
			if c.Err != nil {
				return nil, c.Err
			}
		}
	}
	if len(unfit) > 0 && allParts {
		return nil, partialError(s.Library, s.Install, unfit)
	}
	return s.Sel.merged, nil
}

// legacyError refuses a tree the older scripts edited, unless --take-over.
func (s *Session) legacyError(verb string) error {
	if len(s.legacy) == 0 {
		return nil
	}
	if s.legacyErr != nil {
		return &exit.Error{Code: ExitLegacy, Msg: fmt.Sprintf("the older patch_timings scripts edited %s (lines marked %q), and vllm-timings cannot undo them exactly: %v", strings.Join(s.legacy, ", "), legacyTag, s.legacyErr), Hint: fmt.Sprintf("Reinstall vLLM (or restore these files from its wheel), then run %s again. Nothing was changed.", verb), Err: s.legacyErr}
	}
	if s.opts.TakeOver {
		return nil
	}
	return &exit.Error{Code: ExitLegacy, Msg: fmt.Sprintf("the older patch_timings scripts edited %s (lines marked %q)", strings.Join(s.legacy, ", "), legacyTag),
		Hint: fmt.Sprintf("Patching beside them would run both, and theirs would overwrite these timings. Run \"vllm-timings %s --take-over\": it removes their edits exactly (giving vLLM's own files back) and then %s. Stop running the old script before vllm serve. Nothing was changed.", verb, map[string]string{"apply": "applies", "revert": "reverts"}[verb])}
}

// Apply writes the plan: all files or none. It returns one line per file
// written; none when the tree is already patched. With TakeOver it also
// removes the older scripts' edits; any file of ours the chosen set does
// not write (another set's, an interrupted run's) is reverted in the same
// step.
func (s *Session) Apply() ([]string, error) {
	if s.Overlay != nil {
		return nil, errorf(exit.Internal, "Apply on a session that looks through an overlay")
	}
	release, err := s.ensureLocked()
	if err != nil {
		return nil, err
	}
	defer release()
	if err := s.legacyError("apply"); err != nil {
		return nil, err
	}
	p, err := s.Plan()
	if err != nil {
		return nil, err
	}
	planned := map[string]bool{}
	var creates, edits, removals []change
	for _, f := range p.Files {
		planned[f.Path] = true
		raw := s.snap[f.Path]
		if !f.changed() && bytes.Equal(raw.Data, s.clean[f.Path].Data) {
			continue
		}
		c := s.change(f.Path, f.New, f.Mode)
		if c.Exists {
			edits = append(edits, c)
		} else {
			creates = append(creates, c)
		}
	}
	others, err := s.revertChanges(planned)
	if err != nil {
		return nil, err
	}
	for _, c := range others {
		if c.New == nil {
			removals = append(removals, c)
		} else {
			edits = append(edits, c)
		}
	}
	// Files only the old scripts touched (their protocol.py edits).
	var legacyOnly []change
	for _, rel := range s.legacy {
		if !planned[rel] && !hasChange(others, rel) {
			legacyOnly = append(legacyOnly, s.change(rel, s.clean[rel].Data, s.snap[rel].Mode))
		}
	}
	changes := append(append(append(creates, edits...), legacyOnly...), removals...)
	if err := s.checkCompiles(changes); err != nil {
		return nil, err
	}
	if err := s.write(changes, manifestFor(s.Sel.Plans()), StateApplying); err != nil {
		return nil, err
	}
	out := describe(changes, false)
	for i, c := range changes {
		if c.Legacy && !planned[c.Rel] {
			out[i] = describeChange(c, true)
		}
	}
	return out, nil
}

func hasChange(cs []change, rel string) bool {
	for _, c := range cs {
		if c.Rel == rel {
			return true
		}
	}
	return false
}

// change is the write of rel with content (nil removes it).
func (s *Session) change(rel string, content []byte, mode fs.FileMode) change {
	st := s.snap[rel]
	c := change{Rel: rel, Path: st.Path, Old: st.Data, New: content, Mode: mode, Exists: st.Exists, UID: st.UID, GID: st.GID, Legacy: containsStr(s.legacy, rel)}
	if c.Path == "" {
		c.Path = filepath.Join(s.Install.Root, filepath.FromSlash(rel))
	}
	if c.Mode == 0 {
		c.Mode = 0o644
	}
	if !c.Exists {
		// A new file belongs to whoever owns its directory.
		c.UID, c.GID = owner(filepath.Dir(c.Path))
	}
	return c
}

// write commits the changes with the manifest (final nil: none) and
// removes leftovers of earlier runs first.
func (s *Session) write(changes []change, final *Manifest, state string) error {
	var finalBytes []byte
	if final != nil {
		finalBytes = final.encode()
	}
	s.removeLeftovers()
	if len(changes) == 0 && (bytes.Equal(finalBytes, s.rawMan) || !s.lock.held()) {
		// Nothing to write; on a tree this user cannot write (no lock
		// file could be made) a missing manifest cannot be added either.
		return nil
	}
	var touching []string
	for _, c := range changes {
		touching = append(touching, c.Rel)
	}
	var journal *Manifest
	switch {
	case final != nil:
		journal = final.journal(state, touching)
	case s.manifest != nil:
		journal = s.manifest.journal(state, touching)
	default:
		journal = (&Manifest{Format: manifestFormat, WrittenBy: "vllm-timings " + Version, Target: "in-place"}).journal(state, touching)
	}
	journal.Touching = mergeSorted(journal.Touching, s.manifest.paths())
	warnings, err := commit(txn{root: s.Install.Root, pkg: s.Install.Dir, changes: changes, prevManifest: s.rawMan, journal: journal.encode(), final: finalBytes})
	s.Warnings = append(s.Warnings, warnings...)
	return err
}

// mergeSorted is the union of the groups, sorted.
func mergeSorted(groups ...[]string) []string {
	seen := map[string]bool{}
	var out []string
	for _, group := range groups {
		for _, x := range group {
			if !seen[x] {
				seen[x] = true
				out = append(out, x)
			}
		}
	}
	sort.Strings(out)
	return out
}

func (s *Session) removeLeftovers() {
	if len(s.leftovers) == 0 {
		return
	}
	var failed []string
	for _, p := range s.leftovers {
		if err := removeRetry(p); err != nil {
			failed = append(failed, p)
		}
	}
	s.Warnings = append(s.Warnings, fmt.Sprintf("removed %s left by an interrupted run", plural(len(s.leftovers)-len(failed), "temporary file")))
	if len(failed) > 0 {
		s.Warnings = append(s.Warnings, "could not remove "+strings.Join(failed, ", "))
	}
	s.leftovers = nil
}

// checkCompiles refuses changes whose Python would not compile.
func (s *Session) checkCompiles(changes []change) error {
	var in []compileInput
	for _, c := range changes {
		if c.New == nil {
			continue
		}
		ci := compileInput{Rel: c.Rel, New: c.New}
		if c.Exists {
			ci.Old = c.Old
		}
		in = append(in, ci)
	}
	return compileCheck{Python: s.opts.Python}.check(in)
}

func describe(changes []change, reverting bool) []string {
	out := make([]string, len(changes))
	for i, c := range changes {
		out[i] = describeChange(c, reverting)
	}
	return out
}

// revertChanges plans the removal of every vllm-timings change in every
// file any known patch set or the manifest names, except those in skip,
// whether or not a set fits now. Edits come before removals, so the
// module goes last.
func (s *Session) revertChanges(skip map[string]bool) ([]change, error) {
	var edits, removals []change
	created := s.manifest.created()
	for _, rel := range s.files() {
		st := s.clean[rel]
		if skip[rel] || !st.Exists {
			continue
		}
		if owned(st.Data) {
			if s.isCreatedTarget(rel) || created[rel] {
				removals = append(removals, s.change(rel, nil, st.Mode))
			}
			continue
		}
		orig, had, err := strip(st.Data)
		if err != nil {
			return nil, &exit.Error{Code: ExitModified, Pos: rel, Msg: err.Error(), Hint: "Something other than vllm-timings edited this file, so revert will not guess; reinstall vLLM or restore the file. Nothing was changed."}
		}
		if had || !bytes.Equal(st.Data, s.snap[rel].Data) {
			edits = append(edits, s.change(rel, orig, st.Mode))
		}
	}
	return append(edits, removals...), nil
}

// isCreatedTarget reports whether some known set creates rel.
func (s *Session) isCreatedTarget(rel string) bool {
	for _, set := range s.Library.All() {
		for _, f := range set.Files {
			if f.Path == rel && f.Create != nil {
				return true
			}
		}
	}
	return false
}

// Revert restores the original files and removes the created ones: those
// of every set it knows and those the manifest records, with or without
// the --patchset that applied them. The module goes last, so a serving
// file never imports a missing one.
func (s *Session) Revert(dryRun bool) ([]string, error) {
	if s.Overlay != nil {
		return nil, errorf(exit.Internal, "Revert on a session that looks through an overlay")
	}
	if !dryRun {
		release, err := s.ensureLocked()
		if err != nil {
			return nil, err
		}
		defer release()
	}
	if err := s.legacyError("revert"); err != nil {
		return nil, err
	}
	changes, err := s.revertChanges(nil)
	if err != nil || dryRun {
		return describe(changes, true), err
	}
	if len(changes) > 0 {
		if err := s.checkCompiles(changes); err != nil {
			return nil, err
		}
	}
	if err := s.write(changes, nil, StateReverting); err != nil {
		return nil, err
	}
	return describe(changes, true), nil
}

// DiffBase is the directory a diff's paths are relative to.
type DiffBase string

const (
	// DiffSite: a/vllm/..., for patch -p1 -d SITE_PACKAGES (or git apply there).
	DiffSite DiffBase = "site"
	// DiffPackage: a/entrypoints/..., for patch -p1 -d SITE_PACKAGES/vllm,
	// as image builds apply their own patch series to the package directory.
	DiffPackage DiffBase = "package"
)

// Diff writes what Apply would do as a unified diff with a/ and b/ paths
// relative to the directory above vllm/, for git apply or patch -p1.
func (s *Session) Diff(w io.Writer) error { return s.DiffRelativeTo(w, DiffSite) }

// DiffRelativeTo is Diff with paths relative to base.
func (s *Session) DiffRelativeTo(w io.Writer, base DiffBase) error {
	p, err := s.Plan()
	if err != nil {
		return err
	}
	for _, f := range p.Changes() {
		path := f.Path
		if base == DiffPackage {
			path = strings.TrimPrefix(path, "vllm/") // spec guarantees the prefix
		}
		old, oldLabel := string(f.Current), "a/"+path
		if !f.Exists {
			old, oldLabel = "", "/dev/null"
		}
		fmt.Fprintf(w, "diff --git a/%s b/%s\n", path, path)
		if !f.Exists {
			fmt.Fprintf(w, "new file mode 100644\n")
		}
		io.WriteString(w, udiff.Unified(oldLabel, "b/"+path, old, string(f.New)))
	}
	return nil
}

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
	Problems string       `json:"problems,omitempty"`
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
	r.InProgress = !s.lock.held() && lockHeldElsewhere(s.Install.Dir)
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
	// The recorded set of each part no given set fits (the first the
	// manifest lists for it).
	recorded := map[string]*recordedSet{}
	var recordedParts []string
	for _, rs := range s.recordedSets() {
		if _, seen := recorded[rs.part]; !seen && rs.usable() {
			recorded[rs.part] = rs
			recordedParts = append(recordedParts, rs.part)
		}
	}
	chatRec := recorded[spec.DefaultPart]
	if s.Sel.Err != nil || (s.Sel.Chosen == nil && chatRec == nil) {
		_, err := s.plan(true, false)
		r.Why = "no patch set fits"
		r.State = Modified
		r.Problems = err.Error()
		// Still say what is there: marked files are ours, the rest unknown.
		for _, rel := range s.Library.targets() {
			st := s.snap[rel]
			fs := FileStatus{Path: rel, State: Missing}
			if st.Exists {
				fs.State = Unpatched
				if _, had, err := strip(st.Data); err != nil || had || owned(st.Data) {
					fs.State = Modified
				}
			}
			r.Files = append(r.Files, fs)
		}
		return r
	}
	seen := map[string]bool{}
	addFiles := func(files []FileStatus) {
		for _, f := range files {
			if seen[f.Path] {
				continue // the module, created by every set
			}
			seen[f.Path] = true
			if len(s.legacy) > 0 && containsStr(s.legacy, f.Path) {
				f.State = Modified
			}
			r.Files = append(r.Files, f)
		}
	}
	addPlan := func(p *SetPlan, part string) {
		var files []FileStatus
		for _, f := range p.Files {
			files = append(files, FileStatus{Path: f.Path, State: f.State, Edits: f.Edits})
		}
		r.Sets = append(r.Sets, SetStatus{Name: p.Set.Name, Part: part, Source: p.Set.Origin(), State: combinedState(files)})
		addFiles(files)
	}
	addRecorded := func(rs *recordedSet) string {
		r.Sets = append(r.Sets, SetStatus{Name: rs.ms.Name, Part: rs.part, Source: rs.ms.Source, State: rs.state, Recorded: true})
		addFiles(rs.files)
		return rs.why()
	}
	if c := s.Sel.Chosen; c != nil {
		r.PatchSet, r.Why = c.Set.Name, s.Sel.Why
		addPlan(c, spec.DefaultPart)
	} else {
		r.PatchSet = chatRec.ms.Name
		r.Why = addRecorded(chatRec)
	}
	reported := map[string]bool{spec.DefaultPart: true}
	for _, c := range s.Sel.Parts {
		reported[c.Part] = true
		ps := PartStatus{Part: c.Part, Endpoints: PartLabel(c.Part), Why: c.Why, State: PartFits}
		rs := recorded[c.Part]
		switch {
		case c.Chosen != nil:
			ps.PatchSet = c.Chosen.Set.Name
			addPlan(c.Chosen, c.Part)
		case rs != nil && c.Err == nil:
			ps.State, ps.PatchSet, ps.Why = PartRecorded, rs.ms.Name, addRecorded(rs)
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
			r.Parts = append(r.Parts, PartStatus{Part: part, Endpoints: PartLabel(part), State: PartRecorded, PatchSet: rs.ms.Name, Why: addRecorded(rs)})
		}
	}
	r.State = combinedState(r.Files)
	if len(s.legacy) > 0 {
		r.Problems = s.legacyError("apply").Error()
	}
	return r
}

func containsStr(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// findLeftovers lists our temporary files in the directories of the given
// files and in the package directory.
func findLeftovers(inst *Install, rels []string) []string {
	dirs := map[string]bool{inst.Dir: true}
	for _, r := range rels {
		dirs[filepath.Dir(filepath.Join(inst.Root, filepath.FromSlash(r)))] = true
	}
	var out []string
	for d := range dirs {
		ents, err := os.ReadDir(d)
		if err != nil {
			continue
		}
		for _, e := range ents {
			n := e.Name()
			if strings.HasPrefix(n, ".vllm-timings-") && (strings.HasSuffix(n, ".tmp") || strings.HasPrefix(n, ".vllm-timings-probe-")) {
				out = append(out, filepath.Join(d, n))
			}
		}
	}
	sort.Strings(out)
	return out
}
