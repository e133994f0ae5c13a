package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/vllm-timings/vllm-timings/patcher/testtree"
)

// TestRealVllmUsage runs scripts/real-vllm as a user first does, with no
// level, and checks that the usage error (exit 2) names every level the
// script accepts (its `case $l in 1 | 2 | ...` line), and that --level
// without a value does too.
func TestRealVllmUsage(t *testing.T) {
	bash := testtree.RequireTool(t, "bash")
	script := filepath.Join("..", "..", "scripts", "real-vllm")
	src, err := os.ReadFile(script)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*case \$l in ([^)]*)\)`).FindSubmatch(src)
	if m == nil {
		t.Fatal("scripts/real-vllm has no `case $l in LEVELS)` line")
	}
	var levels []string
	for _, l := range strings.Split(string(m[1]), "|") {
		levels = append(levels, strings.TrimSpace(l))
	}
	for _, args := range [][]string{nil, {"--level"}} {
		cmd := exec.Command(bash, append([]string{script}, args...)...)
		cmd.Env = append(os.Environ(), "REAL_VLLM_WORK="+t.TempDir())
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); !ok || (ee.ExitCode() != 2 && len(args) == 0) {
			t.Errorf("real-vllm %v: %v, want exit 2\n%s", args, err, out)
		}
		named := map[string]bool{}
		for _, w := range strings.FieldsFunc(string(out), func(r rune) bool { return strings.ContainsRune(" ,()\n", r) }) {
			named[w] = true
		}
		for _, l := range levels {
			if !named[l] {
				t.Errorf("real-vllm %v does not name level %s:\n%s", args, l, out)
			}
		}
	}
}
