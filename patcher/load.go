package patcher

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/hashicorp/hcl/v2"

	"github.com/vllm-timings/vllm-timings/patcher/codes"
	"github.com/vllm-timings/vllm-timings/patcher/exit"
	"github.com/vllm-timings/vllm-timings/patcher/find"
	"github.com/vllm-timings/vllm-timings/patcher/patchsets"
	"github.com/vllm-timings/vllm-timings/patcher/spec"
)

// Library is the set of patch sets a run considers: the user's (from
// --patchset, tried first) and the embedded ones, with their HCL sources
// kept for rendering diagnostics.
type Library struct {
	User     []*spec.PatchSet
	Embedded []*spec.PatchSet
	sources  map[string][]byte
}

// All returns the user's sets, then the embedded ones.
func (l *Library) All() []*spec.PatchSet {
	return append(append([]*spec.PatchSet(nil), l.User...), l.Embedded...)
}

// LoadLibrary returns the embedded patch sets (parsed at build time, see
// package patchsets) and parses the user's files. A user set with the name
// of an embedded one replaces it. fileIs is what messages call a user's
// file before naming it ("patch set" if empty; a command passes its flag).
func LoadLibrary(userFiles []string, fileIs string) (*Library, error) {
	if fileIs == "" {
		fileIs = "patch set"
	}
	lib := &Library{sources: map[string][]byte{}}
	var diags hcl.Diagnostics
	// The embedded sets were parsed when patchsets/sets_gen.go was generated;
	// their HCL is read (l.source) only to render diagnostics, for Source
	// and for skeletons, never on a run that goes well.
	lib.Embedded = patchsets.Embedded()
	for _, file := range userFiles {
		src, err := readPatchSetFile(file, fileIs)
		if err != nil {
			return nil, err
		}
		lib.sources[file] = src
		sets, d := spec.Parse(file, src, spec.Assets{Builtin: patchsets.FS, Local: os.DirFS(filepath.Dir(file))})
		diags = append(diags, d...)
		lib.User = append(lib.User, sets...)
	}
	if diags.HasErrors() {
		e := &SpecError{Diagnostics: diags, Files: lib.files()}
		return nil, &exit.Error{Code: ExitSpec, Msg: e.Error(), Err: e}
	}
	user := map[string]bool{}
	for _, s := range lib.User {
		user[s.Name] = true
	}
	kept := lib.Embedded[:0]
	for _, s := range lib.Embedded {
		if !user[s.Name] {
			kept = append(kept, s)
		}
	}
	lib.Embedded = kept
	return lib, nil
}

// MaxPatchSetSize is the largest --patchset file read: the embedded sets
// are a few KiB, and a limit keeps a wrong path (a device, a log) from
// filling memory.
const MaxPatchSetSize = 1 << 20

// readPatchSetFile reads a user's patch set file (fileIs names it in
// messages): a regular file of at most MaxPatchSetSize bytes. It is
// opened non-blocking, so a FIFO given by mistake fails instead of
// waiting forever.
func readPatchSetFile(file, fileIs string) ([]byte, error) {
	pos := fileIs + " " + file
	notRegular := func(m fs.FileMode) error {
		return &exit.Error{Code: ExitPatchSetFile, Pos: pos, Msg: "not a regular file (" + find.DescribeMode(m) + ")", Hint: "Pass the .hcl file itself."}
	}
	cannotRead := func(err error) error {
		return &exit.Error{
			Code:   ExitSpec,
			Msg:    fmt.Sprintf("cannot read patch set %s: %v", file, err),
			Hint:   "Check the path (inside a container, it must be mounted).",
			Advice: codes.AdvicePatchSetPath,
			Err:    err,
		}
	}
	tooBig := func(n int64) error {
		return &exit.Error{Code: ExitPatchSetFile, Pos: pos, Msg: fmt.Sprintf("%d bytes; a patch set is at most %d (1 MiB)", n, MaxPatchSetSize), Hint: "Is it the right file?"}
	}
	st, err := os.Stat(file)
	if err != nil {
		return nil, cannotRead(err)
	}
	if !st.Mode().IsRegular() {
		return nil, notRegular(st.Mode())
	}
	if st.Size() > MaxPatchSetSize {
		return nil, tooBig(st.Size())
	}
	f, err := os.OpenFile(file, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, cannotRead(err)
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil {
		return nil, cannotRead(err)
	} else if !st.Mode().IsRegular() {
		return nil, notRegular(st.Mode())
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxPatchSetSize+1))
	if err != nil {
		return nil, cannotRead(err)
	}
	if len(b) > MaxPatchSetSize {
		return nil, tooBig(int64(len(b)))
	}
	return b, nil
}

// files are the sources of every set's file, as hcl's parser returns
// them, for rendering the diagnostics that point into them.
func (l *Library) files() map[string]*hcl.File {
	files := map[string]*hcl.File{}
	for name, src := range l.sources {
		files[name] = &hcl.File{Bytes: src}
	}
	for _, s := range l.Embedded {
		if src, ok := l.source(s.Source); ok {
			files[s.Source] = &hcl.File{Bytes: src}
		}
	}
	return files
}

// targets is the union of the files every set touches.
func (l *Library) targets() []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range l.All() {
		for _, t := range s.Targets() {
			if !seen[t] {
				seen[t] = true
				out = append(out, t)
			}
		}
	}
	sort.Strings(out)
	return out
}

// Source returns the HCL text of the file that declares the named set.
func (l *Library) Source(name string) ([]byte, bool) {
	for _, s := range l.All() {
		if s.Name == name {
			return l.source(s.Source)
		}
	}
	return nil, false
}

// source is the HCL text of a set's file: a user's file as read, an
// embedded one ("embedded:NAME") read from patchsets.FS when asked for.
func (l *Library) source(name string) ([]byte, bool) {
	if src, ok := l.sources[name]; ok {
		return src, true
	}
	if rest, ok := strings.CutPrefix(name, "embedded:"); ok {
		if src, err := fs.ReadFile(patchsets.FS, rest); err == nil {
			return src, true
		}
	}
	return nil, false
}
