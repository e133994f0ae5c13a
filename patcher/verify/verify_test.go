package verify_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vllm-timings/vllm-timings/patcher/exit"
	"github.com/vllm-timings/vllm-timings/patcher/verify"
	"github.com/vllm-timings/vllm-timings/patcher/verify/verifytest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// fakeClock advances 100 ms on every read, so each request's wall time is
// exactly 100 ms and the table is the same on every run.
func fakeClock() func() time.Time {
	t := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	return func() time.Time {
		t = t.Add(100 * time.Millisecond)
		return t
	}
}

func options(url string, stdout *bytes.Buffer) verify.Options {
	return verify.Options{
		URL:     url,
		Stdout:  stdout,
		Nonce:   "test",
		Now:     fakeClock(),
		Timeout: 10 * time.Second,
	}
}

func startScenario(t *testing.T, name string) *httptest.Server {
	t.Helper()
	srv, err := verifytest.NewServer(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return srv
}

func exitCode(err error) exit.Code {
	if err == nil {
		return 0
	}
	var e *exit.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return -1
}

// findings lists "request: check" for every failure in the report, sorted.
func findings(rep *verify.Report) []string {
	var out []string
	for _, r := range rep.Results {
		for _, f := range r.Failures {
			out = append(out, r.Name+": "+f.Check)
		}
	}
	sort.Strings(out)
	return out
}

func notes(rep *verify.Report) []string {
	var out []string
	for _, r := range rep.Results {
		for _, f := range r.Notes {
			out = append(out, r.Name+": "+f.Check)
		}
	}
	sort.Strings(out)
	return out
}

const (
	chat      = "chat"
	repeat    = "chat repeat"
	chatSU    = "chat stream+usage"
	chatS     = "chat stream"
	compl     = "completion"
	complSU   = "completion stream+usage"
	everyReq  = "*"
	streamReq = "streams"
	usageReq  = "with usage"
)

// expand turns a shorthand request set into request names.
func expand(check string, reqs ...string) []string {
	var out []string
	for _, r := range reqs {
		switch r {
		case everyReq:
			out = append(out, expand(check, chat, repeat, chatSU, chatS, compl, complSU)...)
		case streamReq:
			out = append(out, expand(check, chatSU, chatS, complSU)...)
		case usageReq: // every request whose answer carries usage
			out = append(out, expand(check, chat, repeat, chatSU, compl, complSU)...)
		default:
			out = append(out, r+": "+check)
		}
	}
	sort.Strings(out)
	return out
}

// TestScenarios runs verify against every scenario of verifytest: it must
// pass the correct ones and name exactly the defect each other one has, on
// exactly the requests that show it.
func TestScenarios(t *testing.T) {
	tests := []struct {
		scenario string
		code     exit.Code
		want     []string // "request: check", sorted
		notes    []string
	}{
		{"good", 0, nil, nil},
		{"full-cache-hit", 0, nil, nil},
		{"draft-good", 0, nil, nil},
		{"no-usage-chunk", 0, nil, []string{chatSU + ": no-usage", complSU + ": no-usage"}},
		{"no-timings", verify.ExitChecksFailed, expand(verify.CheckTimingsMissing, everyReq), nil},
		{"stream-no-timings", verify.ExitChecksFailed, expand(verify.CheckTimingsMissing, streamReq), nil},
		{"usage-chunk-without-timings", verify.ExitChecksFailed, expand(verify.CheckLlamaSwapLine, chatSU, complSU), nil},
		{"missing-fields", verify.ExitChecksFailed, expand(verify.CheckFieldMissing, everyReq), nil},
		{"float-count", verify.ExitChecksFailed, expand(verify.CheckFieldType, everyReq), nil},
		{"null-rate", verify.ExitChecksFailed, expand(verify.CheckFieldType, everyReq), nil},
		{"nan", verify.ExitChecksFailed, merge(expand(verify.CheckNotFinite, everyReq), expand(verify.CheckNonStandardJSON, everyReq)), nil},
		{"infinite", verify.ExitChecksFailed, merge(expand(verify.CheckNotFinite, everyReq), expand(verify.CheckNonStandardJSON, everyReq)), nil},
		{"negative", verify.ExitChecksFailed, expand(verify.CheckNegative, everyReq), nil},
		// The first chat and completion find nothing cached, so counting
		// the cache in prompt_n makes no difference there; the plain
		// stream has no usage to compare with.
		{"cache-in-prompt-n", verify.ExitChecksFailed, expand(verify.CheckCacheInPromptN, repeat, chatSU, complSU), nil},
		{
			"cache-in-prompt-n-zero-cache", verify.ExitChecksFailed, expand(verify.CheckCacheInPromptN, repeat, chatSU, complSU),
			[]string{repeat + ": no-cache-hit"},
		},
		{"prompt-count", verify.ExitChecksFailed, expand(verify.CheckPromptCount, usageReq), nil},
		{"predicted-count", verify.ExitChecksFailed, expand(verify.CheckPredictedCount, usageReq), nil},
		{"cache-count", verify.ExitChecksFailed, expand(verify.CheckCacheCount, repeat, chatSU, complSU), nil},
		{"per-second", verify.ExitChecksFailed, expand(verify.CheckPerSecond, everyReq), nil},
		{"per-token-ms", verify.ExitChecksFailed, expand(verify.CheckPerTokenMS, everyReq), nil},
		{"zero-rule", verify.ExitChecksFailed, expand(verify.CheckPerTokenMS, repeat), nil},
		{"wall-time", verify.ExitChecksFailed, expand(verify.CheckWallTime, everyReq), nil},
		{"draft", verify.ExitChecksFailed, expand(verify.CheckDraft, everyReq), nil},
		{"wrong-content-type", verify.ExitChecksFailed, expand(verify.CheckContentType, streamReq), nil},
		// vLLM's metrics ride on one-choice answers with usage; llama-swap
		// would take the generation speed from mean_itl_ms (and, with a cache
		// hit, subtract the cache twice).
		{"vllm-metrics", verify.ExitChecksFailed, expand(verify.CheckLlamaSwapMetrics, usageReq), nil},
		{"vllm-metrics-cleared", 0, nil, expand(verify.NoteVLLMMetrics, usageReq)},
		// The fallback gives a full response no timings without engine
		// stats: a note, not a failure.
		{"fallback-no-stats", 0, nil, expand(verify.NoteFallbackNoSource, chat, repeat, compl)},
		// These break /v1/responses and /v1/messages only
		// (TestEndpointScenarios).
		{"responses-timings-in-response", 0, nil, nil},
		{"messages-prompt-from-input-tokens", 0, nil, nil},
		{"auth", verify.ExitAuth, nil, nil},
		{"forbidden", verify.ExitAuth, nil, nil},
		{"http-500", verify.ExitHTTP, nil, nil},
		{"no-completions", verify.ExitHTTP, nil, nil},
		{"not-json", verify.ExitNotJSON, nil, nil},
		{"stream-not-json", verify.ExitNotJSON, nil, nil},
		{"stream-error-event", verify.ExitHTTP, nil, nil},
		{"broken-stream", verify.ExitBroken, nil, nil},
		{"broken-body", verify.ExitBroken, nil, nil},
		{"hang-up", verify.ExitBroken, nil, nil},
		{"no-models", verify.ExitNoModel, nil, nil},
	}
	covered := map[string]bool{"hang": true} // TestTimeout
	for _, tc := range tests {
		covered[tc.scenario] = true
		t.Run(tc.scenario, func(t *testing.T) {
			srv := startScenario(t, tc.scenario)
			var out bytes.Buffer
			rep, err := verify.Collect(context.Background(), options(srv.URL, &out))
			if got := exitCode(err); got != tc.code {
				t.Fatalf("exit code %d, want %d; error: %v", got, tc.code, err)
			}
			if rep == nil {
				t.Fatal("no report")
			}
			if diff := cmp.Diff(tc.want, findings(rep)); diff != "" {
				t.Errorf("failures (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.notes, notes(rep)); diff != "" {
				t.Errorf("notes (-want +got):\n%s", diff)
			}
			if tc.code == 0 && len(rep.Results) != 6 {
				t.Errorf("%d results, want 6", len(rep.Results))
			}
		})
	}
	for _, name := range verifytest.Scenarios() {
		if !covered[name] {
			t.Errorf("scenario %q is not tested", name)
		}
	}
}

const (
	resp   = "responses"
	respR  = "responses repeat"
	respS  = "responses stream"
	msgs   = "messages"
	msgsR  = "messages repeat"
	msgsS  = "messages stream"
	allNew = "responses and messages"
	hitNew = "responses and messages with a cache hit"
)

// expandNew is expand for the Responses and Messages requests.
func expandNew(check string, reqs ...string) []string {
	var out []string
	for _, r := range reqs {
		switch r {
		case allNew:
			out = append(out, expandNew(check, resp, respR, respS, msgs, msgsR, msgsS)...)
		case hitNew: // all but the first request finds the shared prefix cached
			out = append(out, expandNew(check, respR, respS, msgs, msgsR, msgsS)...)
		default:
			out = append(out, r+": "+check)
		}
	}
	sort.Strings(out)
	return out
}

// TestEndpointScenarios: with --endpoints responses,messages verify sends
// three requests to each (full, the same again, streamed), reads timings
// where llama-swap does (the body; a stream's data: lines, named by event:
// lines and ending without [DONE]) and usage in each endpoint's meaning,
// passes a correct server and names each defect on the requests that show
// it.
func TestEndpointScenarios(t *testing.T) {
	tests := []struct {
		scenario string
		want     []string
		notes    []string
	}{
		{"good", nil, nil},
		{"no-timings", expandNew(verify.CheckTimingsMissing, allNew), nil},
		{"stream-no-timings", expandNew(verify.CheckTimingsMissing, respS, msgsS), nil},
		{"responses-timings-in-response", expandNew(verify.CheckTimingsMissing, respS), nil},
		{"cache-in-prompt-n", expandNew(verify.CheckCacheInPromptN, hitNew), nil},
		{"prompt-count", expandNew(verify.CheckPromptCount, allNew), nil},
		{"messages-prompt-from-input-tokens", expandNew(verify.CheckPromptCount, msgs, msgsR, msgsS), nil},
		{"predicted-count", expandNew(verify.CheckPredictedCount, allNew), nil},
		// A cached count 16 too high leaves Anthropic's input_tokens
		// (prompt - read - written, at least 0, as vLLM computes it) at 0,
		// so the messages' sum is off as well.
		{"cache-count", merge(expandNew(verify.CheckCacheCount, hitNew), expandNew(verify.CheckPromptCount, msgs, msgsR, msgsS)), nil},
		{"wrong-content-type", expandNew(verify.CheckContentType, respS, msgsS), nil},
		// vLLM's metrics are on the full Responses response (0.31 on); in
		// a stream they sit inside the response, where llama-swap does not
		// read them.
		{"vllm-metrics", expandNew(verify.CheckLlamaSwapMetrics, resp, respR), nil},
		{"vllm-metrics-cleared", nil, expandNew(verify.NoteVLLMMetrics, resp, respR)},
		{"fallback-no-stats", nil, expandNew(verify.NoteFallbackNoSource, resp, respR, msgs, msgsR)},
	}
	for _, tc := range tests {
		t.Run(tc.scenario, func(t *testing.T) {
			srv := startScenario(t, tc.scenario)
			var out bytes.Buffer
			o := options(srv.URL, &out)
			o.Endpoints = []string{verify.EndpointResponses, verify.EndpointMessages}
			rep, err := verify.Collect(context.Background(), o)
			if rep == nil || len(rep.Results) != 6 {
				t.Fatalf("report %+v, error %v", rep, err)
			}
			if (err == nil) != (tc.want == nil) {
				t.Errorf("error %v with findings %v", err, findings(rep))
			}
			if diff := cmp.Diff(tc.want, findings(rep)); diff != "" {
				t.Errorf("failures (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.notes, notes(rep)); diff != "" {
				t.Errorf("notes (-want +got):\n%s", diff)
			}
			if tc.scenario == "good" {
				for _, r := range rep.Results {
					if r.Usage == nil || r.Usage.PromptTokens == nil || r.Usage.CachedTokens == nil {
						t.Errorf("%s: usage %+v", r.Name, r.Usage)
					}
				}
			}
		})
	}
}

// TestEndpointsFlag: the default is chat and completions; every endpoint
// together sends 12 requests; a bad list is refused.
func TestEndpointsFlag(t *testing.T) {
	srv := startScenario(t, "good")
	var out bytes.Buffer
	o := options(srv.URL, &out)
	o.Endpoints = verify.AllEndpoints
	rep, err := verify.Collect(context.Background(), o)
	if err != nil || len(rep.Results) != 12 {
		t.Fatalf("%v, %d results", err, len(rep.Results))
	}
	paths := map[string]int{}
	for _, r := range rep.Results {
		paths[r.Path]++
	}
	if diff := cmp.Diff(map[string]int{"/v1/chat/completions": 4, "/v1/completions": 2, "/v1/responses": 3, "/v1/messages": 3}, paths); diff != "" {
		t.Errorf("requests per path (-want +got):\n%s", diff)
	}
	if got, err := verify.CheckEndpoints([]string{"messages", "chat"}); err != nil || !slices.Equal(got, []string{"chat", "messages"}) {
		t.Errorf("CheckEndpoints: %v, %v", got, err)
	}
	for _, bad := range [][]string{nil, {"chat", "chat"}, {"embeddings"}} {
		if _, err := verify.CheckEndpoints(bad); err == nil {
			t.Errorf("CheckEndpoints(%q) accepted", bad)
		}
	}
}

// TestMulti: --multi adds n=2 and two-prompt requests, which pass on a
// correct server; a two-prompt answer's cached_tokens (one prompt's, as vLLM
// reports it) is not compared with cache_n.
func TestMulti(t *testing.T) {
	srv := startScenario(t, "good")
	var out bytes.Buffer
	o := options(srv.URL, &out)
	o.Multi = true
	rep, err := verify.Collect(context.Background(), o)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if len(rep.Results) != 14 {
		t.Fatalf("%d results, want 14", len(rep.Results))
	}
	want := []string{"completion 2 prompts stream+usage: one-prompt-cached", "completion 2 prompts: one-prompt-cached"}
	if diff := cmp.Diff(want, notes(rep)); diff != "" {
		t.Errorf("notes (-want +got):\n%s", diff)
	}
	for _, r := range rep.Results[6:] {
		if r.N != 2 && r.Prompts != 2 {
			t.Errorf("%s: n %d, prompts %d", r.Name, r.N, r.Prompts)
		}
	}
	// Without the exception the two-prompt answers would fail cache-count.
	srv = startScenario(t, "cache-count")
	o = options(srv.URL, &out)
	o.Multi = true
	rep, _ = verify.Collect(context.Background(), o)
	for _, f := range findings(rep) {
		if strings.HasPrefix(f, "completion 2 prompts") {
			t.Errorf("two-prompt answer compared with cached_tokens: %s", f)
		}
	}
}

func merge(a, b []string) []string {
	out := append(slices.Clone(a), b...)
	sort.Strings(out)
	return out
}

func TestAPIKey(t *testing.T) {
	srv := startScenario(t, "auth")
	var out bytes.Buffer
	o := options(srv.URL, &out)
	o.APIKey = verifytest.APIKey
	if _, err := verify.Collect(context.Background(), o); err != nil {
		t.Fatalf("with the right key: %v", err)
	}
	o.APIKey = "wrong"
	_, err := verify.Collect(context.Background(), o)
	if exitCode(err) != verify.ExitAuth || !strings.Contains(err.Error(), "rejected the key") {
		t.Fatalf("with a wrong key: %v (exit %d)", err, exitCode(err))
	}
}

func TestModelFlagSkipsModelsList(t *testing.T) {
	// no-models would fail at /v1/models; with --model it is never asked.
	srv := startScenario(t, "no-models")
	var out bytes.Buffer
	o := options(srv.URL, &out)
	o.Model = "chosen"
	rep, err := verify.Collect(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Model != "chosen" {
		t.Errorf("model %q, want %q", rep.Model, "chosen")
	}
}

func TestServerDown(t *testing.T) {
	// Take a free port, then free it again: nothing listens there.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	ln.Close()
	var out bytes.Buffer
	_, err = verify.Collect(context.Background(), options(url, &out))
	if exitCode(err) != verify.ExitUnreachable || !strings.Contains(err.Error(), "cannot connect") {
		t.Fatalf("got %v (exit %d), want exit %d", err, exitCode(err), verify.ExitUnreachable)
	}
}

func TestTimeout(t *testing.T) {
	srv := startScenario(t, "hang")
	var out bytes.Buffer
	o := options(srv.URL, &out)
	o.Timeout = 50 * time.Millisecond
	_, err := verify.Collect(context.Background(), o)
	if exitCode(err) != verify.ExitTimeout || !strings.Contains(err.Error(), "--timeout") {
		t.Fatalf("got %v (exit %d), want exit %d", err, exitCode(err), verify.ExitTimeout)
	}
}

// TestURLForms checks that the root, /v1 and a proxy prefix all reach the
// same endpoints.
func TestURLForms(t *testing.T) {
	h, err := verifytest.Handler("good")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/upstream/m/", http.StripPrefix("/upstream/m", h))
	mux.Handle("/", h)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	for _, u := range []string{srv.URL, srv.URL + "/", srv.URL + "/v1", srv.URL + "/v1/", srv.URL + "/upstream/m", srv.URL + "/upstream/m/v1"} {
		var out bytes.Buffer
		if _, err := verify.Collect(context.Background(), options(u, &out)); err != nil {
			t.Errorf("--url %s: %v", u, err)
		}
	}
}

func TestNormalizeURLRejects(t *testing.T) {
	for _, u := range []string{"", "127.0.0.1:8000", "ftp://x", "http://", "http://h/?q=1", "http://h/#f", "http://[::1"} {
		if got, err := verify.NormalizeURL(u); err == nil {
			t.Errorf("NormalizeURL(%q) = %q, want an error", u, got)
		}
	}
}

// TestGolden compares the printed table and the JSON report with files in
// testdata/.
func TestGolden(t *testing.T) {
	for _, tc := range []struct {
		scenario string
		json     bool
		all      bool // --endpoints chat,completions,responses,messages
	}{
		{"good", false, false},
		{"good", false, true},
		{"messages-prompt-from-input-tokens", false, true},
		{"good", true, false},
		{"cache-in-prompt-n", false, false},
		{"usage-chunk-without-timings", false, false},
		{"nan", false, false},
		{"nan", true, false},
		{"missing-fields", false, false},
		{"broken-stream", false, false},
	} {
		name := tc.scenario
		if tc.all {
			name = "endpoints-" + name
		}
		ext := ".txt"
		if tc.json {
			ext = ".json"
		}
		t.Run(name+ext, func(t *testing.T) {
			srv := startScenario(t, tc.scenario)
			var out bytes.Buffer
			o := options(srv.URL, &out)
			o.JSON = tc.json
			if tc.all {
				o.Endpoints = verify.AllEndpoints
			}
			_ = verify.Run(context.Background(), o)
			got := strings.ReplaceAll(out.String(), srv.URL, "http://127.0.0.1:PORT")
			checkGolden(t, filepath.Join("testdata", name+ext), got)
		})
	}
}

func checkGolden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v; to create it run: go test ./patcher/verify -run TestGolden -update", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s differs (-want +got):\n%s\nif the change is intended, run: go test ./patcher/verify -run TestGolden -update", path, diff)
	}
}

// TestJSONReport checks the --json report's shape on a failing run.
func TestJSONReport(t *testing.T) {
	srv := startScenario(t, "predicted-count")
	var out bytes.Buffer
	o := options(srv.URL, &out)
	o.JSON = true
	err := verify.Run(context.Background(), o)
	if exitCode(err) != verify.ExitChecksFailed {
		t.Fatalf("exit %d: %v", exitCode(err), err)
	}
	var rep struct {
		Passed   bool `json:"passed"`
		ExitCode int  `json:"exit_code"`
		Results  []struct {
			Name     string         `json:"name"`
			Timings  map[string]any `json:"timings"`
			Failures []struct {
				Check string `json:"check"`
			} `json:"failures"`
		} `json:"results"`
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out.String())
	}
	if rep.Passed || rep.ExitCode != int(verify.ExitChecksFailed) || len(rep.Results) != 6 {
		t.Fatalf("passed=%v exit_code=%d results=%d", rep.Passed, rep.ExitCode, len(rep.Results))
	}
	r := rep.Results[0]
	if r.Name != "chat" || r.Timings["predicted_n"] != 17.0 || len(r.Failures) != 1 || r.Failures[0].Check != verify.CheckPredictedCount {
		t.Errorf("first result: %+v", r)
	}
}
