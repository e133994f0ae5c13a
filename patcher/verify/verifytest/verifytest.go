// Package verifytest serves fake OpenAI-compatible answers for testing
// verify: correct llama.cpp-shaped timings, and named scenarios that each
// break them, or the connection, in one known way.
//
// The fake model counts one token per whitespace-separated word (plus four
// per chat message for the template), always generates max_tokens tokens per
// choice, and keeps a prefix cache in blocks of 16 tokens, like vLLM's. It
// answers n choices and lists of prompts as vLLM does: usage counts the
// prompt once for n>1, and for several prompts reports the cached tokens of
// the last one only. Its durations are small (well under a millisecond per
// request), so they fit inside the real time any client waits.
package verifytest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"sync"
)

// Model is the id /v1/models lists.
const Model = "fake-model"

// APIKey is the key the "auth" scenario wants.
const APIKey = "secret"

// scenario describes how one named server deviates from a correct one.
type scenario struct {
	doc string
	// timings changes every timings object before it is sent.
	timings func(t *object, c *counts)
	// usage changes every usage object before it is sent.
	usage func(u *object, c *counts)
	// handler, if set, answers instead of the normal handler; returning
	// false falls through to it.
	handler func(w http.ResponseWriter, r *http.Request, req *request) bool
	// noTimings leaves timings out of: "all", "stream".
	noTimings string
	// timingsNotOnUsageChunk puts the timings on the finish_reason chunk even
	// when a usage chunk follows.
	timingsNotOnUsageChunk bool
	noUsageChunk           bool
	streamContentType      string
	fullCacheHit           bool
	// vllmMetrics adds vLLM's per-request metrics (--enable-per-request-
	// metrics) to the responses vLLM gives them (one choice, one prompt):
	// "all" as vLLM computes them, "cleared" without time_to_first_token_ms
	// and mean_itl_ms, as the patch leaves them beside timings.
	vllmMetrics string
}

var scenarios = map[string]scenario{
	"good": {doc: "correct llama.cpp-shaped timings on every response"},
	"full-cache-hit": {doc: "correct; the repeated prompt is served from the cache entirely (prompt_n 0, rates 0)",
		fullCacheHit: true},
	"no-usage-chunk": {doc: "correct, but streams never carry usage (stream_options ignored)",
		noUsageChunk: true},
	"no-timings": {doc: "no timings anywhere (unpatched vLLM)",
		noTimings: "all"},
	"stream-no-timings": {doc: "timings on full responses only, never in streams",
		noTimings: "stream"},
	"usage-chunk-without-timings": {doc: "timings on the finish_reason chunk, then a usage chunk without them",
		timingsNotOnUsageChunk: true},
	"missing-fields": {doc: "timings lack predicted_per_second and cache_n",
		timings: func(t *object, _ *counts) { t.del("predicted_per_second"); t.del("cache_n") }},
	"float-count": {doc: "prompt_n sent as 12.0, not an integer",
		timings: func(t *object, c *counts) { t.set("prompt_n", json.Number(fmt.Sprintf("%d.0", c.promptN))) }},
	"null-rate": {doc: "prompt_per_second is null (pydantic's way of writing NaN)",
		timings: func(t *object, _ *counts) { t.set("prompt_per_second", nil) }},
	"nan": {doc: "prompt_per_second is a bare NaN (Python json.dumps)",
		timings: func(t *object, _ *counts) { t.set("prompt_per_second", nanMark) }},
	"infinite": {doc: "predicted_per_token_ms is a bare Infinity",
		timings: func(t *object, _ *counts) { t.set("predicted_per_token_ms", infMark) }},
	"negative": {doc: "predicted_ms is negative",
		timings: func(t *object, c *counts) { t.set("predicted_ms", -c.predictedMS) }},
	"cache-in-prompt-n": {doc: "cached tokens counted in prompt_n (rates consistent with that inflated count)",
		timings: func(t *object, c *counts) {
			c.promptN = c.promptTokens
			t.setRates(c)
		}},
	"cache-in-prompt-n-zero-cache": {doc: "cache_n always 0 and prompt_n = prompt_tokens, while usage reports cached tokens",
		timings: func(t *object, c *counts) {
			c.promptN, c.cacheN = c.promptTokens, 0
			t.setRates(c)
		}},
	"prompt-count": {doc: "prompt_n one less than it should be",
		timings: func(t *object, c *counts) {
			c.promptN--
			t.setRates(c)
		}},
	"predicted-count": {doc: "predicted_n one more than usage.completion_tokens",
		timings: func(t *object, c *counts) {
			c.predictedN++
			t.setRates(c)
		}},
	"cache-count": {doc: "usage.prompt_tokens_details.cached_tokens is 16 more than cache_n when anything is cached",
		usage: func(u *object, c *counts) {
			if c.cacheN > 0 {
				u.set("prompt_tokens_details", map[string]any{"cached_tokens": c.cacheN + 16})
			}
		}},
	"per-second": {doc: "predicted_per_second computed with milliseconds taken for seconds",
		timings: func(t *object, c *counts) { t.set("predicted_per_second", float64(c.predictedN)/c.predictedMS) }},
	"per-token-ms": {doc: "prompt_per_token_ms is prompt_n/prompt_ms, inverted",
		timings: func(t *object, c *counts) { t.set("prompt_per_token_ms", float64(c.promptN)/c.promptMS) }},
	"zero-rule": {doc: "full cache hit on the repeat, but prompt_per_token_ms is prompt_ms/1 instead of the defined 0",
		fullCacheHit: true,
		timings: func(t *object, c *counts) {
			if c.promptN == 0 {
				c.promptMS = 0.05
				t.setRates(c)
				t.set("prompt_per_token_ms", c.promptMS)
			}
		}},
	"wall-time": {doc: "predicted_ms of nearly three hours (rates consistent with it)",
		timings: func(t *object, c *counts) {
			c.predictedMS = 1e7
			t.setRates(c)
		}},
	"draft": {doc: "draft_n_accepted exceeds draft_n",
		timings: func(t *object, _ *counts) { t.set("draft_n", 4); t.set("draft_n_accepted", 6) }},
	"draft-good": {doc: "correct, with speculative decoding fields",
		timings: func(t *object, _ *counts) { t.set("draft_n", 6); t.set("draft_n_accepted", 4) }},
	"vllm-metrics": {doc: "correct timings, and vLLM's per-request metrics in full, as before the patch cleared two of their fields",
		vllmMetrics: "all"},
	"vllm-metrics-cleared": {doc: "correct timings, and vLLM's per-request metrics without time_to_first_token_ms and mean_itl_ms",
		vllmMetrics: "cleared"},
	"wrong-content-type": {doc: "streams sent as application/json",
		streamContentType: "application/json"},
	"auth": {doc: "wants Authorization: Bearer " + APIKey + "; correct once given",
		handler: func(w http.ResponseWriter, r *http.Request, _ *request) bool {
			if r.Header.Get("Authorization") == "Bearer "+APIKey {
				return false
			}
			writeError(w, http.StatusUnauthorized, "invalid API key")
			return true
		}},
	"forbidden": {doc: "403 on every request",
		handler: func(w http.ResponseWriter, _ *http.Request, _ *request) bool {
			writeError(w, http.StatusForbidden, "forbidden")
			return true
		}},
	"http-500": {doc: "500 on chat completions",
		handler: func(w http.ResponseWriter, r *http.Request, _ *request) bool {
			if r.URL.Path != "/v1/chat/completions" {
				return false
			}
			writeError(w, http.StatusInternalServerError, "engine dead")
			return true
		}},
	"no-completions": {doc: "404 on /v1/completions",
		handler: func(w http.ResponseWriter, r *http.Request, _ *request) bool {
			if r.URL.Path != "/v1/completions" {
				return false
			}
			http.NotFound(w, r)
			return true
		}},
	"not-json": {doc: "an HTML page with status 200 on completions",
		handler: func(w http.ResponseWriter, r *http.Request, _ *request) bool {
			if !strings.HasSuffix(r.URL.Path, "completions") {
				return false
			}
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, "<html><body>It works!</body></html>\n")
			return true
		}},
	"stream-not-json": {doc: "a stream whose data: lines are not JSON",
		handler: func(w http.ResponseWriter, _ *http.Request, req *request) bool {
			if !req.Stream {
				return false
			}
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "data: {\"choices\": [\n\ndata: [DONE]\n\n")
			return true
		}},
	"stream-error-event": {doc: "streams answer 200, then an error event (vLLM's way of failing mid-stream)",
		handler: func(w http.ResponseWriter, _ *http.Request, req *request) bool {
			if !req.Stream {
				return false
			}
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "data: {\"error\": {\"message\": \"out of KV cache\", \"type\": \"InternalServerError\", \"code\": 500}}\n\ndata: [DONE]\n\n")
			return true
		}},
	"broken-stream": {doc: "streams break off after two events",
		handler: func(w http.ResponseWriter, _ *http.Request, req *request) bool {
			if !req.Stream {
				return false
			}
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\"}}]}\n\n")
			fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"blue\"}}]}\n\n")
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler)
		}},
	"broken-body": {doc: "a full response cut off before its Content-Length",
		handler: func(w http.ResponseWriter, r *http.Request, _ *request) bool {
			if !strings.HasSuffix(r.URL.Path, "completions") {
				return false
			}
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", "1000")
			fmt.Fprint(w, `{"id":"cmpl-1","choices":[`)
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler)
		}},
	"hang-up": {doc: "closes the connection without answering",
		handler: func(w http.ResponseWriter, r *http.Request, _ *request) bool {
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				conn.Close()
			}
			return true
		}},
	"hang": {doc: "answers /v1/models, then never answers until the client gives up",
		handler: func(w http.ResponseWriter, r *http.Request, _ *request) bool {
			if r.URL.Path == "/v1/models" {
				return false
			}
			<-r.Context().Done()
			return true
		}},
	"no-models": {doc: "/v1/models lists nothing",
		handler: func(w http.ResponseWriter, r *http.Request, _ *request) bool {
			if r.URL.Path != "/v1/models" {
				return false
			}
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"object":"list","data":[]}`)
			return true
		}},
}

// Scenarios lists the scenario names, sorted.
func Scenarios() []string {
	names := make([]string, 0, len(scenarios))
	for n := range scenarios {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Doc says what a scenario does.
func Doc(name string) string { return scenarios[name].doc }

// NewServer starts a server on 127.0.0.1 for the named scenario. The caller
// closes it.
func NewServer(name string) (*httptest.Server, error) {
	h, err := Handler(name)
	if err != nil {
		return nil, err
	}
	return httptest.NewServer(h), nil
}

// Handler answers as the named scenario does.
func Handler(name string) (http.Handler, error) {
	sc, ok := scenarios[name]
	if !ok {
		return nil, fmt.Errorf("verifytest: no scenario %q (have %s)", name, strings.Join(Scenarios(), ", "))
	}
	return &server{sc: sc}, nil
}

type server struct {
	sc    scenario
	mu    sync.Mutex
	seen  [][]string // earlier prompts, as tokens
	calls int
}

type request struct {
	Model    string `json:"model"`
	Messages []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"messages"`
	Prompt        any  `json:"prompt"` // a string or a list of them
	N             int  `json:"n"`
	MaxTokens     int  `json:"max_tokens"`
	Stream        bool `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	req := &request{}
	if r.Method == http.MethodPost {
		if err := json.NewDecoder(r.Body).Decode(req); err != nil {
			writeError(w, http.StatusBadRequest, "bad JSON: "+err.Error())
			return
		}
	}
	if s.sc.handler != nil && s.sc.handler(w, r, req) {
		return
	}
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/v1/models":
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"object":"list","data":[{"id":%q,"object":"model","owned_by":"verifytest"}]}`, Model)
	case r.Method == http.MethodPost && (r.URL.Path == "/v1/chat/completions" || r.URL.Path == "/v1/completions"):
		s.complete(w, r.URL.Path == "/v1/chat/completions", req)
	default:
		writeError(w, http.StatusNotFound, "no route "+r.Method+" "+r.URL.Path)
	}
}

func writeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg, "code": status}})
	w.Write(b)
}

// counts are the numbers one response's timings and usage are made from.
type counts struct {
	promptTokens, cacheN, promptN, predictedN int
	promptMS, predictedMS                     float64
}

// prompts are the request's prompts, each as tokens of the fake tokenizer.
func (req *request) prompts(chat bool) [][]string {
	if !chat {
		switch p := req.Prompt.(type) {
		case []any:
			var out [][]string
			for _, one := range p {
				s, _ := one.(string)
				out = append(out, strings.Fields(s))
			}
			return out
		default:
			s, _ := p.(string)
			return [][]string{strings.Fields(s)}
		}
	}
	var toks []string
	for _, m := range req.Messages {
		toks = append(toks, "<|"+m.Role+"|>", "<|sep|>", "<|sep|>", "<|end|>")
		toks = append(toks, strings.Fields(m.Content)...)
	}
	return [][]string{append(toks, "<|assistant|>")}
}

// prefill looks the prompt up in the prefix cache and remembers it.
func (s *server) prefill(toks []string) (cached, call int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	call = s.calls
	for _, old := range s.seen {
		n := 0
		for n < len(old) && n < len(toks) && old[n] == toks[n] {
			n++
		}
		cached = max(cached, n)
	}
	if s.sc.fullCacheHit && cached == len(toks) {
		return cached, call
	}
	cached -= cached % 16
	if cached == len(toks) { // vLLM always computes the last prompt token
		cached -= 16
	}
	s.seen = append(s.seen, slices.Clone(toks))
	return max(cached, 0), call
}

func (s *server) complete(w http.ResponseWriter, chat bool, req *request) {
	prompts := req.prompts(chat)
	perChoice := req.MaxTokens
	if perChoice <= 0 {
		perChoice = 16
	}
	choices := max(req.N, 1)
	n := perChoice * choices * len(prompts)
	c := &counts{predictedN: n}
	var call, lastCached int
	for _, toks := range prompts {
		c.promptTokens += len(toks)
		lastCached, call = s.prefill(toks)
		c.cacheN += lastCached
	}
	c.promptN = c.promptTokens - c.cacheN
	c.promptMS = 0.01 * float64(c.promptN)
	c.predictedMS = 0.02 * float64(perChoice)

	t := &object{}
	t.set("prompt_n", c.promptN)
	t.set("prompt_ms", c.promptMS)
	t.set("prompt_per_token_ms", 0.0)
	t.set("prompt_per_second", 0.0)
	t.set("predicted_n", c.predictedN)
	t.set("predicted_ms", c.predictedMS)
	t.set("predicted_per_token_ms", 0.0)
	t.set("predicted_per_second", 0.0)
	t.set("cache_n", c.cacheN)
	t.setRates(c)
	trueCache := c.cacheN
	if len(prompts) > 1 {
		trueCache = lastCached // vLLM reports the last prompt's only
	}
	metrics := s.metrics(c, choices*len(prompts), perChoice)
	if s.sc.timings != nil {
		s.sc.timings(t, c)
	}
	// usage comes from the true counts, not from what a scenario changed.
	u := &object{}
	u.set("prompt_tokens", c.promptTokens)
	u.set("completion_tokens", n)
	u.set("total_tokens", c.promptTokens+n)
	u.set("prompt_tokens_details", map[string]any{"cached_tokens": trueCache})
	if s.sc.usage != nil {
		s.sc.usage(u, c)
	}

	timings := t
	if s.sc.noTimings == "all" || (s.sc.noTimings == "stream" && req.Stream) {
		timings = nil
	}
	id := fmt.Sprintf("cmpl-%d", call)
	text := strings.Repeat("blue ", perChoice)
	total := choices * len(prompts)
	if !req.Stream {
		resp := &object{}
		resp.set("id", id)
		var list []any
		for i := 0; i < total; i++ {
			if chat {
				list = append(list, map[string]any{"index": i, "message": map[string]any{"role": "assistant", "content": text}, "finish_reason": "length"})
			} else {
				list = append(list, map[string]any{"index": i, "text": text, "finish_reason": "length"})
			}
		}
		if chat {
			resp.set("object", "chat.completion")
		} else {
			resp.set("object", "text_completion")
		}
		resp.set("model", req.Model)
		resp.set("choices", list)
		resp.set("usage", u)
		if metrics != nil {
			resp.set("metrics", metrics(true))
		}
		if timings != nil {
			resp.set("timings", timings)
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(encode(resp))
		return
	}

	ct := "text/event-stream"
	if s.sc.streamContentType != "" {
		ct = s.sc.streamContentType
	}
	w.Header().Set("Content-Type", ct)
	includeUsage := req.StreamOptions != nil && req.StreamOptions.IncludeUsage && !s.sc.noUsageChunk
	chunk := func(choice map[string]any) *object {
		o := &object{}
		o.set("id", id)
		if chat {
			o.set("object", "chat.completion.chunk")
		} else {
			o.set("object", "text_completion")
		}
		o.set("model", req.Model)
		if choice == nil {
			o.set("choices", []any{})
		} else {
			o.set("choices", []any{choice})
		}
		return o
	}
	send := func(o *object) { fmt.Fprintf(w, "data: %s\n\n", encode(o)) }
	delta := func(i int, d map[string]any, finish any) map[string]any {
		if chat {
			return map[string]any{"index": i, "delta": d, "finish_reason": finish}
		}
		return map[string]any{"index": i, "text": d["content"], "finish_reason": finish}
	}
	if chat {
		for i := 0; i < total; i++ {
			send(chunk(delta(i, map[string]any{"role": "assistant", "content": ""}, nil)))
		}
	}
	for k := 0; k < perChoice-1; k++ {
		for i := 0; i < total; i++ {
			send(chunk(delta(i, map[string]any{"content": "blue "}, nil)))
		}
	}
	for i := 0; i < total; i++ {
		last := chunk(delta(i, map[string]any{"content": "blue "}, "length"))
		if i == total-1 && timings != nil && (!includeUsage || s.sc.timingsNotOnUsageChunk) {
			last.set("timings", timings)
		}
		send(last)
	}
	if includeUsage {
		uc := chunk(nil)
		uc.set("usage", u)
		if metrics != nil {
			uc.set("metrics", metrics(false))
		}
		if timings != nil && !s.sc.timingsNotOnUsageChunk {
			uc.set("timings", timings)
		}
		send(uc)
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// metrics returns, for a scenario with vLLM's per-request metrics and a
// response they belong on (one engine request), what vLLM writes: full
// bodies keep unknown fields as null, stream chunks leave them out.
func (s *server) metrics(c *counts, requests, perChoice int) func(full bool) *object {
	if s.sc.vllmMetrics == "" || requests != 1 {
		return nil
	}
	return func(full bool) *object {
		m := &object{}
		put := func(k string, v float64, known bool) {
			switch {
			case known:
				m.set(k, v)
			case full:
				m.set(k, nil)
			}
		}
		cleared := s.sc.vllmMetrics == "cleared"
		put("time_to_first_token_ms", c.promptMS, !cleared)
		put("generation_time_ms", c.predictedMS, true)
		put("queue_time_ms", 0.0, true)
		put("mean_itl_ms", c.predictedMS/float64(perChoice-1), !cleared && perChoice > 1)
		put("tokens_per_second", float64(perChoice)*1000/(c.promptMS+c.predictedMS), true)
		return m
	}
}

// setRates recomputes the rates from c, as llama.cpp does, with 0 when a
// count or duration is 0.
func (t *object) setRates(c *counts) {
	t.set("prompt_n", c.promptN)
	t.set("prompt_ms", c.promptMS)
	t.set("predicted_n", c.predictedN)
	t.set("predicted_ms", c.predictedMS)
	t.set("cache_n", c.cacheN)
	perTok := func(ms float64, n int) float64 {
		if n == 0 || ms == 0 {
			return 0
		}
		return ms / float64(n)
	}
	perSec := func(ms float64, n int) float64 {
		if n == 0 || ms == 0 {
			return 0
		}
		return float64(n) * 1000 / ms
	}
	t.set("prompt_per_token_ms", perTok(c.promptMS, c.promptN))
	t.set("prompt_per_second", perSec(c.promptMS, c.promptN))
	t.set("predicted_per_token_ms", perTok(c.predictedMS, c.predictedN))
	t.set("predicted_per_second", perSec(c.predictedMS, c.predictedN))
}

// object is a JSON object that keeps its keys in order, so the fake answers
// read like llama-server's.
type object struct {
	keys []string
	vals map[string]any
}

func (o *object) set(k string, v any) {
	if o.vals == nil {
		o.vals = map[string]any{}
	}
	if _, ok := o.vals[k]; !ok {
		o.keys = append(o.keys, k)
	}
	o.vals[k] = v
}

func (o *object) del(k string) {
	if _, ok := o.vals[k]; !ok {
		return
	}
	delete(o.vals, k)
	o.keys = slices.DeleteFunc(o.keys, func(s string) bool { return s == k })
}

func (o *object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range o.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		vb, err := json.Marshal(o.vals[k])
		if err != nil {
			return nil, err
		}
		b.Write(kb)
		b.WriteByte(':')
		b.Write(vb)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// Bare NaN and Infinity cannot come out of encoding/json; these strings are
// swapped for them after encoding.
const (
	nanMark = "\x00verifytest-NaN"
	infMark = "\x00verifytest-Infinity"
)

func encode(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	b = bytes.ReplaceAll(b, []byte(`"\u0000verifytest-NaN"`), []byte("NaN"))
	b = bytes.ReplaceAll(b, []byte(`"\u0000verifytest-Infinity"`), []byte("Infinity"))
	return b
}
