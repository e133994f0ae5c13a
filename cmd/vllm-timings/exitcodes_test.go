package main

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vllm-timings/vllm-timings/nixgen"
	"github.com/vllm-timings/vllm-timings/patcher"
	"github.com/vllm-timings/vllm-timings/patcher/exit"
	"github.com/vllm-timings/vllm-timings/patcher/install"
	"github.com/vllm-timings/vllm-timings/patcher/testtree"
	"github.com/vllm-timings/vllm-timings/patcher/verify"
)

// exitTables are the packages' exit-code tables, by the name the README's
// markers use.
var exitTables = []struct {
	name  string
	table *exit.Table
}{
	{"patcher", &patcher.ExitCodes},
	{"nixgen", &nixgen.ExitCodes},
	{"verify", &verify.ExitCodes},
	{"install", &install.ExitCodes},
}

// TestReadmeExitCodes keeps each exit-code table of the documentation
// (docs/reliability.md) equal to the package's table, which --help prints
// too. -u rewrites the page's.
func TestReadmeExitCodes(t *testing.T) {
	const end = "<!-- end exit codes -->"
	for _, tt := range exitTables {
		begin := "<!-- exit codes: " + tt.name + " -->\n"
		page := testtree.PageWith(t, begin)
		text := page.Text
		i := strings.Index(text, begin)
		j := strings.Index(text[i+len(begin):], end)
		if j < 0 {
			t.Errorf("%s has no %q after %q", page.Path, end, begin)
			continue
		}
		j += i + len(begin)
		got, want := text[i+len(begin):j], tt.table.Markdown()
		if got == want {
			continue
		}
		if *update {
			page.Write(t, text[:i+len(begin)]+want+text[j:])
			continue
		}
		t.Errorf("%s's exit codes of %s differ from %s.ExitCodes (-page +table):\n%s\nrewrite them with: go test ./cmd/vllm-timings -run TestReadmeExitCodes -u",
			page.Path, tt.name, tt.name, cmp.Diff(got, want))
	}
}

// TestExitCodesDistinct: apart from the shared 0, 1 and 2, no two packages
// claim the same code, so a script can tell from the code alone which
// step failed and why.
func TestExitCodesDistinct(t *testing.T) {
	owner := map[exit.Code]string{}
	for _, tt := range exitTables {
		for _, e := range tt.table.Entries() {
			if e.Code <= exit.Usage {
				continue
			}
			if o, ok := owner[e.Code]; ok {
				t.Errorf("exit code %d is in the tables of both %s and %s", e.Code, o, tt.name)
			}
			owner[e.Code] = tt.name
		}
	}
}
