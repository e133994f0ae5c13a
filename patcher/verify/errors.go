package verify

import (
	"fmt"

	"github.com/vllm-timings/vllm-timings/patcher/exit"
)

// ExitCodes lists the exit codes of "vllm-timings verify", in the order
// its --help and docs/reliability.md show them. verify owns 20-29 (issue 10 has 28,
// issue 11 29); a new code is a constant below and a row here. 2 is the command's: flags it
// refuses before verify runs.
var ExitCodes = exit.NewTable(
	exit.Entry{Code: exit.OK, Meaning: "every check passed"},
	exit.Entry{Code: exit.Usage, Meaning: "usage error (missing or malformed `--url`, `--llama-swap` without `--model`, bad flag)"},
	exit.Entry{Code: ExitChecksFailed, Meaning: "a response's timings failed a check"},
	exit.Entry{Code: ExitUnreachable, Meaning: "cannot connect (nothing listening, unknown host)"},
	exit.Entry{Code: ExitHTTP, Meaning: "HTTP error status (other than 401/403)"},
	exit.Entry{Code: ExitAuth, Meaning: "auth failure (401/403): pass or fix `--api-key`"},
	exit.Entry{Code: ExitTimeout, Meaning: "a request took longer than `--timeout`"},
	exit.Entry{Code: ExitNotJSON, Meaning: "a body or SSE `data:` line is not JSON"},
	exit.Entry{Code: ExitBroken, Meaning: "the connection broke before the response ended"},
	exit.Entry{Code: ExitNoModel, Meaning: "`/v1/models` lists no model: pass `--model`"},
	exit.Entry{Code: ExitLlamaSwapAPI, Meaning: "`--llama-swap`: no usable activity API there (not llama-swap, or one too old), or no row recorded for a request"},
)

// The codes ExitCodes documents; a new code is a constant here and a row
// there.
const (
	ExitChecksFailed exit.Code = 20
	ExitUnreachable  exit.Code = 21
	ExitHTTP         exit.Code = 22
	ExitAuth         exit.Code = 23
	ExitTimeout      exit.Code = 24
	ExitNotJSON      exit.Code = 25
	ExitBroken       exit.Code = 26
	ExitNoModel      exit.Code = 27
	ExitLlamaSwapAPI exit.Code = 28
)

// errorf is a verify failure: the message says which request failed and
// how, and starts with "verify: ".
func errorf(code exit.Code, cause error, format string, args ...any) *exit.Error {
	return &exit.Error{Code: code, Msg: "verify: " + fmt.Sprintf(format, args...), Err: cause}
}
