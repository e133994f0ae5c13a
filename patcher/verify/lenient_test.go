package verify

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDecodeJSON(t *testing.T) {
	tests := []struct {
		in          string
		want        any
		nonStandard bool
		wantErr     bool
	}{
		{in: `{"a":1}`, want: map[string]any{"a": json.Number("1")}},
		{in: `{"a":NaN,"b":[Infinity,-Infinity]}`, want: map[string]any{"a": markNaN, "b": []any{markPosInf, markNegInf}}, nonStandard: true},
		// The words inside strings are text, not numbers.
		{in: `{"NaN":"NaN Infinity","x":NaN}`, want: map[string]any{"NaN": "NaN Infinity", "x": markNaN}, nonStandard: true},
		{in: `{"s":"a \"NaN\" b"}`, want: map[string]any{"s": `a "NaN" b`}},
		{in: `{"a":1} x`, wantErr: true},
		{in: `{"a":NaNx}`, wantErr: true},
		{in: `<html>`, wantErr: true},
		{in: ``, wantErr: true},
	}
	for _, tc := range tests {
		got, nonStandard, err := decodeJSON([]byte(tc.in))
		if (err != nil) != tc.wantErr {
			t.Errorf("decodeJSON(%s): error %v, want error %v", tc.in, err, tc.wantErr)
			continue
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("decodeJSON(%s) (-want +got):\n%s", tc.in, diff)
		}
		if nonStandard != tc.nonStandard {
			t.Errorf("decodeJSON(%s): nonStandard %v", tc.in, nonStandard)
		}
	}
}

func TestParseStream(t *testing.T) {
	body := "event: x\n" +
		": comment\n" +
		"data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}],\"usage\":null}\n\n" +
		"data:{\"choices\":[{\"finish_reason\":\"stop\"}],\"timings\":{\"prompt_n\":1}}\r\n\r\n" +
		"  data: {\"choices\":[],\"usage\":{\"prompt_tokens\":3}}\n\n" +
		"data: [DONE]\n\n"
	st, err := parseStream([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if len(st.events) != 3 || !st.done {
		t.Fatalf("%d events, done %v", len(st.events), st.done)
	}
	// llama-swap reads the last event with a usage or timings key: the
	// usage chunk, which has no timings.
	if st.timingsLine != 1 || st.usageLine != 2 || st.swapLine != 2 {
		t.Errorf("timings %d usage %d swap %d", st.timingsLine, st.usageLine, st.swapLine)
	}

	// A null usage key counts for llama-swap (gjson's Exists is true for
	// null), but it is no usage to compare with.
	st, err = parseStream([]byte("data: {\"timings\":{}}\n\ndata: {\"usage\":null}\n\n"))
	if err != nil {
		t.Fatal(err)
	}
	if st.timingsLine != 0 || st.usageLine != -1 || st.swapLine != 1 || st.done {
		t.Errorf("timings %d usage %d swap %d done %v", st.timingsLine, st.usageLine, st.swapLine, st.done)
	}

	for _, bad := range []string{"", "hello\n", "data: {\"a\":\n\n", "data: [1]\n\n"} {
		if _, err := parseStream([]byte(bad)); err == nil {
			t.Errorf("parseStream(%q): no error", bad)
		}
	}
}
