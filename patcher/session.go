package patcher

import (
	"fmt"
	"io"
	"strings"

	udiff "github.com/aymanbagabas/go-udiff"

	"github.com/vllm-timings/vllm-timings/patcher/exit"
)

// Options are what every command that touches vLLM shares.
type Options struct {
	Find      FindOptions
	PatchSets []string // user patch set files, tried before the embedded ones
	// Overlay, if set, is an overlay directory (apply --overlay) to look
	// through: the session sees each module as Python will with the
	// overlay on PYTHONPATH. Only for status; apply and revert with an
	// overlay open the tree itself and call ApplyOverlay, RevertOverlay.
	Overlay string
	// Partial lets Plan, and so Apply, Diff and ApplyOverlay, go ahead
	// with the parts that fit when another part this vLLM serves fits no
	// set (apply --on-failure warn). Without it that is an ExitPartial
	// error. A chat part that does not fit is an error either way.
	Partial bool
}

// Session is one look at an installed vLLM: where it is, which patch sets
// exist, what its target files hold, and which set fits. Opening a session
// reads files; everything after that is planning on that snapshot until
// Apply or Revert writes.
type Session struct {
	Install *Install
	Library *Library
	Sel     *Selection
	Overlay *OverlayView // the overlay looked through (Options.Overlay), or nil
	snap    snapshot
	partial bool // Options.Partial
}

// Open finds vLLM, loads the patch sets, reads every file they target and
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
	snap, err := readSnapshot(inst, lib.targets())
	if err != nil {
		return nil, err
	}
	var view *OverlayView
	if o.Overlay != "" {
		snap, view = viewThroughOverlay(inst, snap, o.Overlay)
	}
	sel, err := choose(lib, snap)
	if err != nil {
		return nil, err
	}
	return &Session{Install: inst, Library: lib, Sel: sel, Overlay: view, snap: snap, partial: o.Partial}, nil
}

// Plan returns what apply writes: the chat set's plan with the files of
// every other part's chosen set, or an error that explains why no chat
// set fits, or (without Options.Partial) which served part fits none.
func (s *Session) Plan() (*SetPlan, error) {
	return s.plan(s.partial)
}

func (s *Session) plan(partial bool) (*SetPlan, error) {
	if s.Sel.Chosen == nil {
		return nil, noFitError(s.Library, s.Install, s.Sel)
	}
	if unfit := s.Sel.Unfit(); len(unfit) > 0 && !partial {
		return nil, partialError(s.Library, s.Install, unfit)
	}
	return s.Sel.merged, nil
}

// Apply writes the plan: all files or none. It returns one line per file
// written; none when the tree is already patched.
func (s *Session) Apply() ([]string, error) {
	if s.Overlay != nil {
		return nil, errorf(exit.Internal, "Apply on a session that looks through an overlay")
	}
	p, err := s.Plan()
	if err != nil {
		return nil, err
	}
	var changes []change
	for _, f := range p.Changes() {
		changes = append(changes, change{Rel: f.Path, Old: f.Current, New: f.New, Mode: f.Mode, Exists: f.Exists})
	}
	if err := commit(s.Install.Root, changes); err != nil {
		return nil, err
	}
	return describe(changes, false), nil
}

func describe(changes []change, reverting bool) []string {
	out := make([]string, len(changes))
	for i, c := range changes {
		out[i] = describeChange(c, reverting)
	}
	return out
}

// revertChanges plans the removal of every vllm-timings change in every
// file any known patch set targets, whether or not a set fits now.
func (s *Session) revertChanges() ([]change, error) {
	var changes []change
	for _, rel := range s.Library.targets() {
		st := s.snap[rel]
		if !st.Exists {
			continue
		}
		if owned(st.Data) {
			changes = append(changes, change{Rel: rel, Old: st.Data, Exists: true, Mode: st.Mode})
			continue
		}
		orig, had, err := strip(st.Data)
		if err != nil {
			return nil, &exit.Error{Code: ExitModified, Pos: rel, Msg: err.Error(), Hint: "Something other than vllm-timings edited this file, so revert will not guess; reinstall vLLM or restore the file. Nothing was changed."}
		}
		if had {
			changes = append(changes, change{Rel: rel, Old: st.Data, New: orig, Exists: true, Mode: st.Mode})
		}
	}
	return changes, nil
}

// Revert restores the original files and removes the created ones.
func (s *Session) Revert(dryRun bool) ([]string, error) {
	if s.Overlay != nil {
		return nil, errorf(exit.Internal, "Revert on a session that looks through an overlay")
	}
	changes, err := s.revertChanges()
	if err != nil || dryRun {
		return describe(changes, true), err
	}
	if err := commit(s.Install.Root, changes); err != nil {
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
	Overlay  *OverlayView `json:"overlay,omitempty"` // the overlay looked through, if any
	// Parts are the parts besides chat (PatchSet, Why and Files cover the
	// chosen sets of all parts together).
	Parts []PartStatus `json:"parts,omitempty"`
}

// PartState says what a part other than chat is on this vLLM.
type PartState string

const (
	PartFits      PartState = "fits"       // one of its sets is chosen
	PartNotServed PartState = "not served" // none of its sets finds its files
	PartUnfit     PartState = "no fit"     // its files exist, but no set's anchors all match
)

// PartStatus is one part of Status.
type PartStatus struct {
	Part      string    `json:"part"`
	Endpoints string    `json:"endpoints"`
	State     PartState `json:"state"`
	PatchSet  string    `json:"patchset,omitempty"`
	Why       string    `json:"why"`
}

// Status reports, per target file, whether it is unpatched, patched,
// outdated or modified.
func (s *Session) Status() *StatusReport {
	r := &StatusReport{VLLMDir: s.Install.Dir, Version: s.Install.Version, Via: s.Install.Via, Overlay: s.Overlay}
	p, err := s.plan(true)
	if err != nil {
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
	r.PatchSet, r.Why = p.Set.Name, s.Sel.Why
	for _, c := range s.Sel.Parts {
		ps := PartStatus{Part: c.Part, Endpoints: PartLabel(c.Part), Why: c.Why, State: PartFits}
		switch {
		case c.Chosen != nil:
			ps.PatchSet = c.Chosen.Set.Name
		case c.Served():
			ps.State = PartUnfit
		default:
			ps.State = PartNotServed
		}
		r.Parts = append(r.Parts, ps)
	}
	counts := map[FileState]int{}
	written := 0 // files the set writes; checked ones do not count
	for _, f := range p.Files {
		r.Files = append(r.Files, FileStatus{Path: f.Path, State: f.State, Edits: f.Edits})
		counts[f.State]++
		if f.State != Checked {
			written++
		}
	}
	switch {
	case counts[Modified] > 0:
		r.State = Modified
	case counts[Patched] == written:
		r.State = Patched
	case counts[Unpatched] == written:
		r.State = Unpatched
	default:
		r.State = Outdated // partly patched or patched by another version
	}
	return r
}
