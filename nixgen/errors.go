package nixgen

import (
	"fmt"
	"strconv"

	"github.com/vllm-timings/vllm-timings/patcher/exit"
)

// ExitCodes lists the exit codes of "vllm-timings nix", in the order its
// --help and docs/reliability.md show them. nixgen owns 10-19 and 50-54; a new code
// is one line here. 2 is the command's: flags it refuses before nixgen sees
// them.
var ExitCodes exit.Table

var (
	_                = ExitCodes.Add(exit.Usage, "bad flags: no `--binary` (or one with `--format nix-function`), an unknown `--format` or `--on-failure`, no model name, `--macro` without `=`, a name given twice, `--raw` with nothing after it")
	ExitPath         = ExitCodes.Add(10, "a path that is empty, relative, `/` or not clean (`//`, `/./`, `/../`, trailing `/`)")
	ExitUnprintable  = ExitCodes.Add(11, "a newline or another non-printable character (it would need bash's `$'...'`, which llama-swap cannot split), or invalid UTF-8")
	ExitMacroInPath  = ExitCodes.Add(12, "`${NAME}` or `${env.NAME}` in a path: llama-swap would substitute it or refuse the config")
	ExitUnknownMacro = ExitCodes.Add(13, "a macro llama-swap does not know in that place: undeclared, `${PID}`, `${env.NAME}`")
	ExitColon        = ExitCodes.Add(14, "`:` in a path, which `docker run -v` uses as its separator")
	ExitName         = ExitCodes.Add(15, "an invalid model (Docker container), environment variable or macro name")
	ExitMacroValue   = ExitCodes.Add(16, "a macro value that is empty or not a plain word")
	ExitOption       = ExitCodes.Add(17, "no `--image` (from Go: an empty Binary or Image, an OnFailure other than `warn`/`abort`, or a variable both set and passed through)")
	ExitExpansion    = ExitCodes.Add(18, "a plain serve argument holding a bash expansion (`${...}` other than a macro, or `$NAME`): use `--raw`")
	ExitStatement    = ExitCodes.Add(19, "a `--before` statement that is empty, ends in `;`, `&` or a pipe, or holds a comment; a `--raw` argument with a comment")
	ExitPublish      = ExitCodes.Add(50, "a `--publish` mapping without `${PORT}`")
	ExitForm         = ExitCodes.Add(51, "an option the form cannot use: `--before` or `--raw` with `--entrypoint` or `--venv`, a Docker option with `--venv`")
	ExitHostPort     = ExitCodes.Add(52, "`--venv` without a serve argument that uses `${PORT}`")
)

// errorf is an input that cannot be represented safely in the generated
// fragments: the input as the user wrote it and its value are the
// position, problem is short and lower case ("is not an absolute path"),
// fix full sentences saying what to do instead.
func errorf(code exit.Code, input, value, problem, fix string, args ...any) *exit.Error {
	return &exit.Error{Code: code, Pos: input + " " + strconv.Quote(value), Msg: problem, Hint: fmt.Sprintf(fix, args...)}
}
