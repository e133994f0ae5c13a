package patcher

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"github.com/vllm-timings/vllm-timings/patcher/exit"
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

// LoadLibrary parses the embedded patch sets and the user's files. A user
// set with the name of an embedded one replaces it.
func LoadLibrary(userFiles []string) (*Library, error) {
	lib := &Library{sources: map[string][]byte{}}
	var diags hcl.Diagnostics
	embedded, err := fs.Glob(patchsets.FS, "*.hcl")
	if err != nil {
		return nil, err
	}
	sort.Strings(embedded)
	for _, name := range embedded {
		src, err := fs.ReadFile(patchsets.FS, name)
		if err != nil {
			return nil, err
		}
		fn := "embedded:" + name
		lib.sources[fn] = src
		sets, d := spec.Parse(fn, src, spec.Assets{Builtin: patchsets.FS})
		if d.HasErrors() {
			// The embedded sets are tested; failing here is a bug.
			panic("embedded patch set " + name + " is invalid: " + d.Error())
		}
		for _, s := range sets {
			s.Embedded = true
		}
		lib.Embedded = append(lib.Embedded, sets...)
	}
	for _, file := range userFiles {
		src, err := os.ReadFile(file)
		if err != nil {
			return nil, &exit.Error{Code: ExitSpec, Msg: fmt.Sprintf("cannot read patch set %s: %v", file, err), Hint: "Check the --patchset path (inside a container, it must be mounted).", Err: err}
		}
		lib.sources[file] = src
		sets, d := spec.Parse(file, src, spec.Assets{Builtin: patchsets.FS, Local: os.DirFS(filepath.Dir(file))})
		diags = append(diags, d...)
		lib.User = append(lib.User, sets...)
	}
	if diags.HasErrors() {
		return nil, &exit.Error{Code: ExitSpec, Msg: lib.render(diags) + "vllm-timings: the patch set above is invalid; fix the lines shown (the patcher package documents the language)."}
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

// render prints diagnostics with the HCL source lines they point at.
func (l *Library) render(diags hcl.Diagnostics) string {
	files := map[string]*hcl.File{}
	for name, src := range l.sources {
		files[name] = &hcl.File{Bytes: src}
	}
	var b bytes.Buffer
	w := hcl.NewDiagnosticTextWriter(&b, files, 0, false)
	_ = w.WriteDiagnostics(diags)
	return strings.TrimLeft(b.String(), "\n")
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
			src, ok := l.sources[s.Source]
			return src, ok
		}
	}
	return nil, false
}
