package patcher

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/vllm-timings/vllm-timings/patcher/codes"
	"github.com/vllm-timings/vllm-timings/patcher/exit"
)

// ManifestName is the record, inside the vllm package, of what vllm-timings
// applied: which sets, which files each edited or created. It is written
// through the same temporary-file-and-rename path as the patched files,
// so it is always whole.
//
// It is also the run's journal. Before its first rename a run writes the
// manifest with state "applying" or "reverting" and every file it may
// touch; after its last rename, state "applied" (or, after a revert, no
// manifest at all). A manifest still saying applying or reverting is an
// interrupted run: status reports it, and the next apply or revert
// finishes or undoes it. Nothing in the journal is needed to do so (each
// file is whole, and the markers say what is ours); it says which files
// and which sets were involved, so that revert can undo a set it was not
// given with --patchset.
const ManifestName = ".vllm-timings.json"

// manifestFormat is the version of the manifest's layout.
const manifestFormat = 1

// Manifest states.
const (
	StateApplied   = "applied"
	StateApplying  = "applying"
	StateReverting = "reverting"
)

// Manifest is what vllm/.vllm-timings.json holds.
type Manifest struct {
	Format    int    `json:"format"`
	WrittenBy string `json:"written_by"`
	State     string `json:"state"`
	// Target names where the sets were written: "in-place" is the vllm
	// package itself. Other write targets (an overlay directory) write
	// their own manifest with their own name here.
	Target string        `json:"target"`
	Sets   []ManifestSet `json:"sets"`
	// Touching is, while a run is under way, every file it may change.
	Touching []string `json:"touching,omitempty"`
}

// ManifestSet is one applied patch set. Several can be applied together
// (one per group of endpoints); each names its own files.
type ManifestSet struct {
	Name   string `json:"name"`
	Source string `json:"source"`
	// Part is the part the set patches (chat, responses, messages, ...);
	// manifests written before it was recorded lack it.
	Part  string         `json:"part,omitempty"`
	Files []ManifestFile `json:"files"`
}

// ManifestFile is one file a set wrote.
type ManifestFile struct {
	Path    string `json:"path"`
	Created bool   `json:"created,omitempty"` // the set owns the whole file; revert removes it
	Edits   int    `json:"edits,omitempty"`
	SHA256  string `json:"sha256"` // its content once applied
}

// writtenBy is what a manifest says wrote it, for vllm-timings version
// (Options.Version; "" is "dev").
func writtenBy(version string) string {
	if version == "" {
		version = "dev"
	}
	return "vllm-timings " + version
}

func manifestPath(pkg string) string { return filepath.Join(pkg, ManifestName) }

// readManifest reads pkg's manifest; none is (nil, nil).
func readManifest(pkg string) (*Manifest, error) {
	b, err := os.ReadFile(manifestPath(pkg))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, &exit.Error{Code: ExitFS, Msg: fmt.Sprintf("cannot read %s: %v", manifestPath(pkg), err), Err: err}
	}
	var m Manifest
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&m); err != nil || m.Format < 1 || m.State == "" {
		why := "it is not a vllm-timings manifest"
		if err != nil {
			why = err.Error()
		}
		return nil, &exit.Error{
			Code: ExitManifest,
			Pos:  manifestPath(pkg),
			Msg:  "unreadable (" + why + ")",
			Hint: "vllm-timings writes it atomically, so something else changed it. Remove it and run again: the markers in the " +
				"files still tell revert what is ours (only files a user's patch set created need that set again).",
			Advice: codes.AdviceManifest,
			Err:    err,
		}
	}
	if m.Format > manifestFormat {
		return nil, &exit.Error{
			Code: ExitManifest,
			Pos:  manifestPath(pkg),
			Msg:  fmt.Sprintf("written by a newer vllm-timings (format %d; this one reads %d)", m.Format, manifestFormat),
			Hint: "Use that version, or remove the file and run again.",
		}
	}
	for _, p := range m.paths() {
		if !strings.HasPrefix(p, "vllm/") || strings.Contains(p, "..") {
			return nil, &exit.Error{Code: ExitManifest, Pos: manifestPath(pkg), Msg: fmt.Sprintf("names %q, which is not a file inside the vllm package", p), Hint: "Remove the manifest and run again."}
		}
	}
	return &m, nil
}

// encode renders the manifest; the same content always gives the same
// bytes, so an unchanged tree is not rewritten.
func (m *Manifest) encode() []byte {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		panic(err)
	}
	return append(b, '\n')
}

// paths lists every file the manifest names, sorted.
func (m *Manifest) paths() []string {
	if m == nil {
		return nil
	}
	seen := map[string]bool{}
	for _, s := range m.Sets {
		for _, f := range s.Files {
			seen[f.Path] = true
		}
	}
	for _, p := range m.Touching {
		seen[p] = true
	}
	out := make([]string, 0, len(seen))
	for p := range seen {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// created lists the files the manifest's sets created.
func (m *Manifest) created() map[string]bool {
	out := map[string]bool{}
	if m == nil {
		return out
	}
	for _, s := range m.Sets {
		for _, f := range s.Files {
			if f.Created {
				out[f.Path] = true
			}
		}
	}
	return out
}

// Interrupted reports whether the manifest records a run that did not
// finish.
func (m *Manifest) Interrupted() bool {
	return m != nil && (m.State == StateApplying || m.State == StateReverting)
}

// journal is m while a run changes the given files.
func (m *Manifest) journal(state string, touching []string) *Manifest {
	j := *m
	j.State = state
	j.Touching = append([]string(nil), touching...)
	sort.Strings(j.Touching)
	return &j
}

func digest(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}
