package patcher

import (
	"github.com/vllm-timings/vllm-timings/patcher/codes"
	"github.com/vllm-timings/vllm-timings/patcher/exit"
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
