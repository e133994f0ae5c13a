package fallback

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// The Python names vLLM is given.
const (
	// Module is the importable name of the embedded module.
	Module = "vllm_timings_fallback"
	// Middleware is the --middleware value.
	Middleware = Module + ".TimingsMiddleware"
	// StatLoggerEntryPoint is the entry point's object, in the
	// vllm.stat_logger_plugins group.
	StatLoggerEntryPoint = Module + ":StatLogger"
)

// Mode says when the fallback is used.
type Mode string

const (
	// Auto: for the parts a vLLM serves that no patch set fits.
	Auto Mode = "auto"
	// Always: for every part, also those the patch gives timings (the
	// middleware then passes the patch's timings through): for measuring
	// it beside the patch.
	Always Mode = "always"
	// Off: never.
	Off Mode = "off"
)

// Modes lists the modes for flag help and errors.
var Modes = []Mode{Auto, Always, Off}

// Parts are the endpoints the fallback is to serve.
type Parts struct {
	Chat      bool // /v1/chat/completions and /v1/completions
	Responses bool // /v1/responses
	Messages  bool // /v1/messages
}

// Any reports whether any part needs the fallback.
func (p Parts) Any() bool { return p.Chat || p.Responses || p.Messages }

// Names are the parts' endpoints, for messages.
func (p Parts) Names() []string {
	var n []string
	if p.Chat {
		n = append(n, "/v1/chat/completions", "/v1/completions")
	}
	if p.Responses {
		n = append(n, "/v1/responses")
	}
	if p.Messages {
		n = append(n, "/v1/messages")
	}
	return n
}

// Serve is how the fallback joins a `vllm serve` command line.
type Serve struct {
	// Parts are the endpoints it serves.
	Parts Parts
	// Args go at the end of the command line: --middleware and the flags
	// the parts need that the user did not give.
	Args []string
	// StatLogger: register the stat logger plugin (engine stats on, the
	// group there, and request ids in its stats).
	StatLogger bool
	// Sources says, in words, where the times come from.
	Sources string
}

// RoutesEnv names the variable in the server's environment that tells the
// module which routes to serve: the paths of [Serve.Parts], separated by
// spaces (the module adds /invocations, which carries any kind, whenever
// it serves one). Every other route goes straight to vLLM's app, untouched
// and unparsed (a full response the patch already gave timings would
// otherwise be held and parsed for nothing). Without it, or with a value
// the module cannot use (a path it does not know, no path), the module
// serves every route; for the latter it also logs a warning.
const RoutesEnv = "VLLM_TIMINGS_FALLBACK_ROUTES"

// Env is env with [RoutesEnv] set to the routes of s.Parts, in place of
// any value it had.
func (s *Serve) Env(env []string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if !strings.HasPrefix(kv, RoutesEnv+"=") {
			out = append(out, kv)
		}
	}
	return append(out, RoutesEnv+"="+strings.Join(s.Parts.Names(), " "))
}

// OffError is a reason the fallback stays off.
type OffError struct{ Why string }

func (e *OffError) Error() string { return e.Why }

func off(format string, args ...any) *OffError { return &OffError{Why: fmt.Sprintf(format, args...)} }

// Plan decides how the fallback joins the command argv (COMMAND and its
// arguments, as exec runs them), for the parts that need it. It returns
// an *OffError when it cannot join, and (nil, nil) when no part needs it.
// readConfig reads a --config file of argv (vLLM's YAML options).
func Plan(f Features, argv []string, parts Parts, mode Mode, readConfig func(string) ([]byte, error)) (*Serve, error) {
	switch mode {
	case Off:
		return nil, nil
	case Always:
		parts = Parts{Chat: true, Responses: true, Messages: true}
	}
	if !parts.Any() {
		return nil, nil
	}
	if !IsServe(argv) {
		return nil, off("the command is not `vllm serve`, so the flags the fallback needs cannot be added to it")
	}
	if !f.Middleware {
		return nil, off("this vLLM has no --middleware option")
	}
	args := argv[1:]
	config := configText(args, readConfig)
	s := &Serve{Parts: parts}
	if !slices.ContainsFunc(args, func(a string) bool { return a == Middleware || a == "--middleware="+Middleware }) {
		s.Args = append(s.Args, "--middleware", Middleware)
	}
	want := func(ok bool, flag string) {
		if ok && !given(args, config, flag) {
			s.Args = append(s.Args, "--"+flag)
		}
	}
	// A usage chunk on every chat and completion stream: the place where
	// the final counts are.
	want(parts.Chat && f.ForceIncludeUsage, "enable-force-include-usage")
	// The cached prompt tokens in usage (chat, completions, and Messages'
	// cache_read_input_tokens; the Responses API reports them anyway).
	want((parts.Chat || parts.Messages) && f.PromptTokensDetails, "enable-prompt-tokens-details")

	stats := !given(args, config, "disable-log-stats")
	s.StatLogger = stats && f.StatLoggerPlugins && f.FinishedRequestIDs
	switch {
	case s.StatLogger:
		s.Sources = "the engine's stats of each request; on streams where they are missing, the API server's clock"
	case !stats:
		s.Sources = "the API server's clock on streams (vLLM keeps no per-request stats); full responses get none"
	case !f.StatLoggerPlugins:
		s.Sources = "the API server's clock on streams (this vLLM has no stat logger plugins); full responses get none"
	default:
		s.Sources = "the API server's clock on streams (this vLLM's finished-request stats carry no request ids); full responses get none"
	}
	if f.PerRequestMetrics && given(args, config, "enable-per-request-metrics") {
		s.Sources = "vLLM's per-request metrics where it sends them; else " + s.Sources
	}
	return s, nil
}

// IsServe reports whether argv runs vLLM's OpenAI server: `vllm serve`,
// or python -m vllm.entrypoints.cli.main serve / vllm.entrypoints.openai.api_server.
func IsServe(argv []string) bool {
	if len(argv) < 2 {
		return false
	}
	if filepath.Base(argv[0]) == "vllm" {
		return argv[1] == "serve"
	}
	if !strings.HasPrefix(filepath.Base(argv[0]), "python") {
		return false
	}
	for i := 1; i < len(argv)-1; i++ {
		switch {
		case argv[i] == "-m" && argv[i+1] == "vllm.entrypoints.openai.api_server":
			return true
		case argv[i] == "-m" && argv[i+1] == "vllm.entrypoints.cli.main":
			return i+2 < len(argv) && argv[i+2] == "serve"
		case strings.HasPrefix(argv[i], "-") && strings.ContainsAny(argv[i][1:], "IE") && !strings.HasPrefix(argv[i], "--"):
			// -I or -E: PYTHONPATH is ignored, the module could not be imported.
			return false
		case !strings.HasPrefix(argv[i], "-"):
			return false
		}
	}
	return false
}

// config is what a --config file says, as text; ok is false when it
// cannot be read, and then nothing is assumed about it.
type config struct {
	text string
	ok   bool
}

func configText(args []string, read func(string) ([]byte, error)) config {
	var path string
	for i, a := range args {
		if a == "--config" && i+1 < len(args) {
			path = args[i+1]
		} else if v, ok := strings.CutPrefix(a, "--config="); ok {
			path = v
		}
	}
	if path == "" {
		return config{ok: true}
	}
	if read == nil {
		return config{}
	}
	data, err := read(path)
	if err != nil {
		return config{}
	}
	return config{text: string(data), ok: true}
}

// given reports whether the user set flag (in its - or _ spelling, with
// or without a value, or its --no- form) on the command line or in the
// --config file. An unreadable config counts as setting everything.
func given(args []string, c config, flag string) bool {
	under := strings.ReplaceAll(flag, "-", "_")
	for _, a := range args {
		name, _, _ := strings.Cut(a, "=")
		switch name {
		case "--" + flag, "--" + under, "--no-" + flag, "--no_" + under:
			return true
		}
	}
	if !c.ok {
		return true
	}
	re := regexp.MustCompile(`(?m)^\s*["']?(` + regexp.QuoteMeta(flag) + `|` + regexp.QuoteMeta(under) + `)["']?\s*:`)
	return re.MatchString(c.text)
}
