package verify

import (
	"fmt"

	"github.com/vllm-timings/vllm-timings/patcher/exit"
)

// ExitCodes lists the exit codes of "vllm-timings verify", in the order
// its --help and docs/reliability.md show them. verify owns 20-29 (issue 10 has 28,
// issue 11 29); a new code is one line here. 2 is the command's: flags it
// refuses before verify runs.
var ExitCodes exit.Table

var (
	_                = ExitCodes.Add(exit.OK, "every check passed")
	_                = ExitCodes.Add(exit.Usage, "usage error (missing or malformed `--url`, `--llama-swap` without `--model`, bad flag)")
	ExitChecksFailed = ExitCodes.Add(20, "a response's timings failed a check")
	ExitUnreachable  = ExitCodes.Add(21, "cannot connect (nothing listening, unknown host)")
	ExitHTTP         = ExitCodes.Add(22, "HTTP error status (other than 401/403)")
	ExitAuth         = ExitCodes.Add(23, "auth failure (401/403): pass or fix `--api-key`")
	ExitTimeout      = ExitCodes.Add(24, "a request took longer than `--timeout`")
	ExitNotJSON      = ExitCodes.Add(25, "a body or SSE `data:` line is not JSON")
	ExitBroken       = ExitCodes.Add(26, "the connection broke before the response ended")
	ExitNoModel      = ExitCodes.Add(27, "`/v1/models` lists no model: pass `--model`")
	ExitLlamaSwapAPI = ExitCodes.Add(28, "`--llama-swap`: no usable activity API there (not llama-swap, or one too old), or no row recorded for a request")
)

// errorf is a verify failure: the message says which request failed and
// how, and starts with "verify: ".
func errorf(code exit.Code, cause error, format string, args ...any) *exit.Error {
	return &exit.Error{Code: code, Msg: "verify: " + fmt.Sprintf(format, args...), Err: cause}
}
