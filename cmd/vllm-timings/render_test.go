package main

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/vllm-timings/vllm-timings/patcher/exit"
	"github.com/vllm-timings/vllm-timings/patcher/testtree"
)

// TestEveryAdviceWorded: every advice code the patcher declares has the
// command's wording in render.go's table; without it the user would get
// the library's plain hint, which does not name the flags.
func TestEveryAdviceWorded(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(testtree.RepoRoot(), "patcher", "codes", "codes.go"))
	if err != nil {
		t.Fatal(err)
	}
	decls := regexp.MustCompile(`(?m)^\s*(Advice\w+)\s+exit\.Advice = "([^"]+)"`).FindAllSubmatch(src, -1)
	if len(decls) < 10 {
		t.Fatalf("found %d advice codes in patcher/codes/codes.go; the pattern no longer matches their declarations", len(decls))
	}
	for _, d := range decls {
		if advice[exit.Advice(d[2])] == "" {
			t.Errorf("codes.%s (%q) has no wording in render.go's advice table", d[1], d[2])
		}
	}
}
