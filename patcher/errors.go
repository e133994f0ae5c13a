package patcher

import "github.com/vllm-timings/vllm-timings/patcher/exit"

// ExitCodes lists the exit codes of apply, status, revert, diff and doctor,
// in the order `vllm-timings apply --help` and docs/reliability.md show them. A new
// code is one line here (issue 14 has 30-35, issue 13 36-39).
var ExitCodes exit.Table

var (
	_             = ExitCodes.Add(exit.OK, "success, also \"already patched\", a served `/v1/responses` or `/v1/messages` that fits no patch set (the parts that fit applied, a warning naming it) and any problem under `--on-failure warn`")
	_             = ExitCodes.Add(exit.Internal, "internal error")
	_             = ExitCodes.Add(exit.Usage, "command-line usage error")
	ExitNotFound  = ExitCodes.Add(3, "vLLM not found, or its layout matches no patch set")
	ExitSpec      = ExitCodes.Add(4, "invalid patch set (`.hcl`), with file, line and a fix")
	ExitMissing   = ExitCodes.Add(5, "an anchor matched nothing in the target file")
	ExitAmbiguous = ExitCodes.Add(6, "an anchor matched more than once")
	ExitFS        = ExitCodes.Add(7, "cannot write: read-only or missing directory, permissions, a symlink out of the package")
	ExitDisagree  = ExitCodes.Add(8, "several of your `--patchset` sets fit and disagree")
	ExitModified  = ExitCodes.Add(9, "files changed in a way no patch set explains (broken markers, a foreign file)")

	ExitPartial = ExitCodes.Add(29, "`--all-parts`: chat/completions fit, but `/v1/responses` or `/v1/messages`, which this vLLM serves, fits no patch set: nothing written (without `--all-parts` the parts that fit are applied, exit 0)")

	ExitLocked       = ExitCodes.Add(30, "another vllm-timings run holds the lock (`vllm/.vllm-timings.lock`) longer than `--lock-wait`")
	ExitCompile      = ExitCodes.Add(31, "the patched code would not compile; nothing was written")
	ExitLegacy       = ExitCodes.Add(32, "the tree holds edits of the older `patch_timings` scripts; `apply --take-over` replaces them")
	ExitPatchSetFile = ExitCodes.Add(33, "a `--patchset` file is not a regular file (a device, a FIFO, a directory) or is larger than 1 MiB")
	ExitManifest     = ExitCodes.Add(34, "`vllm/.vllm-timings.json` is unreadable or written by a newer vllm-timings")
	ExitLayouts      = ExitCodes.Add(35, "files of several vLLM layouts exist and nothing tells which one is installed")

	ExitVLLMBin = ExitCodes.Add(36, "`--vllm-bin` (or `exec`'s `vllm` command) leads to no vLLM: no such program, not a Python console script, a missing `#!` interpreter, or no `vllm` in its site-packages")
	ExitOverlay = ExitCodes.Add(37, "`--overlay DIR` cannot be used: not writable, not a directory, inside the vllm package, `:` in the path, or holding files the overlay did not write")
	// exec's, as shells have them; once COMMAND runs, its status is the process's.
	ExitNotExecutable   = ExitCodes.Add(126, "`exec`: COMMAND was found but cannot be executed")
	ExitCommandNotFound = ExitCodes.Add(127, "`exec`: COMMAND was not found (or its `#!` interpreter is missing)")
)

func errorf(code exit.Code, format string, args ...any) *exit.Error {
	return exit.Errorf(code, format, args...)
}
