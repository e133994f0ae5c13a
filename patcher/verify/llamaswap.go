package verify

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/vllm-timings/vllm-timings/patcher/exit"
)

// What llama-swap shows is read from its GET /api/metrics/activity: one row
// per request, with input, cached and output tokens, prompt and generation
// speed and duration (llama-swap's internal/server/metrics.go, buildMetrics).
// With --llama-swap, verify sends its requests through llama-swap, finds the
// row each one added and compares it with the truth of the response's own
// timings (once those passed their checks):
//
//	input tokens      = prompt_n (the uncached prompt tokens)
//	cached tokens     = cache_n
//	output tokens     = predicted_n
//	prompt speed      = prompt_n · 1000 / prompt_ms
//	generation speed  = predicted_n · 1000 / predicted_ms
//	duration (ms)     ≥ prompt_ms + predicted_ms, to the whole millisecond
//	                    llama-swap keeps

// swapWait bounds the wait for a request's row: llama-swap stores it just
// after the response has been sent.
var swapWait = 5 * time.Second

// SwapRow is one request's numbers as llama-swap shows them, or as they
// should be.
type SwapRow struct {
	ID              int     `json:"id,omitempty"`
	Input           int64   `json:"input_tokens"`
	Cached          int64   `json:"cache_tokens"`
	Output          int64   `json:"output_tokens"`
	PromptPerSecond float64 `json:"prompt_per_second"`
	TokensPerSecond float64 `json:"tokens_per_second"`
	// DurationMS is llama-swap's duration; in the truth, prompt_ms +
	// predicted_ms, the least llama-swap may show.
	DurationMS float64 `json:"duration_ms"`
}

// SwapCheck is llama-swap's row for a request and the truth it is checked
// against (nil when the response had no usable timings).
type SwapCheck struct {
	Row   SwapRow  `json:"row"`
	Truth *SwapRow `json:"truth,omitempty"`
}

// swap reads llama-swap's activity rows.
type swap struct {
	api  *client // at llama-swap's root, where /api lives
	last int     // the id of the newest row already accounted for
}

const activityPath = "/api/metrics/activity"

// openSwap checks that c's server is a llama-swap with the activity API
// and notes its newest row, so the rows of verify's requests can be told
// from earlier ones.
func openSwap(ctx context.Context, c *client) (*swap, error) {
	u, err := url.Parse(c.base)
	if err != nil {
		return nil, err
	}
	api := *c
	api.base = u.Scheme + "://" + u.Host
	s := &swap{api: &api}
	rows, err := s.rows(ctx, "?limit=1&sort=id&order=desc")
	if err != nil {
		return nil, err
	}
	for _, r := range rows {
		s.last = max(s.last, r.ID)
	}
	return s, nil
}

// activityRow is a row as read, with the request path for matching.
type activityRow struct {
	SwapRow
	model, path string
}

// rows fetches activity rows; anything but llama-swap's shape is
// ExitLlamaSwapAPI.
func (s *swap) rows(ctx context.Context, query string) ([]activityRow, error) {
	what := "GET " + s.api.base + activityPath
	tooOld := func(format string, args ...any) error {
		return errorf(ExitLlamaSwapAPI, nil, "%s: %s; --llama-swap needs a llama-swap whose activity API has per-request tokens, speeds and durations "+
			"(check the URL, or upgrade llama-swap)", what, fmt.Sprintf(format, args...))
	}
	resp, err := s.api.do(ctx, http.MethodGet, activityPath+query, nil)
	if err != nil {
		if e, ok := err.(*exit.Error); ok && (e.Code == ExitHTTP || e.Code == ExitNotJSON) {
			return nil, tooOld("%s", strings.TrimPrefix(e.Msg, "verify: GET "+activityPath+query+": "))
		}
		return nil, err
	}
	v, _, err := decodeJSON(resp.body)
	if err != nil {
		return nil, tooOld("the answer is not JSON%s", bodyStart(resp.body))
	}
	page, _ := v.(map[string]any)
	data, ok := page["data"].([]any)
	if !ok {
		return nil, tooOld("the answer has no \"data\" list of rows")
	}
	out := make([]activityRow, 0, len(data))
	for _, d := range data {
		obj, _ := d.(map[string]any)
		tokens, _ := obj["tokens"].(map[string]any)
		var r activityRow
		var missing []string
		num := func(m map[string]any, k string) float64 {
			n, ok := m[k].(json.Number)
			f, err := n.Float64()
			if !ok || err != nil {
				missing = append(missing, k)
			}
			return f
		}
		r.ID = int(num(obj, "id"))
		r.DurationMS = num(obj, "duration_ms")
		r.Input = int64(num(tokens, "input_tokens"))
		r.Cached = int64(num(tokens, "cache_tokens"))
		r.Output = int64(num(tokens, "output_tokens"))
		r.PromptPerSecond = num(tokens, "prompt_per_second")
		r.TokensPerSecond = num(tokens, "tokens_per_second")
		r.path, _ = obj["req_path"].(string)
		r.model, _ = obj["model"].(string)
		if r.path == "" {
			missing = append(missing, "req_path")
		}
		if len(missing) > 0 {
			return nil, tooOld("a row lacks %s", strings.Join(missing, ", "))
		}
		out = append(out, r)
	}
	return out, nil
}

// check finds the row llama-swap added for res and compares it with the
// truth of res's timings.
func (s *swap) check(ctx context.Context, res *Result, model string) error {
	deadline := time.Now().Add(swapWait)
	var row *activityRow
	for row == nil {
		rows, err := s.rows(ctx, "?min_id="+strconv.Itoa(s.last+1)+"&limit=999&sort=id&order=asc")
		if err != nil {
			return err
		}
		row = pickRow(rows, s.last, res.Path, model)
		if row == nil {
			if time.Now().After(deadline) {
				return errorf(ExitLlamaSwapAPI, nil, "llama-swap recorded no activity row for POST %s within %s (%s %s)", res.Path, swapWait, s.api.base, activityPath)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(25 * time.Millisecond):
			}
		}
	}
	s.last = row.ID
	res.LlamaSwap = &SwapCheck{Row: row.SwapRow}
	truth, ok := swapTruth(res.parsed)
	if !ok && res.Source == "none" && res.Usage != nil {
		truth, ok = usageTruth(res.Usage, res.Endpoint)
	}
	if !ok {
		res.Notes = append(res.Notes, Finding{CheckLlamaSwapRow, "no usable timings, so llama-swap's row is not compared with a truth"})
		return nil
	}
	res.LlamaSwap.Truth = &truth
	var wrong []string
	if row.Input != truth.Input {
		wrong = append(wrong, fmt.Sprintf("input tokens %d (truth %d, the uncached prompt tokens)", row.Input, truth.Input))
	}
	if row.Cached != truth.Cached {
		wrong = append(wrong, fmt.Sprintf("cached tokens %d (truth %d)", row.Cached, truth.Cached))
	}
	if row.Output != truth.Output {
		wrong = append(wrong, fmt.Sprintf("output tokens %d (truth %d)", row.Output, truth.Output))
	}
	if !approx(row.PromptPerSecond, truth.PromptPerSecond) {
		wrong = append(wrong, fmt.Sprintf("prompt speed %s t/s (truth %s)", formatNum(row.PromptPerSecond), formatNum(truth.PromptPerSecond)))
	}
	if !approx(row.TokensPerSecond, truth.TokensPerSecond) {
		wrong = append(wrong, fmt.Sprintf("generation speed %s t/s (truth %s)", formatNum(row.TokensPerSecond), formatNum(truth.TokensPerSecond)))
	}
	if row.DurationMS < math.Floor(truth.DurationMS) {
		wrong = append(wrong, fmt.Sprintf("duration %s ms, shorter than prompt_ms + predicted_ms = %s", formatNum(row.DurationMS), formatNum(truth.DurationMS)))
	}
	if len(wrong) > 0 {
		res.Failures = append(res.Failures, Finding{CheckLlamaSwapRow, fmt.Sprintf("llama-swap's row %d shows %s", row.ID, strings.Join(wrong, ", "))})
	}
	return nil
}

// pickRow is the oldest row after last for the endpoint path, one of the
// requested model's if there is any: other clients may use llama-swap
// meanwhile, and an alias is recorded under the model it names.
func pickRow(rows []activityRow, last int, path, model string) *activityRow {
	var first, same *activityRow
	for i := range rows {
		r := &rows[i]
		if r.ID <= last || !strings.HasSuffix(r.path, path) {
			continue
		}
		if first == nil || r.ID < first.ID {
			first = r
		}
		if r.model == model && (same == nil || r.ID < same.ID) {
			same = r
		}
	}
	if same != nil {
		return same
	}
	return first
}

// swapTruth is what llama-swap should show for timings that passed their
// checks.
func swapTruth(t Timings) (SwapRow, bool) {
	pn, ok1 := t.get("prompt_n")
	cn, ok2 := t.get("cache_n")
	dn, ok3 := t.get("predicted_n")
	pms, ok4 := t.get("prompt_ms")
	dms, ok5 := t.get("predicted_ms")
	if !(ok1 && ok2 && ok3 && ok4 && ok5) {
		return SwapRow{}, false
	}
	return SwapRow{
		Input: int64(pn), Cached: int64(cn), Output: int64(dn),
		PromptPerSecond: perSecond(pn, pms), TokensPerSecond: perSecond(dn, dms), DurationMS: pms + dms,
	}, true
}

// usageTruth is what llama-swap shows for a response without timings: the
// counts of its usage as llama-swap reads them (extractUsageTokens: input
// from prompt_tokens, else input_tokens, which for the Messages API leaves
// out the cache reads; cached -1 when usage has no count), no speeds (-1),
// and any duration.
func usageTruth(u *Usage, endpoint string) (SwapRow, bool) {
	if u.PromptTokens == nil || u.CompletionTokens == nil {
		return SwapRow{}, false
	}
	row := SwapRow{Input: *u.PromptTokens, Cached: -1, Output: *u.CompletionTokens, PromptPerSecond: -1, TokensPerSecond: -1}
	if endpoint == EndpointMessages && u.anthropicInput != nil {
		row.Input = *u.anthropicInput
	}
	if u.CachedTokens != nil {
		row.Cached = *u.CachedTokens
	}
	return row, true
}

func perSecond(n, ms float64) float64 {
	if n == 0 || ms == 0 {
		return 0
	}
	return n * 1000 / ms
}

// predictSwap says what llama-swap makes of a response that carries vLLM's
// own per-request metrics beside timings that passed their checks. Its
// buildMetrics takes the counts and speeds from timings, then, when metrics
// has them, replaces the prompt speed with (input - cached) /
// time_to_first_token_ms, where input is prompt_n, which already leaves the
// cached tokens out, and the generation speed with 1000 / mean_itl_ms. A
// speed that comes out wrong that way is a failure.
func predictSwap(t Timings, metrics map[string]any) (notes, fails []Finding) {
	truth, ok := swapTruth(t)
	if !ok {
		return nil, nil
	}
	field := func(k string) (float64, bool) {
		n, ok := metrics[k].(json.Number)
		f, err := n.Float64()
		return f, ok && err == nil && f > 0
	}
	ttft, hasTTFT := field("time_to_first_token_ms")
	itl, hasITL := field("mean_itl_ms")
	if !hasTTFT && !hasITL {
		notes = append(notes, Finding{NoteVLLMMetrics, "vLLM's per-request metrics ride along without time_to_first_token_ms and mean_itl_ms, so llama-swap shows the speeds of timings"})
		return notes, nil
	}
	var what []string
	if hasTTFT {
		pps := float64(truth.Input-max(truth.Cached, 0)) * 1000 / ttft
		if !approx(pps, truth.PromptPerSecond) {
			what = append(what, fmt.Sprintf("a prompt speed of (prompt_n - cache_n) / time_to_first_token_ms = (%d - %d) / %s ms = %s t/s instead of %s: "+
				"it subtracts the cached tokens, which prompt_n already leaves out, a second time",
				truth.Input, truth.Cached, formatNum(ttft), formatNum(pps), formatNum(truth.PromptPerSecond)))
		}
	}
	if hasITL {
		if tps := 1000 / itl; !approx(tps, truth.TokensPerSecond) {
			what = append(what, fmt.Sprintf("a generation speed of 1000 / mean_itl_ms = %s t/s instead of %s", formatNum(tps), formatNum(truth.TokensPerSecond)))
		}
	}
	if len(what) == 0 {
		notes = append(notes, Finding{NoteVLLMMetrics, "vLLM's per-request metrics carry time_to_first_token_ms or mean_itl_ms; llama-swap recomputes the speeds from them, and here they come out right"})
		return notes, nil
	}
	fails = append(fails, Finding{CheckLlamaSwapMetrics, "the response carries vLLM's per-request metrics beside timings, and llama-swap will show " + strings.Join(what, "; and ") +
		". A patch from this vllm-timings clears those two fields where it adds timings: apply it again"})
	return nil, fails
}
