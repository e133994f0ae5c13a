package patcher

import (
	"fmt"

	"github.com/vllm-timings/vllm-timings/patcher/edit"
	"github.com/vllm-timings/vllm-timings/patcher/spec"
)

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
