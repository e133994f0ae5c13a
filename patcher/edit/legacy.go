package edit

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"

	"github.com/vllm-timings/vllm-timings/patcher/pysrc"
)

// The hand-written scripts this tool replaces (patch_timings_*.py, and the
// vllm-timings-*.patch files made from them, for the nightlies 07351e088
// and 1acd67a) edit vLLM's files in place and tag every edit with
// LegacyTag. A tree they edited must not be patched again beside them (the
// old code would overwrite our timings with its own), so apply refuses it
// (ExitLegacy), and apply --take-over removes their edits exactly before
// applying, so that revert then gives the pristine tree.
//
// Their edits have five shapes, recognised here by structure and not by
// their text (which is theirs):
//
//  1. a field on a response model, after a blank line:
//     "<i># llama.cpp-compatible per-request timings  # [patch_timings]"
//     then "<i>timings: ...";
//  2. a helper function at module level: a blank line, a line holding only
//     the tag, the def's block, and two blank lines;
//  3. a line "<i>_name = res  # [patch_timings]" in a streaming loop;
//  4. an "<i># Inject Timings  # [patch_timings]" comment followed, at its
//     indentation, by the statements that compute and set the timings (a
//     try block with its except clause, assignments to underscore names or
//     to .timings, an if block calling the helper, "return _comp_response"),
//     after a blank line when the comment was preceded by one;
//  5. "return X(" turned into "<i>_comp_response = X(  # [patch_timings]".
const LegacyTag = "# [patch_timings]"

// LegacyFiles are the files the old scripts edit.
var LegacyFiles = []string{
	"vllm/entrypoints/openai/chat_completion/protocol.py",
	"vllm/entrypoints/openai/chat_completion/serving.py",
	"vllm/entrypoints/openai/completion/protocol.py",
	"vllm/entrypoints/openai/completion/serving.py",
}

// legacyNames are identifiers only the old scripts' code uses; none may
// remain once their edits are removed.
var legacyNames = []string{"_compute_timings", "_last_stream_res", "_last_comp_res", "_comp_response", "_s_cached", "_sc_cached", "_comp_cached"}

var (
	legacyCapture  = regexp.MustCompile(`^_[A-Za-z0-9_]* = res  # \[patch_timings\]$`)
	legacyReturn   = regexp.MustCompile(`^_comp_response = ([A-Za-z_][A-Za-z0-9_]*)\(  # \[patch_timings\]$`)
	legacyAssign   = regexp.MustCompile(`^(_[A-Za-z0-9_]*|[A-Za-z_][A-Za-z0-9_.]*\.timings) = `)
	legacyFieldTop = "# llama.cpp-compatible per-request timings  " + LegacyTag
)

// HasLegacy reports whether src holds an edit of the old scripts.
func HasLegacy(src []byte) bool { return bytes.Contains(src, []byte(LegacyTag)) }

// RemoveLegacy returns src without the old scripts' edits and how many it
// removed. A tagged line of a shape it does not know, or anything of theirs
// left afterwards, is an error: then it does not guess.
func RemoveLegacy(src []byte) ([]byte, int, error) {
	lines := splitLines(src)
	n := len(lines)
	text := func(l int) string { return strings.TrimRight(lines[l-1], "\r\n") } // 1-based
	blank := func(l int) bool { return l >= 1 && l <= n && strings.TrimSpace(lines[l-1]) == "" }
	f := pysrc.Parse(src)
	stmtAt := map[int]int{} // first line -> statement index
	for i, s := range f.Stmts {
		stmtAt[s.Line] = i
	}
	// blockEnd is the last line of statement i and its block.
	blockEnd := func(i int) int { return f.Stmts[f.Stmts[i].BlockEnd-1].EndLine }
	del := make([]bool, n+2)
	repl := map[int]string{}
	edits := 0
	deleteLines := func(from, to int) {
		for l := from; l <= to; l++ {
			del[l] = true
		}
	}
	for l := 1; l <= n; l++ {
		if del[l] || !strings.Contains(lines[l-1], LegacyTag) {
			continue
		}
		t := strings.TrimSpace(text(l))
		indent := text(l)[:len(text(l))-len(strings.TrimLeft(text(l), " \t"))]
		eol := lines[l-1][len(text(l)):]
		switch {
		case t == LegacyTag: // 2: the helper
			i, ok := stmtAt[l+1]
			if !ok || f.Stmts[i].Kind != "def" || f.Stmts[i].Indent != indent {
				return nil, 0, fmt.Errorf("line %d: the old scripts' tag is not followed by their helper function", l)
			}
			end := blockEnd(i)
			if !blank(l-1) || !blank(end+1) || !blank(end+2) {
				return nil, 0, fmt.Errorf("line %d: the old scripts' helper is not surrounded by the blank lines they add", l)
			}
			deleteLines(l-1, end+2)
		case t == legacyFieldTop: // 1: the response field
			i, ok := stmtAt[l+1]
			if !ok || !strings.HasPrefix(f.Stmts[i].Text, "timings:") || !blank(l-1) {
				return nil, 0, fmt.Errorf("line %d: the old scripts' timings field is not where they put it", l)
			}
			deleteLines(l-1, f.Stmts[i].EndLine)
		case strings.HasPrefix(t, "# Inject Timings") && strings.HasSuffix(t, LegacyTag): // 4
			last := l
			for k, ok := stmtAt[last+1]; ok; k, ok = stmtAt[last+1] {
				s := f.Stmts[k]
				if s.Indent != indent {
					break
				}
				body := string(src[s.Start:f.Stmts[s.BlockEnd-1].End])
				switch {
				case strings.HasPrefix(s.Text, "try:"):
					last = blockEnd(k)
					// and its except clauses
					for e, ok := stmtAt[last+1]; ok && f.Stmts[e].Indent == indent && strings.HasPrefix(f.Stmts[e].Text, "except"); e, ok = stmtAt[last+1] {
						last = blockEnd(e)
					}
				case strings.HasPrefix(s.Text, "if ") && strings.Contains(body, "_compute_timings"):
					last = blockEnd(k)
				case legacyAssign.MatchString(s.Text):
					last = s.EndLine
				case s.Text == "return _comp_response":
					last = s.EndLine
				default:
					ok = false
				}
				if !ok || s.Text == "return _comp_response" {
					break
				}
			}
			if last == l {
				return nil, 0, fmt.Errorf("line %d: the old scripts' comment is not followed by their code", l)
			}
			from := l
			if blank(l - 1) {
				from = l - 1
			}
			deleteLines(from, last)
		case legacyCapture.MatchString(t): // 3
			deleteLines(l, l)
		case legacyReturn.MatchString(t): // 5
			m := legacyReturn.FindStringSubmatch(t)
			repl[l] = indent + "return " + m[1] + "(" + eol
		default:
			return nil, 0, fmt.Errorf("line %d: %q is an edit of the old patch_timings scripts that vllm-timings does not know", l, clip(t, 100))
		}
		edits++
	}
	var out bytes.Buffer
	for l := 1; l <= n; l++ {
		switch {
		case del[l]:
		case repl[l] != "":
			out.WriteString(repl[l])
		default:
			out.WriteString(lines[l-1])
		}
	}
	res := out.Bytes()
	if HasLegacy(res) {
		return nil, 0, fmt.Errorf("the old scripts' tag remains after their edits were removed")
	}
	for _, name := range legacyNames {
		if bytes.Contains(res, []byte(name)) {
			return nil, 0, fmt.Errorf("%s, used only by the old scripts' code, remains after their edits were removed", name)
		}
	}
	return res, edits, nil
}

// splitLines splits src after each newline; the last line may lack one.
func splitLines(src []byte) []string {
	var out []string
	for len(src) > 0 {
		i := bytes.IndexByte(src, '\n')
		if i < 0 {
			out = append(out, string(src))
			break
		}
		out = append(out, string(src[:i+1]))
		src = src[i+1:]
	}
	return out
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
