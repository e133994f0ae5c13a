package compile

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/vllm-timings/vllm-timings/patcher/codes"
	"github.com/vllm-timings/vllm-timings/patcher/edit"
	"github.com/vllm-timings/vllm-timings/patcher/exit"
	"github.com/vllm-timings/vllm-timings/patcher/pysrc"
)

// Check is how the planned Python files are checked before anything
// is written.
type Check struct {
	// Python is the interpreter to compile with: "" finds python3 on
	// PATH (inside the container, vLLM's own), "-" uses only the
	// project's scanner.
	Python string
}

// Input is one planned file.
type Input struct {
	Rel      string
	Old, New []byte // Old nil: a new file
}

// pyCompileProgram runs compile() on each file, and on its old content when
// the new one fails, so that source this interpreter is too old for does
// not count against the patch. It runs on every apply that writes, so it
// imports nothing (json alone, with re, doubled the interpreter's start):
// stdin holds, per file, a line "len(rel) len(new) len(old)" (-1: no old)
// and then those bytes; stdout gets "N i line msg" for a new content that
// fails, "O i line msg" for its old one, and "done n" last.
const pyCompileProgram = `
import sys
r = sys.stdin.buffer
out = []
i = 0
def err(src, rel):
    try:
        compile(src, rel, "exec", dont_inherit=True)
        return None
    except SyntaxError as e:
        return (e.lineno or 0, e.msg or str(e))
    except (ValueError, MemoryError, RecursionError) as e:
        return (0, str(e))
while True:
    h = r.readline()
    if not h:
        break
    a, b, c = (int(x) for x in h.split())
    rel = r.read(a).decode("utf-8", "replace")
    new = r.read(b)
    old = r.read(c) if c >= 0 else None
    e = err(new, rel)
    if e:
        out.append("N %d %d %s" % (i, e[0], " ".join(str(e[1]).split())))
        if old is not None:
            o = err(old, rel)
            if o:
                out.append("O %d %d %s" % (i, o[0], " ".join(str(o[1]).split())))
    i += 1
out.append("done %d" % i)
sys.stdout.write("\n".join(out) + "\n")
`

// Run refuses (codes.Compile) any file whose new content would not
// compile while its old content did. Every file also passes the scanner's
// marker check: each marker comment of ours must be a line of its own,
// not swallowed by a string or a bracket of the inserted code. With a
// Python interpreter the verdict is compile()'s; without one, or when it
// cannot run, it is the scanner's (brackets and strings).
func (c Check) Run(files []Input) error {
	var problems []string
	var py []Input
	for _, f := range files {
		if !strings.HasSuffix(f.Rel, ".py") || f.New == nil {
			continue
		}
		if msg := edit.MarkersIntact(f.New); msg != "" && (f.Old == nil || edit.MarkersIntact(f.Old) == "") {
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
	return exit.Errorf(codes.Compile, "the patched code would not compile:\n  %s\nThe patch set's code is at fault (an unclosed bracket or string, a "+
		"bad indentation): fix the code of the edit that inserts it. Nothing was written.", strings.Join(capList(problems, 20), "\n  "))
}

type pyErr struct {
	Line int
	Msg  string
}

// pyResult is python3's verdict on one file: nil when it compiles.
type pyResult struct {
	Rel      string
	New, Old *pyErr
}

// python compiles the files with the interpreter; ran is false when there is
// none, or it could not run (then the scanner decides).
func (c Check) python(files []Input) (map[string]pyResult, bool) {
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
	var input bytes.Buffer
	for _, f := range files {
		oldLen := -1
		if f.Old != nil {
			oldLen = len(f.Old)
		}
		fmt.Fprintf(&input, "%d %d %d\n", len(f.Rel), len(f.New), oldLen)
		input.WriteString(f.Rel)
		input.Write(f.New)
		input.Write(f.Old)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// -I: no user site, no PYTHON* variables, no script directory; -S: no
	// site module (nothing a .pth file could run). compile() needs neither.
	cmd := exec.CommandContext(ctx, py, "-I", "-S", "-c", pyCompileProgram)
	cmd.Stdin = &input
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		return nil, false
	}
	results, ok := parseCompileOutput(out.String(), files)
	return results, ok
}

// parseCompileOutput reads pyCompileProgram's output; ok is false unless
// it is complete.
func parseCompileOutput(out string, files []Input) (map[string]pyResult, bool) {
	m := map[string]pyResult{}
	for _, f := range files {
		m[f.Rel] = pyResult{Rel: f.Rel}
	}
	done := false
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		fields := strings.SplitN(line, " ", 4)
		if len(fields) == 2 && fields[0] == "done" {
			done = fields[1] == strconv.Itoa(len(files))
			continue
		}
		if len(fields) < 3 || (fields[0] != "N" && fields[0] != "O") {
			return nil, false
		}
		i, err1 := strconv.Atoi(fields[1])
		ln, err2 := strconv.Atoi(fields[2])
		if err1 != nil || err2 != nil || i < 0 || i >= len(files) {
			return nil, false
		}
		msg := ""
		if len(fields) == 4 {
			msg = fields[3]
		}
		r := m[files[i].Rel]
		if fields[0] == "N" {
			r.New = &pyErr{Line: ln, Msg: msg}
		} else {
			r.Old = &pyErr{Line: ln, Msg: msg}
		}
		m[files[i].Rel] = r
	}
	return m, done
}

// capList keeps the first n items and says how many more there were.
func capList(items []string, n int) []string {
	if len(items) <= n {
		return items
	}
	return append(append([]string(nil), items[:n]...), fmt.Sprintf("... and %d more", len(items)-n))
}
