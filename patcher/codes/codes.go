// Package codes is the patcher's exit codes: those of apply, status,
// revert, diff, doctor and exec. It sits below every package of the
// patcher, so that finding vLLM (patcher/find), the write
// (patcher/write) and the compile check (patcher/compile) fail with the
// same codes the patcher documents. Package patcher re-exports each code
// under its Exit name (patcher.ExitNotFound is codes.NotFound).
package codes

import "github.com/vllm-timings/vllm-timings/patcher/exit"

// The codes; Table says what each means. A new code is a constant here
// and a row in Table.
const (
	NotFound     exit.Code = 3
	Spec         exit.Code = 4
	Missing      exit.Code = 5
	Ambiguous    exit.Code = 6
	FS           exit.Code = 7
	Disagree     exit.Code = 8
	Modified     exit.Code = 9
	Partial      exit.Code = 29
	Locked       exit.Code = 30
	Compile      exit.Code = 31
	Legacy       exit.Code = 32
	PatchSetFile exit.Code = 33
	Manifest     exit.Code = 34
	Layouts      exit.Code = 35
	VLLMBin      exit.Code = 36
	Overlay      exit.Code = 37
	// exec's, as shells have them; once COMMAND runs, its status is the process's.
	NotExecutable   exit.Code = 126
	CommandNotFound exit.Code = 127
)

// Table lists the codes in the order `vllm-timings apply --help` and
// docs/reliability.md show them.
func Table() exit.Table {
	return exit.NewTable(
		exit.Entry{Code: exit.OK, Meaning: "success, also \"already patched\", a served `/v1/responses` or `/v1/messages` that fits no patch set (the " +
			"parts that fit applied, a warning naming it) and any problem under `--on-failure warn`"},
		exit.Entry{Code: exit.Internal, Meaning: "internal error"},
		exit.Entry{Code: exit.Usage, Meaning: "command-line usage error"},
		exit.Entry{Code: NotFound, Meaning: "vLLM not found, or its layout matches no patch set"},
		exit.Entry{Code: Spec, Meaning: "invalid patch set (`.hcl`), with file, line and a fix"},
		exit.Entry{Code: Missing, Meaning: "an anchor matched nothing in the target file"},
		exit.Entry{Code: Ambiguous, Meaning: "an anchor matched more than once"},
		exit.Entry{Code: FS, Meaning: "cannot write: read-only or missing directory, permissions, a symlink out of the package"},
		exit.Entry{Code: Disagree, Meaning: "several of your `--patchset` sets fit and disagree"},
		exit.Entry{Code: Modified, Meaning: "files changed in a way no patch set explains (broken markers, a foreign file)"},
		exit.Entry{Code: Partial, Meaning: "`--all-parts`: chat/completions fit, but `/v1/responses` or `/v1/messages`, which this vLLM serves, fits no " +
			"patch set: nothing written (without `--all-parts` the parts that fit are applied, exit 0)"},
		exit.Entry{Code: Locked, Meaning: "another vllm-timings run holds the lock (`vllm/.vllm-timings.lock`) longer than `--lock-wait`"},
		exit.Entry{Code: Compile, Meaning: "the patched code would not compile; nothing was written"},
		exit.Entry{Code: Legacy, Meaning: "the tree holds edits of the older `patch_timings` scripts; `apply --take-over` replaces them"},
		exit.Entry{Code: PatchSetFile, Meaning: "a `--patchset` file is not a regular file (a device, a FIFO, a directory) or is larger than 1 MiB"},
		exit.Entry{Code: Manifest, Meaning: "`vllm/.vllm-timings.json` is unreadable or written by a newer vllm-timings"},
		exit.Entry{Code: Layouts, Meaning: "files of several vLLM layouts exist and nothing tells which one is installed"},
		exit.Entry{Code: VLLMBin, Meaning: "`--vllm-bin` (or `exec`'s `vllm` command) leads to no vLLM: no such program, not a Python console script, a " +
			"missing `#!` interpreter, or no `vllm` in its site-packages"},
		exit.Entry{Code: Overlay, Meaning: "`--overlay DIR` cannot be used: not writable, not a directory, inside the vllm package, `:` in the path, or holding files the overlay did not write"},
		exit.Entry{Code: NotExecutable, Meaning: "`exec`: COMMAND was found but cannot be executed"},
		exit.Entry{Code: CommandNotFound, Meaning: "`exec`: COMMAND was not found (or its `#!` interpreter is missing)"},
	)
}

// Advice the patcher gives with an error, for the command to word with its
// own flags (the error's Hint says the same without them).
const (
	// AdviceOverlay: the package is read-only to this user; patched
	// copies can go into an overlay directory, or the patch can be made
	// where the package is writable, or the server can start without
	// timings.
	AdviceOverlay exit.Advice = "overlay"
	// AdviceLockWait: another run holds the tree's lock; wait longer.
	AdviceLockWait exit.Advice = "lock-wait"
	// AdviceTakeOverApply, AdviceTakeOverRevert: the older scripts'
	// edits are in the tree; taking them over removes them exactly before
	// applying (reverting).
	AdviceTakeOverApply  exit.Advice = "take-over-apply"
	AdviceTakeOverRevert exit.Advice = "take-over-revert"
	// AdviceTakeOverInPlace: an overlay cannot take the older scripts'
	// edits over; taking them over in place can.
	AdviceTakeOverInPlace exit.Advice = "take-over-in-place"
	// AdviceOneUserSet: two of the user's sets fit and disagree; pass one.
	AdviceOneUserSet exit.Advice = "one-user-set"
	// AdviceSeparateParts: sets of two parts write one file differently.
	AdviceSeparateParts exit.Advice = "separate-parts"
	// AdviceManifest: the manifest is unreadable; remove it and run again.
	AdviceManifest exit.Advice = "manifest"
	// AdviceFindVLLM: vLLM was not found; name the program the server
	// runs or the package directory.
	AdviceFindVLLM exit.Advice = "find-vllm"
	// AdviceVLLMBin: the program named leads nowhere; name the right one
	// (or the package).
	AdviceVLLMBin exit.Advice = "vllm-bin"
	// AdviceVLLMScript: the program named is not the vllm console script.
	AdviceVLLMScript exit.Advice = "vllm-script"
	// AdvicePatchSetPath: a user's patch set file cannot be read; check
	// the path given.
	AdvicePatchSetPath exit.Advice = "patchset-path"
	// AdviceOverlayRerun: writing the overlay failed midway; apply it
	// again, or revert it.
	AdviceOverlayRerun exit.Advice = "overlay-rerun"
	// AdviceOverlayHook (on patcher.OverlayView, a clause): the overlay's
	// hook is missing; apply the overlay again.
	AdviceOverlayHook exit.Advice = "overlay-hook"
	// AdviceAnchorMissing, AdviceRequireMissing (on a diagnostic, as
	// patcher.DiagnosticAdvice): an anchor or a required statement is not
	// in this vLLM; see what each set covers, or adapt and pass a set.
	AdviceAnchorMissing  exit.Advice = "anchor-missing"
	AdviceRequireMissing exit.Advice = "require-missing"
)
