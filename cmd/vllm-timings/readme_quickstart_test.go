package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vllm-timings/vllm-timings/patcher/testtree"
)

// tempSite is how the README shows the temporary directory the Quick
// start makes: mktemp -d's name for it, under whatever $TMPDIR is.
var tempSite = regexp.MustCompile(`\S*/tmp\.[A-Za-z0-9]+`)

// TestReadmeQuickStart runs the README's Quick start as a newcomer does:
// its sh block, with bash, from the repository's root, twice (the second
// run must not trip over the first one's files), and compares each run's
// output with the block below it.
func TestReadmeQuickStart(t *testing.T) {
	bash := testtree.RequireTool(t, "bash")
	if _, err := exec.LookPath("go"); err != nil {
		testtree.Skipf(t, "go on PATH", "SKIPPED: no go on PATH")
	}
	root := filepath.Join("..", "..")
	section := readmeSection(t, "Quick start")
	_, script, ok := strings.Cut(section, "```sh\n")
	script, rest, ok2 := strings.Cut(script, "```\n")
	_, want, ok3 := strings.Cut(rest, "```\n")
	want, _, ok4 := strings.Cut(want, "```\n")
	if !ok || !ok2 || !ok3 || !ok4 {
		t.Fatal("README.md's Quick start does not hold an sh block followed by its output block")
	}
	tmp := t.TempDir()
	for run := 1; run <= 2; run++ {
		cmd := exec.Command(bash, "-e", "-c", script)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("run %d of the Quick start: %v\n%s", run, err, out)
		}
		got := tempSite.ReplaceAllString(string(out), "/tmp/tmp.XXXXXXXXXX")
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("run %d of the Quick start: its output differs from README.md's (-readme +got):\n%s\nUpdate the output block below README.md's Quick start by hand.", run, diff)
		}
	}
}
