package nixgen

import (
	"fmt"
	"strconv"
)

// Exit codes of the nixgen errors. The patcher uses 3..9; nixgen owns 10..19
// and 50..54.
const (
	// ExitPath: a path is empty, relative, the root directory or not clean.
	ExitPath = 10
	// ExitUnprintable: text holds a newline, another control character, a
	// non-printable or invalid UTF-8 character.
	ExitUnprintable = 11
	// ExitMacroInPath: a path holds ${NAME} or ${env.NAME}, which llama-swap
	// would substitute or refuse.
	ExitMacroInPath = 12
	// ExitUnknownMacro: a word uses a macro that llama-swap would not know in
	// cmd (undeclared, ${PID}, ${env.NAME}).
	ExitUnknownMacro = 13
	// ExitColon: a path holds ":", which docker run -v uses as a separator.
	ExitColon = 14
	// ExitName: a model, environment variable or macro name is not valid.
	ExitName = 15
	// ExitMacroValue: a macro's value cannot be pasted into the command safely.
	ExitMacroValue = 16
	// ExitOption: an option has a value outside its set, is missing or is
	// given twice.
	ExitOption = 17
	// ExitExpansion: a plain serve argument holds a bash expansion (${...}
	// or $NAME) that quoting would pass on unexpanded.
	ExitExpansion = 18
	// ExitStatement: bash text (a before statement or a raw argument) that
	// cannot be placed in the command: empty, ending in ";" "&" or "|", or
	// holding a comment that would hide the rest of the command.
	ExitStatement = 19
	// ExitPublish: the port mapping does not publish ${PORT}.
	ExitPublish = 50
	// ExitForm: options that do not fit the chosen form (bash -c, the
	// image's own entrypoint, or a host virtualenv without Docker).
	ExitForm = 51
	// ExitHostPort: a host virtualenv model whose vllm serve arguments do
	// not listen on ${PORT}.
	ExitHostPort = 52
)

// Error is an input that cannot be represented safely in the generated
// fragments. It names the input, says what is wrong with it and what to do.
type Error struct {
	Code    int    // one of the Exit* constants
	Input   string // which input, as the user wrote it: "--mount", "serve argument 2"
	Value   string // the offending value
	Problem string // short, lower case: "is not an absolute path"
	Fix     string // full sentences: what to do instead
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s %s: %s. %s", e.Input, strconv.Quote(e.Value), e.Problem, e.Fix)
}

// ExitCode is the process exit code for this error.
func (e *Error) ExitCode() int { return e.Code }

func errorf(code int, input, value, problem, fix string, args ...any) *Error {
	return &Error{Code: code, Input: input, Value: value, Problem: problem, Fix: fmt.Sprintf(fix, args...)}
}
