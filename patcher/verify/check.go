package verify

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Check names. Each Finding carries one, so tests and --json readers can tell
// defects apart without parsing messages. doc.go says why each check exists.
const (
	CheckTimingsMissing   = "timings-missing"
	CheckFieldMissing     = "field-missing"
	CheckFieldType        = "field-type"
	CheckNotFinite        = "not-finite"
	CheckNegative         = "negative"
	CheckNonStandardJSON  = "non-standard-json"
	CheckCacheInPromptN   = "cache-in-prompt-n"
	CheckPromptCount      = "prompt-count"
	CheckPredictedCount   = "predicted-count"
	CheckCacheCount       = "cache-count"
	CheckPerSecond        = "per-second"
	CheckPerTokenMS       = "per-token-ms"
	CheckWallTime         = "wall-time"
	CheckDraft            = "draft"
	CheckLlamaSwapLine    = "llama-swap-line"
	CheckContentType      = "content-type"
	CheckUsage            = "usage"
	CheckLlamaSwapMetrics = "llama-swap-metrics"
	CheckLlamaSwapRow     = "llama-swap-row"

	// Notes: worth knowing, not a failure.
	NoteNoUsage    = "no-usage"
	NoteNoCacheHit = "no-cache-hit"
	NoteNoDone     = "no-done"
	// NoteOnePromptCached: a two-prompt completion's usage counts one
	// prompt's cached tokens, so cache_n is not compared with it.
	NoteOnePromptCached = "one-prompt-cached"
	// NoteVLLMMetrics: the response carries vLLM's own per-request metrics;
	// the note says what llama-swap makes of them.
	NoteVLLMMetrics = "vllm-metrics"
	// NoteFallbackNoSource: a full response that vllm-timings' fallback
	// middleware served without timings (its x-vllm-timings header says
	// none): the server keeps no per-request engine stats, and the split of
	// a full response's time is not guessed.
	NoteFallbackNoSource = "fallback-no-source"
)

// Finding is one failed check or note about a response.
type Finding struct {
	Check string `json:"check"`
	Msg   string `json:"message"`
}

func (f Finding) String() string { return "[" + f.Check + "] " + f.Msg }

// Tolerances. Rates are derived from the counts and durations the same
// response carries, so they may differ only by rounding.
const (
	rateRelTol = 1e-3 // relative: 0.1 %
	rateAbsTol = 5e-3 // absolute: half a unit in the second decimal
	wallAbsMS  = 5.0  // ms of slack for the wall-time bound
	wallRelTol = 0.01 // and 1 % of the wall time
	maxExactF  = 1e15 // counts above this cannot be checked exactly
)

type fieldKind int

const (
	kindInt fieldKind = iota
	kindFloat
)

// llamaFields are the fields llama-server sends, in its order.
var llamaFields = []struct {
	name string
	kind fieldKind
}{
	{"prompt_n", kindInt},
	{"prompt_ms", kindFloat},
	{"prompt_per_token_ms", kindFloat},
	{"prompt_per_second", kindFloat},
	{"predicted_n", kindInt},
	{"predicted_ms", kindFloat},
	{"predicted_per_token_ms", kindFloat},
	{"predicted_per_second", kindFloat},
	{"cache_n", kindInt},
}

// draftFields are present only with speculative decoding.
var draftFields = []string{"draft_n", "draft_n_accepted"}

// Timings holds the fields that passed their own checks (present, right
// type, finite, not negative). A field that did not is absent from the map.
type Timings map[string]float64

func (t Timings) get(name string) (float64, bool) {
	v, ok := t[name]
	return v, ok
}

// Usage is an answer's usage in one meaning for every endpoint: the whole
// prompt (cached tokens included), the generated tokens and the cached
// ones. Each endpoint writes it its own way:
//
//	chat, completions  prompt_tokens, completion_tokens,
//	                   prompt_tokens_details.cached_tokens
//	/v1/responses      input_tokens (the whole prompt), output_tokens,
//	                   input_tokens_details.cached_tokens (vLLM v0.10.0
//	                   writes the chat names)
//	/v1/messages       input_tokens + cache_read_input_tokens +
//	                   cache_creation_input_tokens (Anthropic's input_tokens
//	                   leaves out what the cache read and wrote; vLLM before
//	                   v0.24 sends neither cache field and the whole prompt
//	                   as input_tokens), output_tokens, cache_read_input_tokens
type Usage struct {
	PromptTokens     *int64 `json:"prompt_tokens,omitempty"`
	CompletionTokens *int64 `json:"completion_tokens,omitempty"`
	CachedTokens     *int64 `json:"cached_tokens,omitempty"` // prompt_tokens_details.cached_tokens, or the endpoint's own
	// The names of the fields each count was read from, for messages;
	// "" is the chat name.
	promptName, completionName, cachedName string
	// anthropicInput is the Messages API's own input_tokens (the prompt
	// without what the cache read and wrote), what llama-swap reads.
	anthropicInput *int64
}

func (u *Usage) names() (prompt, completion, cached string) {
	or := func(s, def string) string {
		if s == "" {
			return def
		}
		return s
	}
	return or(u.promptName, "usage.prompt_tokens"), or(u.completionName, "usage.completion_tokens"), or(u.cachedName, "usage.prompt_tokens_details.cached_tokens")
}

// parseUsage reads a decoded usage object in the endpoint's meaning.
// Fields with the wrong type are reported and left nil.
func parseUsage(v any, endpoint string) (*Usage, []Finding) {
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, []Finding{{CheckUsage, fmt.Sprintf("usage is %s, not an object", describe(v))}}
	}
	var u Usage
	var bad []Finding
	readInt := func(val any, where string) *int64 {
		n, err := asInt(val)
		if err != "" {
			bad = append(bad, Finding{CheckUsage, where + " " + err})
			return nil
		}
		return &n
	}
	// Chat-style names first: every endpoint of vLLM v0.10.0 writes them.
	if val, ok := obj["prompt_tokens"]; ok {
		u.PromptTokens = readInt(val, "usage.prompt_tokens")
	}
	if val, ok := obj["completion_tokens"]; ok {
		u.CompletionTokens = readInt(val, "usage.completion_tokens")
	}
	if d, ok := obj["prompt_tokens_details"].(map[string]any); ok {
		if val, ok := d["cached_tokens"]; ok && val != nil {
			u.CachedTokens = readInt(val, "usage.prompt_tokens_details.cached_tokens")
		}
	}
	if endpoint != EndpointResponses && endpoint != EndpointMessages {
		return &u, bad
	}
	if val, ok := obj["output_tokens"]; ok && u.CompletionTokens == nil {
		u.CompletionTokens, u.completionName = readInt(val, "usage.output_tokens"), "usage.output_tokens"
	}
	val, ok := obj["input_tokens"]
	if !ok || u.PromptTokens != nil {
		return &u, bad
	}
	u.PromptTokens, u.promptName = readInt(val, "usage.input_tokens"), "usage.input_tokens"
	u.anthropicInput = u.PromptTokens
	if endpoint == EndpointResponses {
		if d, ok := obj["input_tokens_details"].(map[string]any); ok {
			if val, ok := d["cached_tokens"]; ok && val != nil {
				u.CachedTokens, u.cachedName = readInt(val, "usage.input_tokens_details.cached_tokens"), "usage.input_tokens_details.cached_tokens"
			}
		}
		return &u, bad
	}
	// Messages: input_tokens leaves out the tokens the cache read and
	// those it wrote.
	for _, k := range []string{"cache_read_input_tokens", "cache_creation_input_tokens"} {
		val, ok := obj[k]
		if !ok || val == nil {
			continue
		}
		n := readInt(val, "usage."+k)
		if n == nil || u.PromptTokens == nil {
			u.PromptTokens = nil
			continue
		}
		sum := *u.PromptTokens + *n
		u.PromptTokens = &sum
		u.promptName += " + " + k
		if k == "cache_read_input_tokens" {
			u.CachedTokens, u.cachedName = n, "usage.cache_read_input_tokens"
		}
	}
	return &u, bad
}

// checkInput is what the timings of one response are checked against.
type checkInput struct {
	timings     any     // the decoded "timings" value
	usage       *Usage  // nil when the response carried none
	wallMS      float64 // client-measured time from sending to the end of the body
	nonStandard bool    // the JSON carrying timings needed bare NaN/Infinity
}

// checkTimings runs every check on one response's timings. It returns the
// fields that are usable and the failures.
func checkTimings(in checkInput) (Timings, []Finding) {
	var fails []Finding
	add := func(check, format string, args ...any) {
		fails = append(fails, Finding{check, fmt.Sprintf(format, args...)})
	}
	if in.nonStandard {
		add(CheckNonStandardJSON, "the JSON uses bare NaN or Infinity, which is not JSON: llama-swap rejects the whole body and records no metrics for it")
	}
	obj, ok := in.timings.(map[string]any)
	if !ok {
		add(CheckFieldType, "timings is %s, not an object", describe(in.timings))
		return nil, fails
	}

	t := Timings{}
	var missing []string
	readField := func(name string, kind fieldKind) {
		raw, present := obj[name]
		if !present {
			missing = append(missing, name)
			return
		}
		var v float64
		switch kind {
		case kindInt:
			if isMarker(raw) {
				add(CheckNotFinite, "%s is %s", name, markerName(raw))
				return
			}
			n, err := asInt(raw)
			if err != "" {
				add(CheckFieldType, "%s %s", name, err)
				return
			}
			v = float64(n)
		case kindFloat:
			if isMarker(raw) {
				add(CheckNotFinite, "%s is %s", name, markerName(raw))
				return
			}
			num, isNum := raw.(json.Number)
			if !isNum {
				add(CheckFieldType, "%s is %s, not a number", name, describe(raw))
				return
			}
			f, err := strconv.ParseFloat(string(num), 64)
			if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
				add(CheckNotFinite, "%s is %s, which overflows a float64", name, num)
				return
			}
			v = f
		}
		if v < 0 {
			add(CheckNegative, "%s is negative (%s)", name, formatNum(v))
			return
		}
		t[name] = v
	}
	for _, f := range llamaFields {
		readField(f.name, f.kind)
	}
	if len(missing) > 0 {
		add(CheckFieldMissing, "timings lacks %s", strings.Join(missing, ", "))
	}
	missing = nil
	_, hasDraft := obj["draft_n"]
	_, hasAccepted := obj["draft_n_accepted"]
	if hasDraft || hasAccepted {
		for _, name := range draftFields {
			readField(name, kindInt)
		}
		if len(missing) > 0 {
			add(CheckDraft, "timings has %s without %s", other(missing[0]), missing[0])
		}
		dn, ok1 := t.get("draft_n")
		da, ok2 := t.get("draft_n_accepted")
		if ok1 && ok2 && da > dn {
			add(CheckDraft, "draft_n_accepted (%s) exceeds draft_n (%s)", formatNum(da), formatNum(dn))
		}
	}

	fails = append(fails, checkRates(t, "prompt")...)
	fails = append(fails, checkRates(t, "predicted")...)
	fails = append(fails, checkUsage(t, in.usage)...)

	pms, ok1 := t.get("prompt_ms")
	dms, ok2 := t.get("predicted_ms")
	if ok1 && ok2 {
		limit := in.wallMS + wallAbsMS + wallRelTol*in.wallMS
		if sum := pms + dms; sum > limit {
			add(CheckWallTime, "prompt_ms + predicted_ms = %s ms, longer than the %s ms the client waited for the whole response: the server "+
				"measures an interval it did not spend on this request (mixed clocks or timestamps of another request?)",
				formatNum(sum), formatNum(in.wallMS))
		}
	}
	return t, fails
}

func other(name string) string {
	if name == "draft_n" {
		return "draft_n_accepted"
	}
	return "draft_n"
}

// checkRates checks x_per_second ≈ x_n·1000/x_ms and x_per_token_ms ≈ x_ms/x_n,
// with 0 as the defined value when x_n or x_ms is 0.
func checkRates(t Timings, x string) []Finding {
	n, okN := t.get(x + "_n")
	ms, okMS := t.get(x + "_ms")
	if !okN || !okMS {
		return nil
	}
	var wantPerSec, wantPerTok float64
	if n != 0 && ms != 0 {
		wantPerSec = n * 1000 / ms
		wantPerTok = ms / n
	}
	var fails []Finding
	if got, ok := t.get(x + "_per_second"); ok && !approx(got, wantPerSec) {
		fails = append(fails, Finding{CheckPerSecond, fmt.Sprintf("%s_per_second is %s but %s_n·1000/%s_ms = %s·1000/%s = %s%s",
			x, formatNum(got), x, x, formatNum(n), formatNum(ms), formatNum(wantPerSec), zeroRule(n, ms))})
	}
	if got, ok := t.get(x + "_per_token_ms"); ok && !approx(got, wantPerTok) {
		fails = append(fails, Finding{CheckPerTokenMS, fmt.Sprintf("%s_per_token_ms is %s but %s_ms/%s_n = %s/%s = %s%s",
			x, formatNum(got), x, x, formatNum(ms), formatNum(n), formatNum(wantPerTok), zeroRule(n, ms))})
	}
	return fails
}

func zeroRule(n, ms float64) string {
	if n == 0 || ms == 0 {
		return " (0 is the defined value when the count or the duration is 0)"
	}
	return ""
}

func approx(got, want float64) bool {
	return math.Abs(got-want) <= rateAbsTol+rateRelTol*math.Abs(want)
}

// checkUsage compares the counts in timings with usage, in the meaning
// of the endpoint's usage (see Usage).
func checkUsage(t Timings, u *Usage) []Finding {
	if u == nil {
		return nil
	}
	var fails []Finding
	add := func(check, format string, args ...any) {
		fails = append(fails, Finding{check, fmt.Sprintf(format, args...)})
	}
	promptName, completionName, cachedName := u.names()
	pn, okP := t.get("prompt_n")
	cn, okC := t.get("cache_n")
	if okP && okC && u.PromptTokens != nil {
		pt := float64(*u.PromptTokens)
		switch {
		case pn+cn == pt:
		case cn > 0 && pn == pt:
			add(CheckCacheInPromptN, "prompt_n = %s equals %s although cache_n = %s: cached tokens are counted in prompt_n, which inflates the prompt speed",
				formatNum(pn), promptName, formatNum(cn))
		default:
			add(CheckPromptCount, "prompt_n + cache_n = %s + %s = %s but %s = %s",
				formatNum(pn), formatNum(cn), formatNum(pn+cn), promptName, formatNum(pt))
		}
	}
	if okP && okC && u.CachedTokens != nil {
		ct := float64(*u.CachedTokens)
		switch {
		case ct == cn:
		case cn == 0 && u.PromptTokens != nil && pn == float64(*u.PromptTokens):
			add(CheckCacheInPromptN, "%s = %s but cache_n = 0 and prompt_n = %s = %s: cached tokens are counted in prompt_n, which inflates the prompt speed",
				cachedName, formatNum(ct), promptName, formatNum(pn))
		default:
			add(CheckCacheCount, "cache_n = %s but %s = %s", formatNum(cn), cachedName, formatNum(ct))
		}
	}
	if dn, ok := t.get("predicted_n"); ok && u.CompletionTokens != nil && dn != float64(*u.CompletionTokens) {
		add(CheckPredictedCount, "predicted_n = %s but %s = %s", formatNum(dn), completionName, formatNum(float64(*u.CompletionTokens)))
	}
	return fails
}

// asInt reads a JSON integer. It returns a phrase saying what is wrong.
func asInt(v any) (int64, string) {
	num, ok := v.(json.Number)
	if !ok {
		return 0, "is " + describe(v) + ", not an integer"
	}
	s := string(num)
	if strings.ContainsAny(s, ".eE") {
		return 0, "is " + s + ", not an integer"
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || math.Abs(float64(n)) > maxExactF {
		return 0, "is " + s + ", out of range"
	}
	return n, ""
}

func isMarker(v any) bool {
	s, ok := v.(string)
	return ok && (s == markNaN || s == markPosInf || s == markNegInf)
}

func markerName(v any) string {
	switch v.(string) {
	case markNaN:
		return "NaN"
	case markPosInf:
		return "Infinity"
	default:
		return "-Infinity"
	}
}

// describe names a decoded JSON value for messages.
func describe(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return fmt.Sprintf("the boolean %v", x)
	case string:
		if isMarker(x) {
			return markerName(x)
		}
		return fmt.Sprintf("the string %q", x)
	case json.Number:
		return "the number " + string(x)
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// formatNum prints a number for messages: integers without a fraction,
// others with 6 significant digits.
func formatNum(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) < maxExactF {
		return strconv.FormatInt(int64(f), 10)
	}
	s := strconv.FormatFloat(f, 'g', 6, 64)
	if strings.Contains(s, "e+") {
		s = strconv.FormatFloat(f, 'f', 1, 64)
	}
	return s
}
