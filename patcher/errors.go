package patcher

import (
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"github.com/vllm-timings/vllm-timings/patcher/codes"
	"github.com/vllm-timings/vllm-timings/patcher/exit"
	"github.com/vllm-timings/vllm-timings/patcher/spec"
)

// ExitCodes lists the exit codes of apply, status, revert, diff, doctor
// and exec, in the order `vllm-timings apply --help` and
// docs/reliability.md show them. The codes are declared in package codes
// (a new code is one line there), low enough for every package of the
// patcher; these are their names for callers.
var ExitCodes = codes.Table()

const (
	ExitNotFound        = codes.NotFound
	ExitSpec            = codes.Spec
	ExitMissing         = codes.Missing
	ExitAmbiguous       = codes.Ambiguous
	ExitFS              = codes.FS
	ExitDisagree        = codes.Disagree
	ExitModified        = codes.Modified
	ExitPartial         = codes.Partial
	ExitLocked          = codes.Locked
	ExitCompile         = codes.Compile
	ExitLegacy          = codes.Legacy
	ExitPatchSetFile    = codes.PatchSetFile
	ExitManifest        = codes.Manifest
	ExitLayouts         = codes.Layouts
	ExitVLLMBin         = codes.VLLMBin
	ExitOverlay         = codes.Overlay
	ExitNotExecutable   = codes.NotExecutable
	ExitCommandNotFound = codes.CommandNotFound
)

func errorf(code exit.Code, format string, args ...any) *exit.Error {
	return exit.Errorf(code, format, args...)
}

// DiagnosticAdvice is the Extra of a diagnostic whose remedy names what
// only the command has (its commands and flags): Fact is the diagnostic's
// Detail without the remedy, for the command to follow with its own
// wording of Advice. Detail itself ends with a remedy in plain words.
type DiagnosticAdvice struct {
	Fact   string
	Advice exit.Advice
}

// The errors below carry hcl's diagnostics as data, with the sources they
// point into (as hcl's parser returns them), so that the caller renders
// them: the command prints each with its source lines
// (hcl.NewDiagnosticTextWriter). Each comes wrapped in an *exit.Error
// with its code; errors.As finds it.

// SpecError is a --patchset file that is not a valid patch set.
type SpecError struct {
	Diagnostics hcl.Diagnostics
	Files       map[string]*hcl.File
}

func (e *SpecError) Error() string { return "invalid patch set: " + e.Diagnostics.Error() }

// NoFitError is a vLLM that no set of chat/completions fits.
type NoFitError struct {
	Install *Install
	// Closest is the set with the fewest failures among those that find
	// every file they edit, and Diagnostics are its failures. It is nil
	// when no set finds its files; Needs then says what each needs.
	Closest     *spec.PatchSet
	Diagnostics hcl.Diagnostics
	Files       map[string]*hcl.File
	Needs       []SetNeeds
}

// SetNeeds is a set and the files it edits.
type SetNeeds struct {
	Set   string
	Files []string
}

func (e *NoFitError) Error() string {
	if e.Closest == nil {
		var need []string
		for _, n := range e.Needs {
			need = append(need, n.Set+" needs "+strings.Join(n.Files, ", "))
		}
		return fmt.Sprintf("vLLM %s at %s has a layout no patch set knows: %s", e.Install.Version, e.Install.Dir, strings.Join(need, "; "))
	}
	return fmt.Sprintf("no patch set fits vLLM %s at %s; the closest, %q, fails: %s", e.Install.Version, e.Install.Dir, e.Closest.Name, e.Diagnostics.Error())
}

// PartialError is a vLLM that chat/completions fits while a part it
// serves fits no set, under Options.AllParts: nothing is written.
type PartialError struct {
	Install *Install
	Parts   []UnfitPart
	Files   map[string]*hcl.File
}

// UnfitPart is a part this vLLM serves that no set fits: the set with the
// fewest failures, and its failures.
type UnfitPart struct {
	Part        string
	Closest     *spec.PatchSet
	Diagnostics hcl.Diagnostics
}

// Labels names the parts' endpoints, "/v1/responses and /v1/messages".
func (e *PartialError) Labels() string {
	var labels []string
	for _, p := range e.Parts {
		labels = append(labels, PartLabel(p.Part))
	}
	return strings.Join(labels, " and ")
}

func (e *PartialError) Error() string {
	return fmt.Sprintf("%s fit, %s not, and every part must: nothing was changed", PartLabel(spec.DefaultPart), e.Labels())
}
