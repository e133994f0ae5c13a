package verify

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// good is a correct llama.cpp timings object: 20 evaluated + 80 cached
// prompt tokens, 16 generated.
const good = `{"prompt_n":20,"prompt_ms":40.0,"prompt_per_token_ms":2.0,"prompt_per_second":500.0,
"predicted_n":16,"predicted_ms":320.0,"predicted_per_token_ms":20.0,"predicted_per_second":50.0,"cache_n":80}`

func i64(n int64) *int64 { return &n }

var goodUsage = &Usage{PromptTokens: i64(100), CompletionTokens: i64(16), CachedTokens: i64(80)}

// with returns good with some fields replaced (raw JSON values) or, for
// the value "", removed.
func with(repl map[string]string) string {
	s := strings.NewReplacer("\n", "").Replace(good)
	for k, v := range repl {
		start := strings.Index(s, `"`+k+`":`)
		if start < 0 {
			s = strings.TrimSuffix(s, "}") + `,"` + k + `":` + v + "}"
			continue
		}
		end := start + strings.IndexAny(s[start:], ",}")
		if v == "" {
			s = s[:start] + s[end:]
			s = strings.Replace(s, ",,", ",", 1)
			s = strings.Replace(s, "{,", "{", 1)
			s = strings.Replace(s, ",}", "}", 1)
			continue
		}
		s = s[:start] + `"` + k + `":` + v + s[end:]
	}
	return s
}

func runCheck(t *testing.T, timingsJSON string, u *Usage, wallMS float64) []Finding {
	t.Helper()
	v, nonStandard, err := decodeJSON([]byte(timingsJSON))
	if err != nil {
		t.Fatalf("test input %s: %v", timingsJSON, err)
	}
	_, fails := checkTimings(checkInput{timings: v, usage: u, wallMS: wallMS, nonStandard: nonStandard})
	return fails
}

func checks(fs []Finding) []string {
	out := []string{}
	for _, f := range fs {
		out = append(out, f.Check)
	}
	sort.Strings(out)
	return out
}

func TestCheckTimings(t *testing.T) {
	tests := []struct {
		name    string
		timings string
		usage   *Usage
		wallMS  float64
		want    []string
		msg     string // a substring of the messages
	}{
		{name: "correct", timings: good, usage: goodUsage},
		{name: "correct without usage", timings: good},
		{name: "integer durations are numbers too", timings: with(map[string]string{"prompt_ms": "40", "prompt_per_second": "500"}), usage: goodUsage},
		{name: "rounded to two decimals", timings: with(map[string]string{"prompt_n": "3", "prompt_ms": "1.0", "prompt_per_token_ms": "0.33", "prompt_per_second": "3000.0", "cache_n": "97"}), usage: &Usage{PromptTokens: i64(100), CompletionTokens: i64(16)}},
		{name: "speculative decoding", timings: with(map[string]string{"draft_n": "10", "draft_n_accepted": "7"}), usage: goodUsage},
		{
			name: "no prompt evaluated: rates 0", timings: with(map[string]string{"prompt_n": "0", "prompt_ms": "0.5", "prompt_per_token_ms": "0.0", "prompt_per_second": "0.0", "cache_n": "100"}),
			usage: &Usage{PromptTokens: i64(100), CompletionTokens: i64(16), CachedTokens: i64(100)},
		},
		{name: "zero duration: rates 0", timings: with(map[string]string{"prompt_ms": "0", "prompt_per_token_ms": "0", "prompt_per_second": "0"}), usage: goodUsage},
		{
			name: "zero duration, rate from it", timings: with(map[string]string{"prompt_ms": "0", "prompt_per_token_ms": "0", "prompt_per_second": "1e308"}), usage: goodUsage,
			want: []string{CheckPerSecond}, msg: "0 is the defined value",
		},

		{name: "not an object", timings: `[1,2]`, want: []string{CheckFieldType}, msg: "timings is an array"},
		{name: "null", timings: `null`, want: []string{CheckFieldType}, msg: "timings is null"},
		{name: "missing field", timings: with(map[string]string{"cache_n": ""}), usage: goodUsage, want: []string{CheckFieldMissing}, msg: "lacks cache_n"},
		{name: "count as string", timings: with(map[string]string{"predicted_n": `"16"`}), usage: goodUsage, want: []string{CheckFieldType}, msg: `the string "16", not an integer`},
		{name: "count as float", timings: with(map[string]string{"predicted_n": `16.0`}), usage: goodUsage, want: []string{CheckFieldType}, msg: "16.0, not an integer"},
		{name: "count in exponent form", timings: with(map[string]string{"predicted_n": `1.6e1`}), usage: goodUsage, want: []string{CheckFieldType}},
		{name: "duration as bool", timings: with(map[string]string{"predicted_ms": `true`}), usage: goodUsage, want: []string{CheckFieldType}},
		{name: "NaN", timings: with(map[string]string{"prompt_per_second": `NaN`}), usage: goodUsage, want: []string{CheckNonStandardJSON, CheckNotFinite}, msg: "prompt_per_second is NaN"},
		{name: "-Infinity", timings: with(map[string]string{"prompt_ms": `-Infinity`}), usage: goodUsage, want: []string{CheckNonStandardJSON, CheckNotFinite}, msg: "-Infinity"},
		{name: "overflow", timings: with(map[string]string{"prompt_ms": `1e400`}), usage: goodUsage, want: []string{CheckNotFinite}, msg: "overflows"},
		{name: "NaN count", timings: with(map[string]string{"cache_n": `NaN`}), usage: goodUsage, want: []string{CheckNonStandardJSON, CheckNotFinite}},
		{name: "negative duration", timings: with(map[string]string{"predicted_ms": `-320.0`}), usage: goodUsage, want: []string{CheckNegative}},
		{name: "negative count", timings: with(map[string]string{"cache_n": `-1`}), usage: goodUsage, want: []string{CheckNegative}},

		{
			name: "cache counted in prompt_n", timings: with(map[string]string{"prompt_n": "100", "prompt_per_token_ms": "0.4", "prompt_per_second": "2500"}), usage: goodUsage,
			want: []string{CheckCacheInPromptN}, msg: "cached tokens are counted in prompt_n",
		},
		{
			name: "cache counted in prompt_n, cache_n 0", timings: with(map[string]string{"prompt_n": "100", "prompt_per_token_ms": "0.4", "prompt_per_second": "2500", "cache_n": "0"}), usage: goodUsage,
			want: []string{CheckCacheInPromptN}, msg: "cached_tokens = 80 but cache_n = 0",
		},
		{
			name: "prompt count off", timings: good, usage: &Usage{PromptTokens: i64(101), CompletionTokens: i64(16)},
			want: []string{CheckPromptCount}, msg: "20 + 80 = 100 but usage.prompt_tokens = 101",
		},
		{
			name: "cache count off", timings: good, usage: &Usage{PromptTokens: i64(100), CompletionTokens: i64(16), CachedTokens: i64(64)},
			want: []string{CheckCacheCount},
		},
		{
			name: "predicted count off", timings: good, usage: &Usage{PromptTokens: i64(100), CompletionTokens: i64(15)},
			want: []string{CheckPredictedCount}, msg: "predicted_n = 16 but usage.completion_tokens = 15",
		},
		{name: "usage without prompt_tokens", timings: good, usage: &Usage{CompletionTokens: i64(16)}},

		{name: "per_second in ms units", timings: with(map[string]string{"predicted_per_second": "0.05"}), usage: goodUsage, want: []string{CheckPerSecond}},
		{name: "per_second slightly off", timings: with(map[string]string{"predicted_per_second": "50.2"}), usage: goodUsage, want: []string{CheckPerSecond}},
		{name: "per_token inverted", timings: with(map[string]string{"prompt_per_token_ms": "0.5"}), usage: goodUsage, want: []string{CheckPerTokenMS}},
		{name: "per_token over prompt_tokens", timings: with(map[string]string{"prompt_per_token_ms": "0.4"}), usage: goodUsage, want: []string{CheckPerTokenMS}},

		{name: "longer than the client waited", timings: good, usage: goodUsage, wallMS: 300, want: []string{CheckWallTime}, msg: "360 ms, longer than the 300 ms"},
		{name: "within the tolerance", timings: good, usage: goodUsage, wallMS: 355},

		{name: "draft accepted > drafted", timings: with(map[string]string{"draft_n": "4", "draft_n_accepted": "5"}), usage: goodUsage, want: []string{CheckDraft}},
		{name: "draft_n alone", timings: with(map[string]string{"draft_n": "4"}), usage: goodUsage, want: []string{CheckDraft}, msg: "draft_n without draft_n_accepted"},
		{name: "draft_n float", timings: with(map[string]string{"draft_n": "4.5", "draft_n_accepted": "1"}), usage: goodUsage, want: []string{CheckFieldType}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			wall := tc.wallMS
			if wall == 0 {
				wall = 10000
			}
			fails := runCheck(t, tc.timings, tc.usage, wall)
			want := tc.want
			if want == nil {
				want = []string{}
			}
			if diff := cmp.Diff(want, checks(fails)); diff != "" {
				t.Errorf("checks (-want +got):\n%s\nfindings: %v", diff, fails)
			}
			if tc.msg != "" && !strings.Contains(fmt.Sprint(fails), tc.msg) {
				t.Errorf("no finding mentions %q: %v", tc.msg, fails)
			}
		})
	}
}

func TestParseUsage(t *testing.T) {
	v, _, err := decodeJSON([]byte(`{"prompt_tokens":100,"completion_tokens":"16","prompt_tokens_details":{"cached_tokens":null}}`))
	if err != nil {
		t.Fatal(err)
	}
	u, bad := parseUsage(v, EndpointChat)
	if u.PromptTokens == nil || *u.PromptTokens != 100 || u.CompletionTokens != nil || u.CachedTokens != nil {
		t.Errorf("usage %+v", u)
	}
	if len(bad) != 1 || bad[0].Check != CheckUsage || !strings.Contains(bad[0].Msg, "usage.completion_tokens") {
		t.Errorf("findings %v", bad)
	}
	if _, bad := parseUsage("x", EndpointChat); len(bad) != 1 {
		t.Errorf("usage string: %v", bad)
	}
}

// TestEndpointUsage: each endpoint's usage is read in its own meaning, and
// the counts of timings are checked against that, with messages that name
// the endpoint's fields.
func TestEndpointUsage(t *testing.T) {
	timings := Timings{"prompt_n": 6, "cache_n": 32, "predicted_n": 16}
	for _, tc := range []struct {
		name, endpoint, usage string
		prompt, cached        int64 // the whole prompt and the cached tokens as read; -1: absent
		fails                 []string
	}{
		{
			"responses", EndpointResponses, `{"input_tokens":38,"input_tokens_details":{"cached_tokens":32},"output_tokens":16,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":54}`,
			38, 32, nil,
		},
		{"responses v0.10.0", EndpointResponses, `{"prompt_tokens":38,"completion_tokens":16,"total_tokens":54}`, 38, -1, nil},
		{
			"responses cached wrong", EndpointResponses, `{"input_tokens":38,"input_tokens_details":{"cached_tokens":16},"output_tokens":16}`,
			38, 16,
			[]string{"cache-count: cache_n = 32 but usage.input_tokens_details.cached_tokens = 16"},
		},
		// vLLM before v0.24, or without --enable-prompt-tokens-details:
		// input_tokens is the whole prompt.
		{"messages old", EndpointMessages, `{"input_tokens":38,"output_tokens":16}`, 38, -1, nil},
		// v0.24 on with the flag: input_tokens leaves the cached tokens out,
		// 0.26 on the tokens written to the cache too.
		{"messages cache read", EndpointMessages, `{"input_tokens":6,"output_tokens":16,"cache_read_input_tokens":32,"cache_creation_input_tokens":0}`, 38, 32, nil},
		{"messages cache written", EndpointMessages, `{"input_tokens":2,"output_tokens":16,"cache_read_input_tokens":32,"cache_creation_input_tokens":4}`, 38, 32, nil},
		{"messages null cache", EndpointMessages, `{"input_tokens":38,"output_tokens":16,"cache_read_input_tokens":null}`, 38, -1, nil},
		{
			"messages prompt_n from input_tokens", EndpointMessages, `{"input_tokens":6,"output_tokens":17,"cache_read_input_tokens":26}`, 32, 26,
			[]string{
				"prompt-count: prompt_n + cache_n = 6 + 32 = 38 but usage.input_tokens + cache_read_input_tokens = 32",
				"cache-count: cache_n = 32 but usage.cache_read_input_tokens = 26",
				"predicted-count: predicted_n = 16 but usage.output_tokens = 17",
			},
		},
		// Chat ignores the other endpoints' names.
		{"chat", EndpointChat, `{"input_tokens":38,"output_tokens":16}`, -1, -1, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, _, err := decodeJSON([]byte(tc.usage))
			if err != nil {
				t.Fatal(err)
			}
			u, bad := parseUsage(v, tc.endpoint)
			if len(bad) > 0 {
				t.Fatalf("findings %v", bad)
			}
			get := func(p *int64) int64 {
				if p == nil {
					return -1
				}
				return *p
			}
			if get(u.PromptTokens) != tc.prompt || get(u.CachedTokens) != tc.cached {
				t.Errorf("read prompt %d cached %d, want %d and %d", get(u.PromptTokens), get(u.CachedTokens), tc.prompt, tc.cached)
			}
			var got []string
			for _, f := range checkUsage(timings, u) {
				got = append(got, f.Check+": "+f.Msg)
			}
			if !slices.Equal(got, tc.fails) {
				t.Errorf("checks:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.fails, "\n"))
			}
		})
	}
}

func TestFormatNum(t *testing.T) {
	for in, want := range map[float64]string{
		16: "16", 0: "0", 0.32: "0.32", 1.0 / 3: "0.333333", 3414.634146: "3414.63", 12345678.9: "12345678.9", -2.5: "-2.5",
	} {
		if got := formatNum(in); got != want {
			t.Errorf("formatNum(%v) = %q, want %q", in, got, want)
		}
	}
}
