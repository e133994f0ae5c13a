package patcher

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	udiff "github.com/aymanbagabas/go-udiff"

	"github.com/vllm-timings/vllm-timings/patcher/codes"
	"github.com/vllm-timings/vllm-timings/patcher/compile"
	"github.com/vllm-timings/vllm-timings/patcher/edit"
	"github.com/vllm-timings/vllm-timings/patcher/exit"
	"github.com/vllm-timings/vllm-timings/patcher/find"
	"github.com/vllm-timings/vllm-timings/patcher/spec"
	"github.com/vllm-timings/vllm-timings/patcher/write"
)

// UnusedSets are the user's sets of one part that fit nothing in this
// vLLM, and the embedded set used instead.
type UnusedSets struct {
	User     []*spec.PatchSet
	Embedded *spec.PatchSet
}

// String is the warning in plain words.
func (u UnusedSets) String() string {
	var names []string
	for _, set := range u.User {
		names = append(names, fmt.Sprintf("%q (%s)", set.Name, set.Source))
	}
	return fmt.Sprintf("your patch set %s fits nothing in this vLLM; the embedded %q is used instead", strings.Join(names, ", "), u.Embedded.Name)
}

// Options are what every command that touches vLLM shares.
type Options struct {
	Find      find.Options
	PatchSets []string // user patch set files, tried before the embedded ones
	// PatchSetIs and OverlayIs are what messages call a PatchSets file
	// and the overlay directory before naming it: the caller's names for
	// them (a command's flags); "patch set" and "overlay" by default.
	PatchSetIs string
	OverlayIs  string
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
	// Version is the version of vllm-timings that the manifest says wrote
	// it (the command's own, set at link time); "" is "dev".
	Version string
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
	// (bytecode that could not be
	// removed, leftovers removed). Commands print them.
	Warnings []string
	// Unused lists, per part, the user's sets that fit nothing in this
	// vLLM while an embedded set is used instead (a warning the command
	// words, with how to see why).
	Unused  []UnusedSets
	Overlay *OverlayView // the overlay looked through (Options.Overlay), or nil

	opts      Options
	snap      snapshot // the files as they are
	clean     snapshot // the same without the old scripts' edits
	legacy    []string // files holding the old scripts' edits
	legacyErr error    // why they cannot be removed exactly, if so
	manifest  *Manifest
	rawMan    []byte // the manifest's bytes, nil if none
	leftovers []string
	lock      *write.Lock
	parses    parseMemo // the targets parsed, by content, for every read of this session
}

// Open finds vLLM, loads the patch sets, takes the lock if asked, reads
// every file they (and the manifest, and the older scripts) target and
// chooses the set that fits.
func Open(o Options) (*Session, error) {
	lib, err := LoadLibrary(o.PatchSets, o.PatchSetIs)
	if err != nil {
		return nil, err
	}
	inst, err := find.Locate(o.Find)
	if err != nil {
		return nil, err
	}
	s := &Session{Install: inst, Library: lib, opts: o}
	if o.Lock {
		if s.lock, err = write.LockTree(inst.Dir, o.lockWait()); err != nil {
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
		if st.Exists && edit.HasLegacy(st.Data) {
			s.legacy = append(s.legacy, rel)
			out, _, err := edit.RemoveLegacy(st.Data)
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
	if s.parses == nil {
		s.parses = parseMemo{}
	}
	sel := choose(s.Library, s.clean, s.manifest, s.Install, s.parses)
	s.Sel = sel
	s.Warnings, s.Unused = nil, nil
	// Per part: the user's sets of a part whose chosen set is embedded
	// fit nothing.
	for _, pc := range sel.Choices() {
		part, c := pc.Part, pc.Chosen
		if c == nil || !c.Set.Embedded {
			continue
		}
		u := UnusedSets{Embedded: c.Set}
		for _, set := range s.Library.User {
			if set.Part == part {
				u.User = append(u.User, set)
			}
		}
		if len(u.User) > 0 {
			s.Unused = append(s.Unused, u)
		}
	}
	return nil
}

// files is every file a run looks at: the sets' targets, the manifest's
// files and the old scripts' files.
func (s *Session) files() []string {
	return mergeSorted(s.Library.targets(), s.manifest.paths(), edit.LegacyFiles)
}

// Close releases the lock. When no manifest remains (the tree holds
// nothing of ours) the lock file goes too.
func (s *Session) Close() {
	if s == nil || !s.lock.Held() {
		return
	}
	_, err := os.Stat(manifestPath(s.Install.Dir))
	s.lock.Release(errors.Is(err, fs.ErrNotExist))
}

// ensureLocked takes the lock for a session opened without it, and reads
// the tree again under it. The returned func releases a lock taken here.
func (s *Session) ensureLocked() (func(), error) {
	if s.lock != nil {
		return func() {}, nil
	}
	l, err := write.LockTree(s.Install.Dir, s.opts.lockWait())
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
		return &exit.Error{
			Code: ExitLegacy,
			Msg:  fmt.Sprintf("the older patch_timings scripts edited %s (lines marked %q), and vllm-timings cannot undo them exactly: %v", strings.Join(s.legacy, ", "), edit.LegacyTag, s.legacyErr),
			Hint: fmt.Sprintf("Reinstall vLLM (or restore these files from its wheel), then run %s again. Nothing was changed.", verb),
			Err:  s.legacyErr,
		}
	}
	if s.opts.TakeOver {
		return nil
	}
	advice := codes.AdviceTakeOverApply
	if verb == "revert" {
		advice = codes.AdviceTakeOverRevert
	}
	return &exit.Error{
		Code: ExitLegacy,
		Msg:  fmt.Sprintf("the older patch_timings scripts edited %s (lines marked %q)", strings.Join(s.legacy, ", "), edit.LegacyTag),
		Hint: "Patching beside them would run both, and theirs would overwrite these timings. Options.TakeOver removes their " +
			"edits exactly (giving vLLM's own files back) first. Stop running the old script before vllm serve. Nothing " +
			"was changed.",
		Advice: advice,
	}
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
	var creates, edits, removals []write.Change
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
	var legacyOnly []write.Change
	for _, rel := range s.legacy {
		if !planned[rel] && !hasChange(others, rel) {
			legacyOnly = append(legacyOnly, s.change(rel, s.clean[rel].Data, s.snap[rel].Mode))
		}
	}
	changes := append(append(append(creates, edits...), legacyOnly...), removals...)
	if err := s.checkCompiles(changes); err != nil {
		return nil, err
	}
	if err := s.write(changes, manifestFor(s.Sel.Plans(), s.opts.Version), StateApplying); err != nil {
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

func hasChange(cs []write.Change, rel string) bool {
	for _, c := range cs {
		if c.Rel == rel {
			return true
		}
	}
	return false
}

// change is the write of rel with content (nil removes it).
func (s *Session) change(rel string, content []byte, mode fs.FileMode) write.Change {
	st := s.snap[rel]
	c := write.Change{Rel: rel, Path: st.Path, Old: st.Data, New: content, Mode: mode, Exists: st.Exists, UID: st.UID, GID: st.GID, Legacy: slices.Contains(s.legacy, rel)}
	if c.Path == "" {
		c.Path = filepath.Join(s.Install.Root, filepath.FromSlash(rel))
	}
	if c.Mode == 0 {
		c.Mode = 0o644
	}
	if !c.Exists {
		// A new file belongs to whoever owns its directory.
		c.UID, c.GID = write.Owner(filepath.Dir(c.Path))
	}
	return c
}

// write commits the changes with the manifest (final nil: none) and
// removes leftovers of earlier runs first.
func (s *Session) write(changes []write.Change, final *Manifest, state string) error {
	var finalBytes []byte
	if final != nil {
		finalBytes = final.encode()
	}
	s.removeLeftovers()
	if len(changes) == 0 && (bytes.Equal(finalBytes, s.rawMan) || !s.lock.Held()) {
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
		journal = (&Manifest{Format: manifestFormat, WrittenBy: writtenBy(s.opts.Version), Target: "in-place"}).journal(state, touching)
	}
	journal.Touching = mergeSorted(journal.Touching, s.manifest.paths())
	warnings, err := write.Commit(write.Txn{Changes: changes, Manifest: manifestPath(s.Install.Dir), PrevManifest: s.rawMan, Journal: journal.encode(), Final: finalBytes})
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
		if err := write.RemoveRetry(p); err != nil {
			failed = append(failed, p)
		}
	}
	s.Warnings = append(s.Warnings, fmt.Sprintf("removed %s left by an interrupted run", Plural(len(s.leftovers)-len(failed), "temporary file")))
	if len(failed) > 0 {
		s.Warnings = append(s.Warnings, "could not remove "+strings.Join(failed, ", "))
	}
	s.leftovers = nil
}

// checkCompiles refuses changes whose Python would not compile.
func (s *Session) checkCompiles(changes []write.Change) error {
	var in []compile.Input
	for _, c := range changes {
		if c.New == nil {
			continue
		}
		ci := compile.Input{Rel: c.Rel, New: c.New}
		if c.Exists {
			ci.Old = c.Old
		}
		in = append(in, ci)
	}
	return compile.Check{Python: s.opts.Python}.Run(in)
}

func describe(changes []write.Change, reverting bool) []string {
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
func (s *Session) revertChanges(skip map[string]bool) ([]write.Change, error) {
	var edits, removals []write.Change
	created := s.manifest.created()
	for _, rel := range s.files() {
		st := s.clean[rel]
		if skip[rel] || !st.Exists {
			continue
		}
		if edit.Owned(st.Data) {
			if s.isCreatedTarget(rel) || created[rel] {
				removals = append(removals, s.change(rel, nil, st.Mode))
			}
			continue
		}
		orig, had, err := edit.Strip(st.Data)
		if err != nil {
			return nil, &exit.Error{
				Code: ExitModified,
				Pos:  rel,
				Msg:  err.Error(),
				Hint: "Something other than vllm-timings edited this file, so revert will not guess; reinstall vLLM or restore the file. Nothing was changed.",
			}
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

// DiffRelativeTo is Diff with paths relative to base. The diff is made
// whole first and written in one call, whose error it returns: a diff cut
// short (a full disk, a closed pipe) is not a success.
func (s *Session) DiffRelativeTo(w io.Writer, base DiffBase) error {
	p, err := s.Plan()
	if err != nil {
		return err
	}
	var b bytes.Buffer
	for _, f := range p.Changes() {
		path := f.Path
		if base == DiffPackage {
			path = strings.TrimPrefix(path, "vllm/") // spec guarantees the prefix
		}
		old, oldLabel := string(f.Current), "a/"+path
		if !f.Exists {
			old, oldLabel = "", "/dev/null"
		}
		fmt.Fprintf(&b, "diff --git a/%s b/%s\n", path, path)
		if !f.Exists {
			b.WriteString("new file mode 100644\n")
		}
		b.WriteString(udiff.Unified(oldLabel, "b/"+path, old, string(f.New)))
	}
	_, err = w.Write(b.Bytes())
	return err
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

// describeChange is the line a command prints for a change made.
func describeChange(c write.Change, reverting bool) string {
	switch {
	case c.Legacy && c.New != nil && !reverting:
		return fmt.Sprintf("patched %s (replacing the older scripts' edits)", c.Rel)
	case c.Legacy && c.New != nil:
		return fmt.Sprintf("removed the older scripts' edits from %s", c.Rel)
	case c.New == nil:
		return fmt.Sprintf("removed %s", c.Rel)
	case !c.Exists:
		return fmt.Sprintf("created %s", c.Rel)
	case reverting:
		return fmt.Sprintf("restored %s", c.Rel)
	default:
		return fmt.Sprintf("patched %s", c.Rel)
	}
}

// manifestFor records the plans as applied by vllm-timings version.
func manifestFor(plans []*SetPlan, version string) *Manifest {
	m := &Manifest{Format: manifestFormat, WrittenBy: writtenBy(version), State: StateApplied, Target: "in-place"}
	for _, p := range plans {
		ms := ManifestSet{Name: p.Set.Name, Source: p.Set.Source, Part: p.Set.Part}
		for _, f := range p.Files {
			if f.State == Checked {
				continue
			}
			ms.Files = append(ms.Files, ManifestFile{Path: f.Path, Created: f.Create, Edits: f.Edits, SHA256: digest(f.New)})
		}
		m.Sets = append(m.Sets, ms)
	}
	return m
}
