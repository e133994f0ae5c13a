package verify

import "fmt"

// Exit codes of verify's own failures. The patcher owns 3–9 and nixgen
// 10–19; 2 is a usage error and 1 anything unexpected.
const (
	// ExitChecksFailed: every request was answered, but at least one
	// response's timings failed a check.
	ExitChecksFailed = 20
	// ExitUnreachable: no connection could be made (refused, no route,
	// unknown host).
	ExitUnreachable = 21
	// ExitHTTP: the server answered with an HTTP error status other than
	// 401 and 403.
	ExitHTTP = 22
	// ExitAuth: the server answered 401 or 403: the API key is missing or
	// wrong.
	ExitAuth = 23
	// ExitTimeout: a request did not complete within --timeout.
	ExitTimeout = 24
	// ExitNotJSON: a body (or an SSE data: line) was not JSON, or not the
	// OpenAI shape verify needs to read it.
	ExitNotJSON = 25
	// ExitBroken: the connection broke before the response ended.
	ExitBroken = 26
	// ExitNoModel: --model was not given and /v1/models listed none.
	ExitNoModel = 27
	// ExitLlamaSwapAPI: with --llama-swap, the server has no usable
	// GET /api/metrics/activity (not llama-swap, or one too old to have it
	// or its fields), or it recorded no activity row for a request.
	ExitLlamaSwapAPI = 28
)

// Error is a verify failure with its exit code.
type Error struct {
	Code int
	Msg  string
	Err  error // underlying cause, if any
}

func (e *Error) Error() string { return "verify: " + e.Msg }
func (e *Error) Unwrap() error { return e.Err }

// ExitCode is the process exit code for this failure.
func (e *Error) ExitCode() int { return e.Code }

func errorf(code int, cause error, format string, args ...any) *Error {
	return &Error{Code: code, Msg: fmt.Sprintf(format, args...), Err: cause}
}
