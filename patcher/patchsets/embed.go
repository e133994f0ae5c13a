// Package patchsets holds the patch sets and assets built into vllm-timings.
//
// Each *.hcl file here is parsed when sets_gen.go is generated (go
// generate ./patcher/patchsets runs internal/gensets), so no run parses
// them: Embedded returns them as Go values. builtin("name") in a patch set
// reads an asset from this directory (llamacpp_timings.py is the module
// the patch installs as vllm/_llamacpp_timings.py). The test of
// internal/gensets fails while sets_gen.go is not what the *.hcl files
// generate.
package patchsets

import (
	"embed"
	"io/fs"
	"strings"

	"github.com/vllm-timings/vllm-timings/patcher/spec"
)

//go:generate go run ./internal/gensets

// FS holds the embedded patch sets and their assets.
//
//go:embed *.hcl *.py
var FS embed.FS

// Embedded returns the embedded patch sets, in file order, as spec.Parse
// would return them. Each call returns new values.
func Embedded() []*spec.PatchSet { return sets(assets{}) }

// assets holds each embedded asset's content once for the sets of one
// call of Embedded: every set creates the same vllm/_llamacpp_timings.py,
// and copying it for each of them was a tenth of a patched run's
// allocations.
type assets map[string]string

// get is the content of an embedded asset as a create attribute holds it:
// builtin("name") in sets_gen.go.
func (a assets) get(name string) *string {
	if s, ok := a[name]; ok {
		return &s // the same bytes, a pointer of the caller's own
	}
	b, err := fs.ReadFile(FS, name)
	if err != nil {
		panic("sets_gen.go names a missing asset: " + err.Error())
	}
	s := string(b)
	if !strings.HasSuffix(s, "\n") {
		s += "\n" // as spec.Parse stores a create
	}
	a[name] = s
	return &s
}
