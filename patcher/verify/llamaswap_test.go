package verify_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vllm-timings/vllm-timings/patcher/testtree"
	"github.com/vllm-timings/vllm-timings/patcher/verify"
)

// behindLlamaSwap starts the real llama-swap (built from ../shared) with
// one model, "vllm", in front of a verifytest scenario, and returns
// options for verify --llama-swap.
func behindLlamaSwap(t *testing.T, scenario string, out *bytes.Buffer) verify.Options {
	t.Helper()
	up := startScenario(t, scenario)
	ls := testtree.StartLlamaSwap(t, map[string]string{"vllm": up.URL})
	t.Cleanup(ls.Stop)
	o := options("", out)
	o.LlamaSwap = ls.URL
	o.Model = "vllm"
	return o
}

// TestLlamaSwapRows: through the real llama-swap, every request's activity
// row is found and equals the truth of the response's timings, n=2, two
// prompts, /v1/responses and /v1/messages included; the table puts them
// side by side.
func TestLlamaSwapRows(t *testing.T) {
	var out bytes.Buffer
	o := behindLlamaSwap(t, "good", &out)
	o.Multi = true
	o.Endpoints = verify.AllEndpoints
	if err := verify.Run(context.Background(), o); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	rep, _ := verify.Collect(context.Background(), o) // a second run finds its own rows
	ids := map[int]bool{}
	for _, r := range rep.Results {
		sc := r.LlamaSwap
		if sc == nil || sc.Truth == nil {
			t.Fatalf("%s: no llama-swap row or truth: %+v", r.Name, sc)
		}
		if ids[sc.Row.ID] {
			t.Errorf("%s: row %d used twice", r.Name, sc.Row.ID)
		}
		ids[sc.Row.ID] = true
		if sc.Row.Input != sc.Truth.Input || sc.Row.Cached != sc.Truth.Cached || sc.Row.Output != sc.Truth.Output {
			t.Errorf("%s: row %+v, truth %+v", r.Name, sc.Row, *sc.Truth)
		}
	}
	if len(ids) != 20 {
		t.Errorf("%d rows, want 20", len(ids))
	}
	for _, want := range []string{
		"llama-swap's activity rows (each cell: truth / llama-swap)",
		"PASS: all 20 responses carry correct timings, and llama-swap recorded the truth for each",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// TestLlamaSwapWithVLLMMetrics: timings beside vLLM's full per-request
// metrics (an earlier patch with --enable-per-request-metrics) make the
// real llama-swap record wrong speeds, and verify says so twice: what
// llama-swap will do, from the response, and what it did, from its row.
// With the two fields cleared, as the patch now leaves them, it passes.
func TestLlamaSwapWithVLLMMetrics(t *testing.T) {
	var out bytes.Buffer
	o := behindLlamaSwap(t, "vllm-metrics", &out)
	rep, err := verify.Collect(context.Background(), o)
	if exitCode(err) != verify.ExitChecksFailed {
		t.Fatalf("exit %d: %v", exitCode(err), err)
	}
	want := merge(expand(verify.CheckLlamaSwapMetrics, usageReq), expand(verify.CheckLlamaSwapRow, usageReq))
	if diff := cmp.Diff(want, findings(rep)); diff != "" {
		t.Errorf("failures (-want +got):\n%s", diff)
	}
	for _, r := range rep.Results {
		for _, f := range r.Failures {
			if r.Name == repeat && f.Check == verify.CheckLlamaSwapMetrics && !strings.Contains(f.Msg, "a second time") {
				t.Errorf("the cache hit's message does not name the double subtraction: %s", f.Msg)
			}
		}
	}

	o = behindLlamaSwap(t, "vllm-metrics-cleared", &out)
	if _, err := verify.Collect(context.Background(), o); err != nil {
		t.Fatalf("with the fields cleared: %v", err)
	}
}

// TestLlamaSwapFallbackNoStats: behind the real llama-swap, a full
// response the fallback sent without timings (no engine stats) is checked
// against the row llama-swap makes from usage alone (the whole prompt as
// input, the cached count, no speeds), and every stream against its
// timings; the report says which requests the fallback answered how.
func TestLlamaSwapFallbackNoStats(t *testing.T) {
	var out bytes.Buffer
	o := behindLlamaSwap(t, "fallback-no-stats", &out)
	o.Multi = true
	o.Endpoints = verify.AllEndpoints
	rep, err := verify.Collect(context.Background(), o)
	if err != nil {
		t.Fatalf("%v\n%+v", err, rep)
	}
	for _, r := range rep.Results {
		sc := r.LlamaSwap
		if sc == nil || sc.Truth == nil {
			t.Fatalf("%s: no llama-swap row or truth: %+v", r.Name, sc)
		}
		if r.Stream != (r.Source == "stream") || !r.Stream && r.Source != "none" {
			t.Errorf("%s: source %q", r.Name, r.Source)
		}
		if !r.Stream && (sc.Truth.PromptPerSecond != -1 || sc.Row.PromptPerSecond != -1 || sc.Row.TokensPerSecond != -1) {
			t.Errorf("%s: a full response without timings got speeds: %+v", r.Name, sc)
		}
	}
	if err := verify.Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"vllm-timings' fallback middleware answered (header X-Vllm-Timings):",
		"  stream: a stream: the engine's stats where the server keeps them, else the API server's clock: chat stream+usage, chat stream,",
		"  none: none: a full response without engine stats: chat, chat repeat, completion, responses, responses repeat, messages, messages repeat, chat n=2,",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// TestLlamaSwapAPIMissing: --llama-swap at a server without llama-swap's
// activity API, or with one whose rows lack the numbers, is exit 28 before
// any request is sent.
func TestLlamaSwapAPIMissing(t *testing.T) {
	plain := startScenario(t, "good")
	old := http.NewServeMux()
	posts := 0
	old.HandleFunc("/api/metrics/activity", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"data":[{"id":3,"req_path":"/v1/chat/completions","duration_ms":5}]}`)
	})
	old.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { posts++; http.NotFound(w, r) })
	tooOld := httptest.NewServer(old)
	defer tooOld.Close()
	notJSON := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "<html>llama-swap UI</html>")
	}))
	defer notJSON.Close()
	for _, tc := range []struct{ url, want string }{
		{plain.URL, "HTTP 404"},
		{tooOld.URL, "a row lacks input_tokens, cache_tokens, output_tokens, prompt_per_second, tokens_per_second"},
		{notJSON.URL, "not JSON"},
	} {
		var out bytes.Buffer
		o := options("", &out)
		o.LlamaSwap, o.Model = tc.url, "vllm"
		rep, err := verify.Collect(context.Background(), o)
		if exitCode(err) != verify.ExitLlamaSwapAPI || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "upgrade llama-swap") {
			t.Errorf("%s: exit %d: %v; want exit %d and %q", tc.url, exitCode(err), err, verify.ExitLlamaSwapAPI, tc.want)
		}
		if rep == nil || len(rep.Results) != 0 {
			t.Errorf("%s: requests were sent", tc.url)
		}
	}
	if posts != 0 {
		t.Errorf("%d requests reached the server", posts)
	}
}
