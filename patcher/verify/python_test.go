package verify_test

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vllm-timings/vllm-timings/patcher/testtree"

	"github.com/vllm-timings/vllm-timings/patcher/verify"
)

// TestPythonFakeServer runs verify against scripts/fake-openai-server.py,
// whose timings come from the patch's own _llamacpp_timings.py fed with
// RequestStateStats-like objects carrying real timestamps. It is the check
// that the module the patch installs produces what verify (and so
// llama-swap) expects, including where streams carry the timings.
//
// VLLM_TIMINGS_MODULE overrides the module's path.
func TestPythonFakeServer(t *testing.T) {
	python := testtree.RequireTool(t, "python3")
	module := os.Getenv("VLLM_TIMINGS_MODULE")
	if module == "" {
		module = filepath.Join("..", "patchsets", "llamacpp_timings.py")
	}
	if _, err := os.Stat(module); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the patch's timings module is missing: %v", err)
		}
		testtree.Skipf(t, "the timings module ($VLLM_TIMINGS_MODULE)", "SKIPPED: the patch's timings module is missing (%v); set VLLM_TIMINGS_MODULE", err)
	}
	script := filepath.Join("..", "..", "scripts", "fake-openai-server.py")

	cmd := exec.Command(python, script, "--module", module, "--port", "0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "listening on ")
	if err != nil || !ok {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the fake server did not start: %q %v\n%s", line, err, stderr.String())
	}

	var out bytes.Buffer
	rep, err := verify.Collect(context.Background(), verify.Options{URL: url, Stdout: &out, Timeout: time.Minute})
	if err != nil {
		t.Fatalf("verify against the patch's module: %v\n%+v", err, failuresOf(rep))
	}
	if rep.Model != "fake-vllm" || len(rep.Results) != 6 {
		t.Fatalf("model %q, %d results", rep.Model, len(rep.Results))
	}
	for _, r := range rep.Results {
		if len(r.Notes) > 0 {
			t.Errorf("%s: notes %v", r.Name, r.Notes)
		}
	}
}

func failuresOf(rep *verify.Report) []string {
	if rep == nil {
		return nil
	}
	var out []string
	for _, r := range rep.Results {
		for _, f := range r.Failures {
			out = append(out, r.Name+": "+f.String())
		}
	}
	return out
}
