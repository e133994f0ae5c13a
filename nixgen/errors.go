package nixgen

import (
	"fmt"
	"strconv"

	"github.com/vllm-timings/vllm-timings/patcher/exit"
)

// ExitCodes lists the exit codes of "vllm-timings nix", in the order its
// --help and docs/reliability.md show them. nixgen owns 10-19 and 50-54; a new code
// is a constant below and a row here. 2 is the command's: flags it refuses before nixgen sees
// them.
var ExitCodes = exit.NewTable(
	exit.Entry{Code: exit.Usage, Meaning: "bad flags: no `--binary` (or one with `--format nix-function`), an unknown `--format` or `--on-failure`, no " +
		"model name, `--macro` without `=`, a name given twice, `--raw` with nothing after it"},
	exit.Entry{Code: ExitPath, Meaning: "a path that is empty, relative, `/` or not clean (`//`, `/./`, `/../`, trailing `/`)"},
	exit.Entry{Code: ExitUnprintable, Meaning: "a newline or another non-printable character (it would need bash's `$'...'`, which llama-swap cannot split), or invalid UTF-8"},
	exit.Entry{Code: ExitMacroInPath, Meaning: "`${NAME}` or `${env.NAME}` in a path: llama-swap would substitute it or refuse the config"},
	exit.Entry{Code: ExitUnknownMacro, Meaning: "a macro llama-swap does not know in that place: undeclared, `${PID}`, `${env.NAME}`"},
	exit.Entry{Code: ExitColon, Meaning: "`:` in a path, which `docker run -v` uses as its separator"},
	exit.Entry{Code: ExitName, Meaning: "an invalid model (Docker container), environment variable or macro name"},
	exit.Entry{Code: ExitMacroValue, Meaning: "a macro value that is empty or not a plain word"},
	exit.Entry{Code: ExitOption, Meaning: "no `--image` (from Go: an empty Binary or Image, an OnFailure other than `warn`/`abort`, or a variable both set and passed through)"},
	exit.Entry{Code: ExitExpansion, Meaning: "a plain serve argument holding a bash expansion (`${...}` other than a macro, or `$NAME`): use `--raw`"},
	exit.Entry{Code: ExitStatement, Meaning: "a `--before` statement that is empty, ends in `;`, `&` or a pipe, or holds a comment; a `--raw` argument with a comment"},
	exit.Entry{Code: ExitPublish, Meaning: "a `--publish` mapping without `${PORT}`"},
	exit.Entry{Code: ExitForm, Meaning: "an option the form cannot use: `--before` or `--raw` with `--entrypoint` or `--venv`, a Docker option with `--venv`"},
	exit.Entry{Code: ExitHostPort, Meaning: "`--venv` without a serve argument that uses `${PORT}`"},
)

// The codes ExitCodes documents; a new code is a constant here and a row
// there.
const (
	ExitPath         exit.Code = 10
	ExitUnprintable  exit.Code = 11
	ExitMacroInPath  exit.Code = 12
	ExitUnknownMacro exit.Code = 13
	ExitColon        exit.Code = 14
	ExitName         exit.Code = 15
	ExitMacroValue   exit.Code = 16
	ExitOption       exit.Code = 17
	ExitExpansion    exit.Code = 18
	ExitStatement    exit.Code = 19
	ExitPublish      exit.Code = 50
	ExitForm         exit.Code = 51
	ExitHostPort     exit.Code = 52
)

// errorf is an input that cannot be represented safely in the generated
// fragments: the input as the user wrote it and its value are the
// position, problem is short and lower case ("is not an absolute path"),
// fix full sentences saying what to do instead.
func errorf(code exit.Code, input, value, problem, fix string, args ...any) *exit.Error {
	return &exit.Error{Code: code, Pos: input + " " + strconv.Quote(value), Msg: problem, Hint: fmt.Sprintf(fix, args...)}
}
