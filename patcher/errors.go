package patcher

import "fmt"

// Kind classifies a failure; each kind has its own process exit code,
// listed in the README and in `vllm-timings --help`.
type Kind int

const (
	KindInternal  Kind = 1 // a bug or an unexpected I/O error
	KindNotFound  Kind = 3 // no vLLM installation, or no patch set knows its layout
	KindSpec      Kind = 4 // a patch set (.hcl) is invalid
	KindMissing   Kind = 5 // an anchor matched nothing
	KindAmbiguous Kind = 6 // an anchor matched more than once
	KindFS        Kind = 7 // a file cannot be written (read-only, permissions, symlink out of the package)
	KindDisagree  Kind = 8 // several patch sets fit and would write different files
	KindModified  Kind = 9 // the files were changed in a way no patch set explains

	KindLocked       Kind = 30 // another run holds the lock past the wait
	KindCompile      Kind = 31 // the patched code would not compile
	KindLegacy       Kind = 32 // the older patch_timings scripts edited the tree
	KindPatchSetFile Kind = 33 // a --patchset file is not a regular file, or too large
	KindManifest     Kind = 34 // vllm/.vllm-timings.json is unreadable or from a newer vllm-timings
	KindLayouts      Kind = 35 // files of several vLLM layouts, and nothing tells which is installed
)

// ExitCodes documents every exit code, for help texts and the README.
var ExitCodes = []struct {
	Code    int
	Meaning string
}{
	{0, "success (also: already patched, nothing to do; or --on-failure warn)"},
	{1, "internal error"},
	{2, "command-line usage error"},
	{int(KindNotFound), "vLLM not found, or its layout matches no patch set"},
	{int(KindSpec), "invalid patch set (.hcl)"},
	{int(KindMissing), "an anchor matched nothing in the target file"},
	{int(KindAmbiguous), "an anchor matched more than once"},
	{int(KindFS), "cannot write: read-only or missing directory, permissions, or a symlink leading out of the vllm package"},
	{int(KindDisagree), "several patch sets fit and disagree"},
	{int(KindModified), "files changed in a way no patch set explains (broken markers, foreign file)"},
	{int(KindLocked), "another vllm-timings run holds the lock (vllm/.vllm-timings.lock) longer than --lock-wait"},
	{int(KindCompile), "the patched code would not compile; nothing was written"},
	{int(KindLegacy), "the tree holds edits of the older patch_timings scripts; apply --take-over replaces them"},
	{int(KindPatchSetFile), "a --patchset file is not a regular file or is larger than 1 MiB"},
	{int(KindManifest), "vllm/.vllm-timings.json is unreadable or written by a newer vllm-timings"},
	{int(KindLayouts), "files of several vLLM layouts exist and nothing tells which one is installed"},
}

// Error is a failure with its kind and a message meant for the user. The
// message may span several lines (rendered diagnostics).
type Error struct {
	Kind Kind
	Msg  string
}

func (e *Error) Error() string { return e.Msg }

// ExitCode is the process exit code for this failure.
func (e *Error) ExitCode() int { return int(e.Kind) }

func errorf(k Kind, format string, args ...any) *Error {
	return &Error{Kind: k, Msg: fmt.Sprintf(format, args...)}
}
