package verify

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/vllm-timings/vllm-timings/patcher/exit"
)

// FallbackHeader is the response header by which vllm-timings' fallback
// middleware says where a response's timings came from.
const FallbackHeader = "X-Vllm-Timings"

// DefaultTimeout bounds each request. It is long because the first request
// through llama-swap may start the model, and vLLM can take minutes to load.
const DefaultTimeout = 5 * time.Minute

// maxTokens is what each request asks the model to generate: enough for
// predicted_ms and the rates to mean something, few enough to be quick.
const maxTokens = 16

// The endpoints verify can send requests to (--endpoints).
const (
	EndpointChat        = "chat"        // /v1/chat/completions
	EndpointCompletions = "completions" // /v1/completions
	EndpointResponses   = "responses"   // /v1/responses, OpenAI's Responses API
	EndpointMessages    = "messages"    // /v1/messages, the Anthropic Messages API
)

// AllEndpoints lists every endpoint verify knows, in the order its requests
// are sent; DefaultEndpoints are those it sends without --endpoints.
var (
	AllEndpoints     = []string{EndpointChat, EndpointCompletions, EndpointResponses, EndpointMessages}
	DefaultEndpoints = []string{EndpointChat, EndpointCompletions}
)

// CheckEndpoints validates an --endpoints list: known names, each once, at
// least one. It returns the list in AllEndpoints' order.
func CheckEndpoints(list []string) ([]string, error) {
	if len(list) == 0 {
		return nil, fmt.Errorf("--endpoints is empty; give some of %s", strings.Join(AllEndpoints, ","))
	}
	seen := map[string]bool{}
	for _, e := range list {
		e = strings.TrimSpace(e)
		if !slices.Contains(AllEndpoints, e) {
			return nil, fmt.Errorf("--endpoints: unknown endpoint %q; known: %s", e, strings.Join(AllEndpoints, ","))
		}
		if seen[e] {
			return nil, fmt.Errorf("--endpoints: %q is given twice", e)
		}
		seen[e] = true
	}
	var out []string
	for _, e := range AllEndpoints {
		if seen[e] {
			out = append(out, e)
		}
	}
	return out, nil
}

// Options are the inputs of one verify run.
type Options struct {
	URL string // server base URL; see NormalizeURL
	// LlamaSwap, instead of URL, is the base URL of a llama-swap: the
	// requests go through it, and its activity rows for them are checked
	// against the truth (llamaswap.go).
	LlamaSwap string
	// Multi adds requests with n=2 and a two-prompt completion, so several
	// engine requests share one response.
	Multi bool
	// Endpoints are the endpoints to send requests to (AllEndpoints
	// names them); nil means DefaultEndpoints.
	Endpoints []string
	Model     string        // "" means the first id that /v1/models lists
	APIKey    string        // sent as a bearer token if set
	JSON      bool          // print a JSON report instead of the table
	Timeout   time.Duration // per request; 0 means DefaultTimeout

	Stdout io.Writer

	// Nonce starts every prompt, so the first request of a run is new to the
	// server's prefix cache and the repeat shows what the cache did. ""
	// picks a random one; tests set it to get the same requests each time.
	Nonce string
	// Now reads the clock that wall times are measured with; nil is
	// time.Now. Tests use a fake clock so the table is reproducible.
	Now func() time.Time
	// HTTPClient sends the requests; nil is a client with default settings.
	HTTPClient *http.Client
}

// Request is one of the requests verify sends.
type Request struct {
	Name         string `json:"name"`
	Path         string `json:"path"`
	Endpoint     string `json:"endpoint"` // one of AllEndpoints
	Chat         bool   `json:"-"`
	Stream       bool   `json:"stream"`
	IncludeUsage bool   `json:"include_usage"`
	// Repeats names the earlier request whose prompt this one sends again.
	Repeats string `json:"repeats,omitempty"`
	// N is the number of choices (n), 0 for one; Prompts the number of
	// prompts of a completion, 0 for one (user, then user2).
	N       int `json:"n,omitempty"`
	Prompts int `json:"prompts,omitempty"`
	system  string
	user    string
	user2   string
}

// Result is what verify found for one request.
type Result struct {
	Request
	WallMS   float64   `json:"wall_ms"`
	Timings  any       `json:"timings"`         // as sent, NaN and Infinity as strings
	Usage    *Usage    `json:"usage,omitempty"` // nil if the response carried none
	Failures []Finding `json:"failures"`
	Notes    []Finding `json:"notes"`
	// LlamaSwap is what llama-swap recorded, with --llama-swap.
	LlamaSwap *SwapCheck `json:"llama_swap,omitempty"`
	// Source is where vllm-timings' fallback middleware took the timings
	// from, as its x-vllm-timings header says: patch (they were there),
	// metrics, engine, clock or none on a full response, stream on a
	// stream (its headers leave before its end). "" without the fallback.
	Source string `json:"source,omitempty"`

	parsed  Timings
	metrics map[string]any // vLLM's own per-request metrics, if sent
}

// Passed reports whether every check passed.
func (r *Result) Passed() bool { return len(r.Failures) == 0 }

// context is a paragraph long enough to fill several KV-cache blocks (vLLM
// caches prefixes in blocks of 16 tokens), so a repeated prompt can show
// cached tokens.
const contextText = `You are checking a language model server. Timings matter: the
prompt is processed first, then tokens are generated one by one. A prefix cache keeps the
keys and values of prompts it has seen, so a prompt that starts the same way as an earlier
one is processed faster, and the cached tokens are reported apart from the evaluated ones.
Answer briefly and plainly, in one short sentence, without lists or headings.`

// plan is the list of requests to the given endpoints (nil: the
// default ones), in the order they are sent; multi adds those where
// several engine requests share one response (chat and completions only:
// the Responses and Messages APIs have no n and one prompt).
func plan(nonce string, multi bool, endpoints []string) []Request {
	if endpoints == nil {
		endpoints = DefaultEndpoints
	}
	system := "Run " + nonce + ". " + contextText
	const chat, cmpl, resp, msgs = "/v1/chat/completions", "/v1/completions", "/v1/responses", "/v1/messages"
	var p []Request
	add := func(endpoint string, rqs ...Request) {
		if !slices.Contains(endpoints, endpoint) {
			return
		}
		for _, rq := range rqs {
			rq.Endpoint, rq.system = endpoint, system
			rq.Chat = endpoint == EndpointChat
			p = append(p, rq)
		}
	}
	add(EndpointChat,
		Request{Name: "chat", Path: chat, user: "Name a colour of the sky."},
		Request{Name: "chat repeat", Path: chat, Repeats: "chat", user: "Name a colour of the sky."},
		Request{Name: "chat stream+usage", Path: chat, Stream: true, IncludeUsage: true, user: "Name a fruit."},
		Request{Name: "chat stream", Path: chat, Stream: true, user: "Name a tree."})
	add(EndpointCompletions,
		Request{Name: "completion", Path: cmpl, user: "A colour of the sea is"},
		Request{Name: "completion stream+usage", Path: cmpl, Stream: true, IncludeUsage: true, user: "A kind of bird is"})
	// Responses and Messages streams always end with their usage.
	add(EndpointResponses,
		Request{Name: "responses", Path: resp, user: "Name a colour of the grass."},
		Request{Name: "responses repeat", Path: resp, Repeats: "responses", user: "Name a colour of the grass."},
		Request{Name: "responses stream", Path: resp, Stream: true, IncludeUsage: true, user: "Name a river."})
	add(EndpointMessages,
		Request{Name: "messages", Path: msgs, user: "Name a colour of snow."},
		Request{Name: "messages repeat", Path: msgs, Repeats: "messages", user: "Name a colour of snow."},
		Request{Name: "messages stream", Path: msgs, Stream: true, IncludeUsage: true, user: "Name a mountain."})
	if !multi {
		return p
	}
	add(EndpointChat,
		Request{Name: "chat n=2", Path: chat, N: 2, user: "Name a colour."},
		Request{Name: "chat n=2 stream+usage", Path: chat, N: 2, Stream: true, IncludeUsage: true, user: "Name a bird."},
		Request{Name: "chat n=2 stream", Path: chat, N: 2, Stream: true, user: "Name a flower."})
	add(EndpointCompletions,
		Request{Name: "completion n=2", Path: cmpl, N: 2, user: "A kind of fish is"},
		Request{Name: "completion n=2 stream+usage", Path: cmpl, N: 2, Stream: true, IncludeUsage: true, user: "A kind of stone is"},
		Request{Name: "completion n=2 stream", Path: cmpl, N: 2, Stream: true, user: "A kind of tree is"},
		Request{Name: "completion 2 prompts", Path: cmpl, Prompts: 2, user: "The sea is", user2: "The sky is"},
		Request{Name: "completion 2 prompts stream+usage", Path: cmpl, Prompts: 2, Stream: true, IncludeUsage: true, user: "A road is", user2: "A hill is"})
	return p
}

func (rq Request) payload(model string) map[string]any {
	switch rq.Endpoint {
	case EndpointResponses:
		// store false: nothing for the server to keep.
		return map[string]any{
			"model": model, "instructions": rq.system, "input": rq.user,
			"max_output_tokens": maxTokens, "temperature": 0, "stream": rq.Stream, "store": false,
		}
	case EndpointMessages:
		return map[string]any{
			"model": model, "system": rq.system,
			"messages":   []map[string]string{{"role": "user", "content": rq.user}},
			"max_tokens": maxTokens, "temperature": 0, "stream": rq.Stream,
		}
	}
	p := map[string]any{
		"model":       model,
		"max_tokens":  maxTokens,
		"temperature": 0,
		"stream":      rq.Stream,
	}
	if rq.N > 1 {
		// Several samples of one prompt: sampled, seeded.
		p["n"], p["temperature"], p["seed"] = rq.N, 1.0, 7
	}
	switch {
	case rq.Chat:
		p["messages"] = []map[string]string{
			{"role": "system", "content": rq.system},
			{"role": "user", "content": rq.user},
		}
	case rq.Prompts == 2:
		p["prompt"] = []string{rq.system + "\n\n" + rq.user, rq.system + "\n\n" + rq.user2}
	default:
		p["prompt"] = rq.system + "\n\n" + rq.user
	}
	// vLLM rejects stream_options on a request that does not stream.
	if rq.Stream && rq.IncludeUsage {
		p["stream_options"] = map[string]any{"include_usage": true}
	}
	return p
}

// Report is the outcome of a run.
type Report struct {
	URL       string    `json:"url"`
	LlamaSwap bool      `json:"llama_swap,omitempty"` // URL is a llama-swap whose rows were checked
	Model     string    `json:"model"`
	Planned   int       `json:"-"` // requests in the plan
	Results   []*Result `json:"results"`
	Passed    bool      `json:"passed"`
	// Error and ExitCode are set when the run stopped before all requests
	// were answered.
	Error    string    `json:"error,omitempty"`
	ExitCode exit.Code `json:"exit_code"`
}

// Run sends the requests, checks every answer and prints the report. It
// returns nil only if every check passed; otherwise an *exit.Error whose Code
// says what went wrong.
func Run(ctx context.Context, o Options) error {
	if o.Stdout == nil {
		o.Stdout = io.Discard
	}
	rep, err := Collect(ctx, o)
	if rep != nil {
		if o.JSON {
			if werr := writeJSON(o.Stdout, rep); werr != nil {
				return werr
			}
		} else if len(rep.Results) > 0 {
			writeTable(o.Stdout, rep)
		}
	}
	return err
}

// Collect sends the requests and checks the answers without printing. The
// report holds the results so far even when it returns an error.
func Collect(ctx context.Context, o Options) (*Report, error) {
	raw := o.URL
	if o.LlamaSwap != "" {
		raw = o.LlamaSwap
	}
	base, err := NormalizeURL(raw)
	if err != nil {
		return nil, err
	}
	c := &client{base: base, apiKey: o.APIKey, timeout: o.Timeout, http: o.HTTPClient, now: o.Now}
	if c.timeout <= 0 {
		c.timeout = DefaultTimeout
	}
	if c.http == nil {
		c.http = &http.Client{}
	}
	if c.now == nil {
		c.now = time.Now
	}
	nonce := o.Nonce
	if nonce == "" {
		var b [4]byte
		_, _ = rand.Read(b[:])
		nonce = hex.EncodeToString(b[:])
	}

	requests := plan(nonce, o.Multi, o.Endpoints)
	rep := &Report{URL: base, LlamaSwap: o.LlamaSwap != "", Model: o.Model, Planned: len(requests)}
	fail := func(err error) (*Report, error) {
		rep.Error = err.Error()
		if e, ok := err.(*exit.Error); ok {
			rep.ExitCode = e.Code
		} else {
			rep.ExitCode = 1
		}
		return rep, err
	}
	if rep.Model == "" {
		m, err := firstModel(ctx, c)
		if err != nil {
			return fail(err)
		}
		rep.Model = m
	}
	var sw *swap
	if o.LlamaSwap != "" {
		if sw, err = openSwap(ctx, c); err != nil {
			return fail(err)
		}
	}

	byName := map[string]*Result{}
	for _, rq := range requests {
		res, err := send(ctx, c, rq, rep.Model)
		if err != nil {
			return fail(err)
		}
		if sw != nil {
			if err := sw.check(ctx, res, rep.Model); err != nil {
				return fail(err)
			}
		}
		if rq.Repeats != "" {
			noteRepeat(res, byName[rq.Repeats])
		}
		byName[rq.Name] = res
		rep.Results = append(rep.Results, res)
	}
	failed := 0
	for _, r := range rep.Results {
		if !r.Passed() {
			failed++
		}
	}
	rep.Passed = failed == 0
	if failed > 0 {
		what := "the timings checks"
		if sw != nil {
			what = "the timings checks or llama-swap's rows"
		}
		return fail(errorf(ExitChecksFailed, nil, "%d of %d responses failed %s", failed, len(rep.Results), what))
	}
	return rep, nil
}

// firstModel asks /v1/models for the first model id.
func firstModel(ctx context.Context, c *client) (string, error) {
	resp, err := c.do(ctx, http.MethodGet, "/v1/models", nil)
	if err != nil {
		return "", err
	}
	v, _, err := decodeJSON(resp.body)
	if err != nil {
		return "", errorf(ExitNotJSON, err, "GET /v1/models: the body is not JSON: %v%s", err, bodyStart(resp.body))
	}
	obj, _ := v.(map[string]any)
	data, ok := obj["data"].([]any)
	if !ok {
		return "", errorf(ExitNotJSON, nil, "GET /v1/models: no \"data\" list in the answer; pass --model")
	}
	for _, m := range data {
		if mo, ok := m.(map[string]any); ok {
			if id, ok := mo["id"].(string); ok && id != "" {
				return id, nil
			}
		}
	}
	return "", errorf(ExitNoModel, nil, "GET /v1/models lists no model; pass --model")
}

// send sends one request and checks its answer.
func send(ctx context.Context, c *client, rq Request, model string) (*Result, error) {
	what := "POST " + rq.Path
	resp, err := c.do(ctx, http.MethodPost, rq.Path, rq.payload(model))
	if err != nil {
		return nil, err
	}
	res := &Result{Request: rq, WallMS: resp.wallMS, Failures: []Finding{}, Notes: []Finding{}}
	res.Source = resp.header.Get(FallbackHeader)
	var in checkInput
	in.wallMS = resp.wallMS
	present := false // a timings key was found, maybe null
	if rq.Stream {
		if ct := resp.header.Get("Content-Type"); !strings.Contains(ct, "text/event-stream") {
			res.Failures = append(res.Failures, Finding{CheckContentType, fmt.Sprintf("the stream's Content-Type is %q: llama-swap reads timings from a stream only when it is text/event-stream", ct)})
		}
		st, err := parseStream(resp.body)
		if err != nil {
			return nil, errorf(ExitNotJSON, err, "%s (stream): %v", what, err)
		}
		// vLLM reports an error that happens mid-stream as an event with
		// an "error" object after the 200 status.
		for _, ev := range st.events {
			e, ok := ev.obj["error"]
			if ev.obj["type"] == "error" && !ok { // the Responses API's error event
				e, ok = ev.obj, true
			}
			if ok && e != nil {
				b, _ := json.Marshal(map[string]any{"error": cleanMarkers(e)})
				return nil, errorf(ExitHTTP, nil, "%s (stream): the server sent an error event%s", what, excerpt(b))
			}
		}
		// The Responses and Messages APIs end their streams with their
		// own last event (response.completed, message_stop), not [DONE].
		if !st.done && (rq.Endpoint == EndpointChat || rq.Endpoint == EndpointCompletions) {
			res.Notes = append(res.Notes, Finding{NoteNoDone, "the stream ended without data: [DONE]"})
		}
		switch {
		case st.timingsLine < 0:
			res.Failures = append(res.Failures, Finding{CheckTimingsMissing, fmt.Sprintf("no data: line of the stream (%d events) carries timings%s", len(st.events), missingHint(rq))})
		case st.swapLine != st.timingsLine:
			res.Failures = append(res.Failures, Finding{CheckLlamaSwapLine, fmt.Sprintf("timings are on event %d but event %d, later, carries usage without timings: llama-swap reads only the last "+
				"event with usage or timings, so it would show no speeds",
				st.timingsLine+1, st.swapLine+1)})
		}
		if st.timingsLine >= 0 {
			ev := st.events[st.timingsLine]
			present = true
			in.timings = ev.obj["timings"]
			in.nonStandard = ev.nonStandard
		}
		for _, ev := range st.events {
			if m, ok := ev.obj["metrics"].(map[string]any); ok {
				res.metrics = m
			}
		}
		if st.usageLine >= 0 {
			u, bad := parseUsage(eventUsage(st.events[st.usageLine].obj), rq.Endpoint)
			res.Usage = u
			res.Failures = append(res.Failures, bad...)
		}
	} else {
		v, nonStandard, err := decodeJSON(resp.body)
		if err != nil {
			return nil, errorf(ExitNotJSON, err, "%s: the body is not JSON: %v%s", what, err, bodyStart(resp.body))
		}
		obj, ok := v.(map[string]any)
		if !ok {
			return nil, errorf(ExitNotJSON, nil, "%s: the body is %s, not an OpenAI response object", what, describe(v))
		}
		if _, ok := obj["timings"]; ok {
			present = true
			in.timings = obj["timings"]
			in.nonStandard = nonStandard
		} else if res.Source == "none" {
			res.Notes = append(res.Notes, Finding{NoteFallbackNoSource, "no timings: vllm-timings' fallback serves " + rq.Path +
				" here, and this server keeps no engine stats it can match to a full response (--disable-log-stats, or a vLLM " +
				"before 0.20); a full response's split into prompt and generation time is not guessed, so llama-swap shows its " +
				"row from usage, without speeds"})
		} else {
			res.Failures = append(res.Failures, Finding{CheckTimingsMissing, "the response has no timings" + missingHint(rq)})
		}
		if u, ok := obj["usage"]; ok && u != nil {
			pu, bad := parseUsage(u, rq.Endpoint)
			res.Usage = pu
			res.Failures = append(res.Failures, bad...)
		}
		res.metrics, _ = obj["metrics"].(map[string]any)
	}
	// A stream without include_usage carries no usage by design.
	if res.Usage == nil && (!rq.Stream || rq.IncludeUsage) {
		msg := "the response carries no usage, so the counts could not be compared"
		switch {
		case rq.Stream && (rq.Endpoint == EndpointResponses || rq.Endpoint == EndpointMessages):
			msg = "no event of the stream carried usage (a Responses stream's terminal event, a Messages stream's message_delta), so the counts could not be compared"
		case rq.IncludeUsage:
			msg = "the request asked for stream_options.include_usage but no event carried usage, so the counts could not be compared"
		}
		res.Notes = append(res.Notes, Finding{NoteNoUsage, msg})
	}
	if present {
		in.usage = res.Usage
		if rq.Prompts > 1 && res.Usage != nil && res.Usage.CachedTokens != nil {
			// vLLM fills cached_tokens from one prompt only, while cache_n
			// sums every prompt's.
			u := *res.Usage
			u.CachedTokens = nil
			in.usage = &u
			res.Notes = append(res.Notes, Finding{NoteOnePromptCached, fmt.Sprintf("usage.prompt_tokens_details.cached_tokens (%d) counts one prompt of %d (vLLM does so); cache_n is not "+
				"compared with it", *res.Usage.CachedTokens, rq.Prompts)})
		}
		var fails []Finding
		res.parsed, fails = checkTimings(in)
		res.Failures = append(res.Failures, fails...)
		res.Timings = cleanMarkers(in.timings)
		if res.metrics != nil && len(fails) == 0 {
			notes, bad := predictSwap(res.parsed, res.metrics)
			res.Notes = append(res.Notes, notes...)
			res.Failures = append(res.Failures, bad...)
		}
	}
	return res, nil
}

// missingHint names the usual causes of absent timings.
func missingHint(rq Request) string {
	switch rq.Endpoint {
	case EndpointResponses, EndpointMessages:
		return fmt.Sprintf(" (not patched; or apply left %s out, which \"vllm-timings status\" shows per endpoint; or vLLM runs with "+
			"--disable-log-stats, which leaves the patch no per-request stats)", rq.Path)
	}
	return " (not patched, or vLLM runs with --disable-log-stats, which leaves the patch no per-request stats)"
}

// noteRepeat says when a repeated prompt shows no cached tokens. It is a note,
// not a failure: prefix caching may be off.
func noteRepeat(res, first *Result) {
	if res == nil || first == nil {
		return
	}
	if cn, ok := res.parsed.get("cache_n"); ok && cn == 0 {
		res.Notes = append(res.Notes, Finding{NoteNoCacheHit, fmt.Sprintf("cache_n is 0 although this request repeats %q: the server's prefix cache is off or did not keep the prompt", res.Repeats)})
	}
}

// bodyStart quotes the start of a body that should have been JSON.
func bodyStart(b []byte) string {
	s := strings.TrimSpace(string(b))
	if s == "" {
		return " (the body is empty)"
	}
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 80 {
		s = s[:80] + "…"
	}
	return fmt.Sprintf(" (it starts %q)", s)
}

// event is one decoded SSE data: line.
type event struct {
	obj         map[string]any
	nonStandard bool
}

// stream is a parsed SSE body.
type stream struct {
	events      []event
	done        bool
	timingsLine int // last event with a timings key, -1 if none
	usageLine   int // last event with a non-null usage, -1 if none
	swapLine    int // last event with a usage or timings key: what llama-swap reads
}

// parseStream reads an SSE body the way llama-swap does: every line that
// starts with "data:" after trimming space is an event; other lines (event:,
// id:, comments) are ignored.
func parseStream(body []byte) (*stream, error) {
	st := &stream{timingsLine: -1, usageLine: -1, swapLine: -1}
	for i, line := range bytes.Split(body, []byte("\n")) {
		line = bytes.TrimSpace(line)
		data, ok := bytes.CutPrefix(line, []byte("data:"))
		if !ok {
			continue
		}
		data = bytes.TrimSpace(data)
		if len(data) == 0 {
			continue
		}
		if string(data) == "[DONE]" {
			st.done = true
			continue
		}
		v, nonStandard, err := decodeJSON(data)
		if err != nil {
			return nil, fmt.Errorf("line %d is not JSON: %v (%.80q)", i+1, err, data)
		}
		obj, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("line %d is %s, not an object", i+1, describe(v))
		}
		n := len(st.events)
		st.events = append(st.events, event{obj, nonStandard})
		_, hasT := obj["timings"]
		_, hasU := obj["usage"]
		if hasT {
			st.timingsLine = n
		}
		if eventUsage(obj) != nil {
			st.usageLine = n
		}
		if hasT || hasU {
			st.swapLine = n
		}
	}
	if len(st.events) == 0 {
		return nil, fmt.Errorf("no data: line in the body%s", bodyStart(body))
	}
	return st, nil
}

// eventUsage is an event's usage where llama-swap looks for one (its
// usagePaths): at the top (chat, completions, a Messages message_delta),
// in "response" (a Responses event) or in "message" (a Messages
// message_start). nil if there is none.
func eventUsage(obj map[string]any) any {
	if u := obj["usage"]; u != nil {
		return u
	}
	for _, k := range []string{"response", "message"} {
		if inner, ok := obj[k].(map[string]any); ok && inner["usage"] != nil {
			return inner["usage"]
		}
	}
	return nil
}

// cleanMarkers turns NaN/Infinity markers back into readable strings for the
// JSON report.
func cleanMarkers(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = cleanMarkers(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = cleanMarkers(e)
		}
		return out
	case string:
		if isMarker(x) {
			return markerName(x)
		}
	}
	return v
}
