package patcher

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os/exec"
	"sort"
	"strings"
	"time"

	"github.com/vllm-timings/vllm-timings/patcher/pysrc"
)

// compileCheck is how the planned Python files are checked before anything
// is written.
type compileCheck struct {
	// Python is the interpreter to compile with: "" finds python3 on
	// PATH (inside the container, vLLM's own), "-" uses only the
	// project's scanner.
	Python string
}

// compileInput is one planned file.
type compileInput struct {
	Rel      string
	Old, New []byte // Old nil: a new file
}

// pyCompileProgram runs compile() on each file, and on its old content when the new
// one fails, so that source this interpreter is too old for does not count
// against the patch. It prints one JSON object per file.
const pyCompileProgram = `
import base64, json, sys
out = []
for f in json.load(sys.stdin):
    def err(b):
        try:
            compile(base64.b64decode(b), f["rel"], "exec", dont_inherit=True)
            return None
        except SyntaxError as e:
            return {"line": e.lineno or 0, "msg": e.msg or str(e)}
        except (ValueError, MemoryError, RecursionError) as e:
            return {"line": 0, "msg": str(e)}
    r = {"rel": f["rel"], "new": err(f["new"])}
    if r["new"] is not None and f.get("old") is not None:
        r["old"] = err(f["old"])
    out.append(r)
json.dump(out, sys.stdout)
`

// check refuses (ExitCompile) any file whose new content would not
// compile while its old content did. Every file also passes the scanner's
// marker check: each marker comment of ours must be a line of its own,
// not swallowed by a string or a bracket of the inserted code. With a
// Python interpreter the verdict is compile()'s; without one, or when it
// cannot run, it is the scanner's (brackets and strings).
func (c compileCheck) check(files []compileInput) error {
	var problems []string
	var py []compileInput
	for _, f := range files {
		if !strings.HasSuffix(f.Rel, ".py") || f.New == nil {
			continue
		}
		if msg := markersIntact(f.New); msg != "" && (f.Old == nil || markersIntact(f.Old) == "") {
			problems = append(problems, fmt.Sprintf("%s: %s", f.Rel, msg))
			continue
		}
		py = append(py, f)
	}
	results, ran := c.python(py)
	for _, f := range py {
		if ran {
			r := results[f.Rel]
			if r.New != nil && (r.Old == nil || f.Old == nil) {
				problems = append(problems, fmt.Sprintf("%s line %d: %s (python3 compile())", f.Rel, r.New.Line, r.New.Msg))
			}
			if r.New == nil || r.Old == nil {
				continue
			}
			// Both fail: this python cannot judge the file; the scanner does.
		}
		if e := pysrc.Check(f.New); e != nil && (f.Old == nil || pysrc.Check(f.Old) == nil) {
			problems = append(problems, fmt.Sprintf("%s %v (vllm-timings' scanner; no python3 to compile with)", f.Rel, e))
		}
	}
	if len(problems) == 0 {
		return nil
	}
	sort.Strings(problems)
	return errorf(ExitCompile, "the patched code would not compile:\n  %s\nThe patch set's code is at fault (an unclosed bracket or string, a bad indentation): fix the code of the edit that inserts it. Nothing was written.", strings.Join(capList(problems, 20), "\n  "))
}

type pyErr struct {
	Line int    `json:"line"`
	Msg  string `json:"msg"`
}

type pyResult struct {
	Rel string `json:"rel"`
	New *pyErr `json:"new"`
	Old *pyErr `json:"old"`
}

// python compiles the files with the interpreter; ran is false when there is
// none, or it could not run (then the scanner decides).
func (c compileCheck) python(files []compileInput) (map[string]pyResult, bool) {
	if len(files) == 0 || c.Python == "-" {
		return nil, false
	}
	py := c.Python
	if py == "" {
		p, err := exec.LookPath("python3")
		if err != nil {
			return nil, false
		}
		py = p
	}
	type in struct {
		Rel string  `json:"rel"`
		Old *string `json:"old"`
		New string  `json:"new"`
	}
	var input []in
	for _, f := range files {
		x := in{Rel: f.Rel, New: base64.StdEncoding.EncodeToString(f.New)}
		if f.Old != nil {
			o := base64.StdEncoding.EncodeToString(f.Old)
			x.Old = &o
		}
		input = append(input, x)
	}
	b, _ := json.Marshal(input)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, "-I", "-S", "-c", pyCompileProgram)
	cmd.Stdin = bytes.NewReader(b)
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		return nil, false
	}
	var results []pyResult
	if err := json.Unmarshal(out.Bytes(), &results); err != nil || len(results) != len(files) {
		return nil, false
	}
	m := map[string]pyResult{}
	for _, r := range results {
		m[r.Rel] = r
	}
	return m, true
}

// markersIntact says what is wrong with src's markers: unbalanced, or one
// that a string or bracket of the code before it has swallowed.
func markersIntact(src []byte) string {
	if _, err := markedBlocks(src); err != nil {
		return err.Error()
	}
	var lines []int
	line := 1
	for off := 0; off < len(src); {
		end := bytes.IndexByte(src[off:], '\n')
		next := len(src)
		if end >= 0 {
			next = off + end + 1
		}
		t := strings.TrimLeft(string(src[off:next]), " \t")
		if strings.HasPrefix(t, markerBegin) || strings.HasPrefix(t, markerEnd) {
			lines = append(lines, line)
		}
		line++
		off = next
	}
	if len(lines) == 0 {
		return ""
	}
	inside := pysrc.Parse(src).InsideStatement(lines)
	for _, l := range lines {
		if inside[l] {
			return fmt.Sprintf("line %d: the vllm-timings marker there is inside a string or bracket that the inserted code opened and never closed", l)
		}
	}
	return ""
}

// capList keeps the first n items and says how many more there were.
func capList(items []string, n int) []string {
	if len(items) <= n {
		return items
	}
	return append(append([]string(nil), items[:n]...), fmt.Sprintf("... and %d more", len(items)-n))
}
