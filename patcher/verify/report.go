package verify

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// column is one column of the table.
type column struct {
	head  string
	left  bool
	value func(r *Result) string
}

var columns = []column{
	{"REQUEST", true, func(r *Result) string { return r.Name }},
	{"PROMPT_N", false, field("prompt_n", 0)},
	{"CACHE_N", false, field("cache_n", 0)},
	{"PROMPT_MS", false, field("prompt_ms", 2)},
	{"PROMPT_T/S", false, field("prompt_per_second", 2)},
	{"PREDICTED_N", false, field("predicted_n", 0)},
	{"PREDICTED_MS", false, field("predicted_ms", 2)},
	{"PREDICTED_T/S", false, field("predicted_per_second", 2)},
	{"USAGE P/C", false, usageCell},
	{"WALL_MS", false, func(r *Result) string { return strconv.FormatFloat(r.WallMS, 'f', 1, 64) }},
	{"RESULT", true, func(r *Result) string {
		if r.Passed() {
			return "pass"
		}
		return "FAIL"
	}},
}

// field shows one timings field: "-" if absent, a number that failed its
// checks (negative, float count) as sent, NaN/Infinity as such, "?" for any
// other type.
func field(name string, decimals int) func(r *Result) string {
	return func(r *Result) string {
		if v, ok := r.parsed.get(name); ok {
			return strconv.FormatFloat(v, 'f', decimals, 64)
		}
		obj, _ := r.Timings.(map[string]any)
		raw, present := obj[name]
		switch x := raw.(type) {
		case json.Number: // failed a check: show it as sent
			if len(x) > 14 {
				return string(x[:13]) + "…"
			}
			return string(x)
		case string:
			if x == "NaN" || x == "Infinity" || x == "-Infinity" {
				return x
			}
		}
		if !present {
			return "-"
		}
		return "?"
	}
}

func usageCell(r *Result) string {
	if r.Usage == nil {
		return "-"
	}
	part := func(p *int64) string {
		if p == nil {
			return "?"
		}
		return strconv.FormatInt(*p, 10)
	}
	return part(r.Usage.PromptTokens) + "/" + part(r.Usage.CompletionTokens)
}

// writeTable prints one row per request, then the failures and notes, then
// a summary line.
func writeTable(w io.Writer, rep *Report) {
	fmt.Fprintf(w, "server %s, model %s\n\n", rep.URL, rep.Model)
	rows := [][]string{}
	head := make([]string, len(columns))
	for i, c := range columns {
		head[i] = c.head
	}
	rows = append(rows, head)
	for _, r := range rep.Results {
		row := make([]string, len(columns))
		for i, c := range columns {
			row[i] = c.value(r)
		}
		rows = append(rows, row)
	}
	width := make([]int, len(columns))
	for _, row := range rows {
		for i, cell := range row {
			width[i] = max(width[i], len([]rune(cell)))
		}
	}
	for _, row := range rows {
		var b strings.Builder
		for i, cell := range row {
			pad := strings.Repeat(" ", width[i]-len([]rune(cell)))
			if i > 0 {
				b.WriteString("  ")
			}
			if columns[i].left {
				b.WriteString(cell)
				if i < len(row)-1 {
					b.WriteString(pad)
				}
			} else {
				b.WriteString(pad + cell)
			}
		}
		fmt.Fprintln(w, b.String())
	}

	writeSources(w, rep)
	if rep.LlamaSwap {
		writeSwapTable(w, rep)
	}

	var lines []string
	for _, r := range rep.Results {
		for _, f := range r.Failures {
			lines = append(lines, fmt.Sprintf("FAIL %s: %s", r.Name, f))
		}
	}
	for _, r := range rep.Results {
		for _, f := range r.Notes {
			lines = append(lines, fmt.Sprintf("note %s: %s", r.Name, f))
		}
	}
	if len(lines) > 0 {
		fmt.Fprintln(w)
		for _, l := range lines {
			fmt.Fprintln(w, l)
		}
	}
	fmt.Fprintln(w)
	failed := 0
	for _, r := range rep.Results {
		if !r.Passed() {
			failed++
		}
	}
	swapWrong := 0
	for _, r := range rep.Results {
		for _, f := range r.Failures {
			if f.Check == CheckLlamaSwapRow {
				swapWrong++
				break
			}
		}
	}
	switch {
	case rep.Error != "" && rep.ExitCode != ExitChecksFailed:
		fmt.Fprintf(w, "STOPPED after %d of %d requests\n", len(rep.Results), rep.Planned)
	case failed == 0 && rep.LlamaSwap:
		fmt.Fprintf(w, "PASS: all %d responses carry correct timings, and llama-swap recorded the truth for each\n", len(rep.Results))
	case failed == 0:
		fmt.Fprintf(w, "PASS: all %d responses carry correct timings\n", len(rep.Results))
	case rep.LlamaSwap:
		fmt.Fprintf(w, "FAIL: %d of %d responses have wrong or missing timings or a wrong llama-swap row (llama-swap got %d wrong)\n", failed, len(rep.Results), swapWrong)
	default:
		fmt.Fprintf(w, "FAIL: %d of %d responses have wrong or missing timings\n", failed, len(rep.Results))
	}
}

// sourceMeaning says, per x-vllm-timings value, where the timings came from.
var sourceMeaning = []struct{ value, meaning string }{
	{"patch", "the patch (the fallback passed them through)"},
	{"metrics", "vLLM's per-request metrics (engine: scheduling to first token, first to last)"},
	{"engine", "the engine's stats of the request (scheduling to first token, first to last)"},
	{"clock", "the API server's clock (arrival to first output, first to last: queueing and tokenizing count as prompt time)"},
	{"stream", "a stream: the engine's stats where the server keeps them, else the API server's clock"},
	{"none", "none: a full response without engine stats"},
}

// writeSources prints, when vllm-timings' fallback middleware answered,
// which requests got their timings from where (its x-vllm-timings header).
func writeSources(w io.Writer, rep *Report) {
	by := map[string][]string{}
	for _, r := range rep.Results {
		if r.Source != "" {
			by[r.Source] = append(by[r.Source], r.Name)
		}
	}
	if len(by) == 0 {
		return
	}
	fmt.Fprintf(w, "\nvllm-timings' fallback middleware answered (header %s):\n", FallbackHeader)
	for _, s := range sourceMeaning {
		if names := by[s.value]; len(names) > 0 {
			fmt.Fprintf(w, "  %s: %s: %s\n", s.value, s.meaning, strings.Join(names, ", "))
			delete(by, s.value)
		}
	}
	rest := make([]string, 0, len(by))
	for v := range by {
		rest = append(rest, v)
	}
	slices.Sort(rest)
	for _, v := range rest {
		fmt.Fprintf(w, "  %s: %s\n", v, strings.Join(by[v], ", "))
	}
}

// writeSwapTable prints, per request, the truth beside what llama-swap
// recorded: input (uncached prompt) tokens, cached tokens, prompt and
// generation speed, and prompt_ms + predicted_ms beside llama-swap's
// duration.
func writeSwapTable(w io.Writer, rep *Report) {
	fmt.Fprintf(w, "\nllama-swap's activity rows (each cell: truth / llama-swap)\n\n")
	head := []string{"REQUEST", "ROW", "INPUT", "CACHED", "PROMPT_T/S", "GEN_T/S", "DURATION_MS", "RESULT"}
	rows := [][]string{head}
	for _, r := range rep.Results {
		sc := r.LlamaSwap
		if sc == nil {
			continue
		}
		row := []string{r.Name, strconv.Itoa(sc.Row.ID), "", "", "", "", "", "pass"}
		pair := func(truth, got string) string { return truth + " / " + got }
		t := sc.Truth
		if t == nil {
			t = &SwapRow{}
			row[7] = "no truth"
		}
		row[2] = pair(strconv.FormatInt(t.Input, 10), strconv.FormatInt(sc.Row.Input, 10))
		row[3] = pair(strconv.FormatInt(t.Cached, 10), strconv.FormatInt(sc.Row.Cached, 10))
		row[4] = pair(strconv.FormatFloat(t.PromptPerSecond, 'f', 2, 64), strconv.FormatFloat(sc.Row.PromptPerSecond, 'f', 2, 64))
		row[5] = pair(strconv.FormatFloat(t.TokensPerSecond, 'f', 2, 64), strconv.FormatFloat(sc.Row.TokensPerSecond, 'f', 2, 64))
		row[6] = pair(strconv.FormatFloat(t.DurationMS, 'f', 1, 64), strconv.FormatFloat(sc.Row.DurationMS, 'f', 0, 64))
		if sc.Truth == nil {
			row[2], row[3], row[4], row[5], row[6] = "- / "+strconv.FormatInt(sc.Row.Input, 10), "- / "+strconv.FormatInt(sc.Row.Cached, 10), "-", "-", "-"
		}
		for _, f := range r.Failures {
			if f.Check == CheckLlamaSwapRow || f.Check == CheckLlamaSwapMetrics {
				row[7] = "FAIL"
			}
		}
		rows = append(rows, row)
	}
	width := make([]int, len(head))
	for _, row := range rows {
		for i, cell := range row {
			width[i] = max(width[i], len([]rune(cell)))
		}
	}
	for _, row := range rows {
		var b strings.Builder
		for i, cell := range row {
			pad := strings.Repeat(" ", width[i]-len([]rune(cell)))
			switch {
			case i == 0:
				b.WriteString(cell + pad)
			case i == len(row)-1:
				b.WriteString("  " + cell)
			default:
				b.WriteString("  " + pad + cell)
			}
		}
		fmt.Fprintln(w, b.String())
	}
}

// writeJSON prints the report as one indented JSON object.
func writeJSON(w io.Writer, rep *Report) error {
	if rep.Results == nil {
		rep.Results = []*Result{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}
