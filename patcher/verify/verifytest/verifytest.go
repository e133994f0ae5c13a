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
	// timingsInResponse puts a Responses stream's timings only inside the
	// terminal event's response, not beside it.
	timingsInResponse bool
	// vllmMetrics adds vLLM's per-request metrics (--enable-per-request-
	// metrics) to the responses vLLM gives them (one choice, one prompt):
	// "all" as vLLM computes them, "cleared" without time_to_first_token_ms
	// and mean_itl_ms, as the patch leaves them beside timings.
	vllmMetrics string
	// fallback answers as vllm-timings' fallback middleware on a server
	// without engine stats: full responses without timings and the header
	// x-vllm-timings: none, streams with timings and x-vllm-timings: stream.
	fallback bool
}

var scenarios = map[string]scenario{
	"good": {doc: "correct llama.cpp-shaped timings on every response"},
	"full-cache-hit": {
		doc:          "correct; the repeated prompt is served from the cache entirely (prompt_n 0, rates 0)",
		fullCacheHit: true,
	},
	"no-usage-chunk": {
		doc:          "correct, but streams never carry usage (stream_options ignored)",
		noUsageChunk: true,
	},
	"no-timings": {
		doc:       "no timings anywhere (unpatched vLLM)",
		noTimings: "all",
	},
	"stream-no-timings": {
		doc:       "timings on full responses only, never in streams",
		noTimings: "stream",
	},
	"usage-chunk-without-timings": {
		doc:                    "timings on the finish_reason chunk, then a usage chunk without them",
		timingsNotOnUsageChunk: true,
	},
	"missing-fields": {
		doc:     "timings lack predicted_per_second and cache_n",
		timings: func(t *object, _ *counts) { t.del("predicted_per_second"); t.del("cache_n") },
	},
	"float-count": {
		doc:     "prompt_n sent as 12.0, not an integer",
		timings: func(t *object, c *counts) { t.set("prompt_n", json.Number(fmt.Sprintf("%d.0", c.promptN))) },
	},
	"null-rate": {
		doc:     "prompt_per_second is null (pydantic's way of writing NaN)",
		timings: func(t *object, _ *counts) { t.set("prompt_per_second", nil) },
	},
	"nan": {
		doc:     "prompt_per_second is a bare NaN (Python json.dumps)",
		timings: func(t *object, _ *counts) { t.set("prompt_per_second", nanMark) },
	},
	"infinite": {
		doc:     "predicted_per_token_ms is a bare Infinity",
		timings: func(t *object, _ *counts) { t.set("predicted_per_token_ms", infMark) },
	},
	"negative": {
		doc:     "predicted_ms is negative",
		timings: func(t *object, c *counts) { t.set("predicted_ms", -c.predictedMS) },
	},
	"cache-in-prompt-n": {
		doc: "cached tokens counted in prompt_n (rates consistent with that inflated count)",
		timings: func(t *object, c *counts) {
			c.promptN = c.promptTokens
			t.setRates(c)
		},
	},
	"cache-in-prompt-n-zero-cache": {
		doc: "cache_n always 0 and prompt_n = prompt_tokens, while usage reports cached tokens",
		timings: func(t *object, c *counts) {
			c.promptN, c.cacheN = c.promptTokens, 0
			t.setRates(c)
		},
	},
	"prompt-count": {
		doc: "prompt_n one less than it should be",
		timings: func(t *object, c *counts) {
			c.promptN--
			t.setRates(c)
		},
	},
	"predicted-count": {
		doc: "predicted_n one more than usage.completion_tokens",
		timings: func(t *object, c *counts) {
			c.predictedN++
			t.setRates(c)
		},
	},
	"cache-count": {
		doc: "usage.prompt_tokens_details.cached_tokens is 16 more than cache_n when anything is cached",
		usage: func(u *object, c *counts) {
			if c.cacheN > 0 {
				u.set("prompt_tokens_details", map[string]any{"cached_tokens": c.cacheN + 16})
			}
		},
	},
	"per-second": {
		doc:     "predicted_per_second computed with milliseconds taken for seconds",
		timings: func(t *object, c *counts) { t.set("predicted_per_second", float64(c.predictedN)/c.predictedMS) },
	},
	"per-token-ms": {
		doc:     "prompt_per_token_ms is prompt_n/prompt_ms, inverted",
		timings: func(t *object, c *counts) { t.set("prompt_per_token_ms", float64(c.promptN)/c.promptMS) },
	},
	"zero-rule": {
		doc:          "full cache hit on the repeat, but prompt_per_token_ms is prompt_ms/1 instead of the defined 0",
		fullCacheHit: true,
		timings: func(t *object, c *counts) {
			if c.promptN == 0 {
				c.promptMS = 0.05
				t.setRates(c)
				t.set("prompt_per_token_ms", c.promptMS)
			}
		},
	},
	"wall-time": {
		doc: "predicted_ms of nearly three hours (rates consistent with it)",
		timings: func(t *object, c *counts) {
			c.predictedMS = 1e7
			t.setRates(c)
		},
	},
	"draft": {
		doc:     "draft_n_accepted exceeds draft_n",
		timings: func(t *object, _ *counts) { t.set("draft_n", 4); t.set("draft_n_accepted", 6) },
	},
	"draft-good": {
		doc:     "correct, with speculative decoding fields",
		timings: func(t *object, _ *counts) { t.set("draft_n", 6); t.set("draft_n_accepted", 4) },
	},
	"fallback-no-stats": {
		doc:      "vllm-timings' fallback without engine stats: no timings on full responses (header x-vllm-timings: none), timings on streams",
		fallback: true,
	},
	"responses-timings-in-response": {
		doc:               "a Responses stream's timings only inside response.completed's response, where llama-swap does not look",
		timingsInResponse: true,
	},
	"messages-prompt-from-input-tokens": {
		doc: "on /v1/messages, prompt_n taken as input_tokens - cache_n, though Anthropic's input_tokens already leaves the cache out",
		timings: func(t *object, c *counts) {
			if c.endpoint == "messages" && c.cacheN > 0 {
				c.promptN = max(0, c.promptTokens-c.cacheN-c.createdN-c.cacheN)
				t.setRates(c)
			}
		},
	},
	"vllm-metrics": {
		doc:         "correct timings, and vLLM's per-request metrics in full, as before the patch cleared two of their fields",
		vllmMetrics: "all",
	},
	"vllm-metrics-cleared": {
		doc:         "correct timings, and vLLM's per-request metrics without time_to_first_token_ms and mean_itl_ms",
		vllmMetrics: "cleared",
	},
	"wrong-content-type": {
		doc:               "streams sent as application/json",
		streamContentType: "application/json",
	},
	"auth": {
		doc: "wants Authorization: Bearer " + APIKey + "; correct once given",
		handler: func(w http.ResponseWriter, r *http.Request, _ *request) bool {
			if r.Header.Get("Authorization") == "Bearer "+APIKey {
				return false
			}
			writeError(w, http.StatusUnauthorized, "invalid API key")
			return true
		},
	},
	"forbidden": {
		doc: "403 on every request",
		handler: func(w http.ResponseWriter, _ *http.Request, _ *request) bool {
			writeError(w, http.StatusForbidden, "forbidden")
			return true
		},
	},
	"http-500": {
		doc: "500 on chat completions",
		handler: func(w http.ResponseWriter, r *http.Request, _ *request) bool {
			if r.URL.Path != "/v1/chat/completions" {
				return false
			}
			writeError(w, http.StatusInternalServerError, "engine dead")
			return true
		},
	},
	"no-completions": {
		doc: "404 on /v1/completions",
		handler: func(w http.ResponseWriter, r *http.Request, _ *request) bool {
			if r.URL.Path != "/v1/completions" {
				return false
			}
			http.NotFound(w, r)
			return true
		},
	},
	"not-json": {
		doc: "an HTML page with status 200 on completions",
		handler: func(w http.ResponseWriter, r *http.Request, _ *request) bool {
			if !strings.HasSuffix(r.URL.Path, "completions") {
				return false
			}
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, "<html><body>It works!</body></html>\n")
			return true
		},
	},
	"stream-not-json": {
		doc: "a stream whose data: lines are not JSON",
		handler: func(w http.ResponseWriter, _ *http.Request, req *request) bool {
			if !req.Stream {
				return false
			}
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "data: {\"choices\": [\n\ndata: [DONE]\n\n")
			return true
		},
	},
	"stream-error-event": {
		doc: "streams answer 200, then an error event (vLLM's way of failing mid-stream)",
		handler: func(w http.ResponseWriter, _ *http.Request, req *request) bool {
			if !req.Stream {
				return false
			}
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "data: {\"error\": {\"message\": \"out of KV cache\", \"type\": \"InternalServerError\", \"code\": 500}}\n\ndata: [DONE]\n\n")
			return true
		},
	},
	"broken-stream": {
		doc: "streams break off after two events",
		handler: func(w http.ResponseWriter, _ *http.Request, req *request) bool {
			if !req.Stream {
				return false
			}
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\"}}]}\n\n")
			fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"blue\"}}]}\n\n")
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler)
		},
	},
	"broken-body": {
		doc: "a full response cut off before its Content-Length",
		handler: func(w http.ResponseWriter, r *http.Request, _ *request) bool {
			if !strings.HasSuffix(r.URL.Path, "completions") {
				return false
			}
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", "1000")
			fmt.Fprint(w, `{"id":"cmpl-1","choices":[`)
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler)
		},
	},
	"hang-up": {
		doc: "closes the connection without answering",
		handler: func(w http.ResponseWriter, r *http.Request, _ *request) bool {
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				conn.Close()
			}
			return true
		},
	},
	"hang": {
		doc: "answers /v1/models, then never answers until the client gives up",
		handler: func(w http.ResponseWriter, r *http.Request, _ *request) bool {
			if r.URL.Path == "/v1/models" {
				return false
			}
			<-r.Context().Done()
			return true
		},
	},
	"no-models": {
		doc: "/v1/models lists nothing",
		handler: func(w http.ResponseWriter, r *http.Request, _ *request) bool {
			if r.URL.Path != "/v1/models" {
				return false
			}
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"object":"list","data":[]}`)
			return true
		},
	},
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
	// The Responses API's instructions and input, the Messages API's
	// system.
	Instructions    string `json:"instructions"`
	Input           string `json:"input"`
	System          string `json:"system"`
	MaxOutputTokens int    `json:"max_output_tokens"`
	Prompt          any    `json:"prompt"` // a string or a list of them
	N               int    `json:"n"`
	MaxTokens       int    `json:"max_tokens"`
	Stream          bool   `json:"stream"`
	StreamOptions   *struct {
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
	case r.Method == http.MethodPost && (r.URL.Path == "/v1/responses" || r.URL.Path == "/v1/messages"):
		s.endpoint(w, strings.TrimPrefix(r.URL.Path, "/v1/"), req)
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
	// endpoint is "chat", "completions", "responses" or "messages".
	endpoint string
	// createdN, for /v1/messages, are the prompt tokens written to the
	// prefix cache (whole blocks of 16), which vLLM 0.26 on reports as
	// cache_creation_input_tokens and leaves out of input_tokens.
	createdN int
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
	c := &counts{predictedN: n, endpoint: "completions"}
	if chat {
		c.endpoint = "chat"
	}
	var call, lastCached int
	for _, toks := range prompts {
		c.promptTokens += len(toks)
		lastCached, call = s.prefill(toks)
		c.cacheN += lastCached
	}
	c.promptN = c.promptTokens - c.cacheN
	c.promptMS = 0.01 * float64(c.promptN)
	c.predictedMS = 0.02 * float64(perChoice)

	t := newTimings(c)
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
	if s.sc.noTimings == "all" || (s.sc.noTimings == "stream" && req.Stream) || (s.sc.fallback && !req.Stream) {
		timings = nil
	}
	s.fallbackHeader(w, req)
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

// newTimings is the correct timings object for c, in llama-server's order.
func newTimings(c *counts) *object {
	t := &object{}
	for _, k := range []string{"prompt_n", "prompt_ms", "prompt_per_token_ms", "prompt_per_second", "predicted_n", "predicted_ms", "predicted_per_token_ms", "predicted_per_second", "cache_n"} {
		t.set(k, 0)
	}
	t.setRates(c)
	return t
}

// endpoint answers /v1/responses and /v1/messages as vLLM does: the same
// fake model and prefix cache as chat (the instructions or system prompt
// and the user's message, templated), usage in the endpoint's own meaning
// (the Responses API's input_tokens is the whole prompt; the Messages
// API's leaves out what the cache read and wrote, as vLLM 0.26 on with
// --enable-prompt-tokens-details reports it), and timings on the response
// or message, on a Responses stream's terminal event beside type and
// response, and on a Messages stream's message_delta. Their streams name
// each event on an event: line and end without [DONE].
func (s *server) endpoint(w http.ResponseWriter, api string, req *request) {
	system, user, perChoice := req.Instructions, req.Input, req.MaxOutputTokens
	if api == "messages" {
		system, perChoice = req.System, req.MaxTokens
		if len(req.Messages) > 0 {
			user = req.Messages[len(req.Messages)-1].Content
		}
	}
	if perChoice <= 0 {
		perChoice = 16
	}
	var toks []string
	for _, m := range [][2]string{{"system", system}, {"user", user}} {
		toks = append(toks, "<|"+m[0]+"|>", "<|sep|>", "<|sep|>", "<|end|>")
		toks = append(toks, strings.Fields(m[1])...)
	}
	toks = append(toks, "<|assistant|>")
	c := &counts{endpoint: api, predictedN: perChoice, promptTokens: len(toks)}
	var call int
	c.cacheN, call = s.prefill(toks)
	c.promptN = c.promptTokens - c.cacheN
	c.createdN = max(0, c.promptTokens/16*16-c.cacheN)
	c.promptMS = 0.01 * float64(c.promptN)
	c.predictedMS = 0.02 * float64(perChoice)
	t := newTimings(c)
	metrics := s.metrics(c, 1, perChoice)
	if s.sc.timings != nil {
		s.sc.timings(t, c)
	}
	// The usage of the true counts, as chat would have it, changed by the
	// scenario, then written in the endpoint's terms.
	cu := &object{}
	cu.set("prompt_tokens", c.promptTokens)
	cu.set("completion_tokens", perChoice)
	cu.set("prompt_tokens_details", map[string]any{"cached_tokens": c.cacheN})
	if s.sc.usage != nil {
		s.sc.usage(cu, c)
	}
	prompt, _ := cu.vals["prompt_tokens"].(int)
	cached, _ := cu.vals["prompt_tokens_details"].(map[string]any)["cached_tokens"].(int)
	u := &object{}
	if api == "responses" {
		u.set("input_tokens", prompt)
		u.set("input_tokens_details", map[string]any{"cached_tokens": cached})
		u.set("output_tokens", perChoice)
		u.set("output_tokens_details", map[string]any{"reasoning_tokens": 0})
		u.set("total_tokens", prompt+perChoice)
	} else {
		u.set("input_tokens", max(0, prompt-cached-c.createdN))
		u.set("output_tokens", perChoice)
		u.set("cache_read_input_tokens", cached)
		u.set("cache_creation_input_tokens", c.createdN)
	}
	timings := t
	if s.sc.noTimings == "all" || (s.sc.noTimings == "stream" && req.Stream) || (s.sc.fallback && !req.Stream) {
		timings = nil
	}
	s.fallbackHeader(w, req)
	id := fmt.Sprintf("%s-%d", api, call)
	text := strings.Repeat("blue ", perChoice)
	if api == "responses" {
		resp := func(status string, withUsage bool) *object {
			o := &object{}
			o.set("id", id)
			o.set("object", "response")
			o.set("model", req.Model)
			o.set("status", status)
			if status == "completed" {
				o.set("output", []any{map[string]any{
					"type": "message", "id": "msg-" + id, "role": "assistant", "status": "completed",
					"content": []any{map[string]any{"type": "output_text", "text": text, "annotations": []any{}}},
				}})
			} else {
				o.set("output", []any{})
			}
			if withUsage {
				o.set("usage", u)
			} else {
				o.set("usage", nil)
			}
			return o
		}
		if !req.Stream {
			full := resp("completed", true)
			if metrics != nil {
				full.set("metrics", metrics(true))
			}
			if timings != nil {
				full.set("timings", timings)
			}
			w.Header().Set("Content-Type", "application/json")
			w.Write(encode(full))
			return
		}
		s.streamHeader(w)
		seq := 0
		ev := func(typ string) *object {
			o := &object{}
			o.set("type", typ)
			o.set("sequence_number", seq)
			seq++
			return o
		}
		created := ev("response.created")
		created.set("response", resp("in_progress", false))
		sendEvent(w, "response.created", created)
		for k := 0; k < perChoice; k++ {
			d := ev("response.output_text.delta")
			d.set("item_id", "msg-"+id)
			d.set("output_index", 0)
			d.set("content_index", 0)
			d.set("delta", "blue ")
			sendEvent(w, "response.output_text.delta", d)
		}
		done := ev("response.completed")
		final := resp("completed", true)
		if metrics != nil { // inside the response, where llama-swap does not look
			final.set("metrics", metrics(true))
		}
		done.set("response", final)
		if timings != nil {
			// As the patch sends them: inside the response (where the
			// openai SDK's stream helper looks) and at the top level
			// (where llama-swap does); the scenario drops the second.
			final.set("timings", timings)
			if !s.sc.timingsInResponse {
				done.set("timings", timings)
			}
		}
		sendEvent(w, "response.completed", done)
		return
	}
	msg := func(content []any, stop any, usage *object) *object {
		o := &object{}
		o.set("id", id)
		o.set("type", "message")
		o.set("role", "assistant")
		o.set("content", content)
		o.set("model", req.Model)
		o.set("stop_reason", stop)
		o.set("stop_sequence", nil)
		o.set("usage", usage)
		return o
	}
	if !req.Stream {
		full := msg([]any{map[string]any{"type": "text", "text": text}}, "max_tokens", u)
		if timings != nil {
			full.set("timings", timings)
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(encode(full))
		return
	}
	s.streamHeader(w)
	ev := func(typ string, kv ...any) *object {
		o := &object{}
		o.set("type", typ)
		for i := 0; i+1 < len(kv); i += 2 {
			o.set(kv[i].(string), kv[i+1])
		}
		return o
	}
	// message_start's usage is what vLLM knows before generating.
	startUsage := &object{}
	startUsage.set("input_tokens", c.promptTokens)
	startUsage.set("output_tokens", 0)
	sendEvent(w, "message_start", ev("message_start", "message", msg([]any{}, nil, startUsage)))
	sendEvent(w, "content_block_start", ev("content_block_start", "index", 0, "content_block", map[string]any{"type": "text", "text": ""}))
	for k := 0; k < perChoice; k++ {
		sendEvent(w, "content_block_delta", ev("content_block_delta", "index", 0, "delta", map[string]any{"type": "text_delta", "text": "blue "}))
	}
	sendEvent(w, "content_block_stop", ev("content_block_stop", "index", 0))
	delta := ev("message_delta", "delta", map[string]any{"stop_reason": "max_tokens", "stop_sequence": nil}, "usage", u)
	if timings != nil {
		delta.set("timings", timings)
	}
	sendEvent(w, "message_delta", delta)
	sendEvent(w, "message_stop", ev("message_stop"))
}

// fallbackHeader sets the fallback middleware's header, in the fallback
// scenario.
func (s *server) fallbackHeader(w http.ResponseWriter, req *request) {
	if !s.sc.fallback {
		return
	}
	if req.Stream {
		w.Header().Set("X-Vllm-Timings", "stream")
	} else {
		w.Header().Set("X-Vllm-Timings", "none")
	}
}

func (s *server) streamHeader(w http.ResponseWriter) {
	ct := "text/event-stream"
	if s.sc.streamContentType != "" {
		ct = s.sc.streamContentType
	}
	w.Header().Set("Content-Type", ct)
}

// sendEvent writes one named server-sent event.
func sendEvent(w http.ResponseWriter, name string, o *object) {
	fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, encode(o))
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
