package verify

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/vllm-timings/vllm-timings/patcher/exit"
	"github.com/vllm-timings/vllm-timings/patcher/verify/verifytest"
)

// A llama-swap that answers but records no row for a request (its metrics
// capture does not cover the endpoint) is exit 28, after swapWait.
func TestLlamaSwapNoRow(t *testing.T) {
	defer func(d time.Duration) { swapWait = d }(swapWait)
	swapWait = 100 * time.Millisecond
	up, err := verifytest.Handler("good")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/api/metrics/activity", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, `{"data":[]}`) })
	mux.Handle("/", up)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	var out bytes.Buffer
	rep, err := Collect(context.Background(), Options{LlamaSwap: srv.URL, Model: "m", Stdout: &out, Timeout: 5 * time.Second})
	e, ok := err.(*exit.Error)
	if !ok || e.Code != ExitLlamaSwapAPI || !strings.Contains(e.Msg, "recorded no activity row for POST /v1/chat/completions") {
		t.Fatalf("got %v", err)
	}
	if len(rep.Results) != 0 || rep.ExitCode != ExitLlamaSwapAPI {
		t.Errorf("report: %d results, exit %d", len(rep.Results), rep.ExitCode)
	}
}

// pickRow takes the oldest new row for the endpoint, the requested
// model's if any.
func TestPickRow(t *testing.T) {
	rows := []activityRow{
		{SwapRow{ID: 4}, "vllm", "/v1/chat/completions"},
		{SwapRow{ID: 5}, "other", "/v1/completions"},
		{SwapRow{ID: 6}, "other", "/v1/chat/completions"},
		{SwapRow{ID: 7}, "vllm", "/v1/chat/completions"},
	}
	for _, tc := range []struct {
		last        int
		path, model string
		want        int
	}{
		{4, "/v1/chat/completions", "vllm", 7},
		{4, "/v1/chat/completions", "alias", 6},
		{0, "/v1/chat/completions", "vllm", 4},
		{4, "/v1/completions", "vllm", 5},
		{7, "/v1/chat/completions", "vllm", 0},
	} {
		got := 0
		if r := pickRow(rows, tc.last, tc.path, tc.model); r != nil {
			got = r.ID
		}
		if got != tc.want {
			t.Errorf("pickRow(last %d, %s, %s) = %d, want %d", tc.last, tc.path, tc.model, got, tc.want)
		}
	}
}

// predictSwap follows buildMetrics: with both objects, the prompt speed is
// (prompt_n - cache_n) / time_to_first_token_ms and the generation speed
// 1000 / mean_itl_ms.
func TestPredictSwap(t *testing.T) {
	tm := Timings{"prompt_n": 74, "cache_n": 512, "predicted_n": 16, "prompt_ms": 8.624, "predicted_ms": 60}
	num := func(s string) any { return json.Number(s) }
	_, fails := predictSwap(tm, map[string]any{"time_to_first_token_ms": num("8.624"), "mean_itl_ms": num("4")})
	if len(fails) != 1 || !strings.Contains(fails[0].Msg, "(74 - 512) / 8.624 ms = -50788.5 t/s instead of 8580.71") || !strings.Contains(fails[0].Msg, "1000 / mean_itl_ms = 250 t/s instead of 266.667") {
		t.Errorf("fails: %v", fails)
	}
	notes, fails := predictSwap(tm, map[string]any{"time_to_first_token_ms": nil, "generation_time_ms": num("60")})
	if len(fails) != 0 || len(notes) != 1 || notes[0].Check != NoteVLLMMetrics {
		t.Errorf("cleared: notes %v, fails %v", notes, fails)
	}
	tm["cache_n"] = 0
	notes, fails = predictSwap(tm, map[string]any{"time_to_first_token_ms": num("8.624")})
	if len(fails) != 0 || len(notes) != 1 || !strings.Contains(notes[0].Msg, "come out right") {
		t.Errorf("no cache, ttft only: notes %v, fails %v", notes, fails)
	}
}
