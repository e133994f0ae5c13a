package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vllm-timings/vllm-timings/nixgen"
	"github.com/vllm-timings/vllm-timings/patcher"
	"github.com/vllm-timings/vllm-timings/patcher/exit"
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
}

// TestReadmeExitCodes keeps each exit-code table of the README equal to the
// package's table, which --help prints too. -u rewrites the README's.
func TestReadmeExitCodes(t *testing.T) {
	path := filepath.Join("..", "..", "README.md")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	readme := string(raw)
	const end = "<!-- end exit codes -->"
	for _, tt := range exitTables {
		begin := "<!-- exit codes: " + tt.name + " -->\n"
		i := strings.Index(readme, begin)
		j := strings.Index(readme[i+len(begin):], end)
		if i < 0 || j < 0 {
			t.Errorf("README.md has no %q ... %q", begin, end)
			continue
		}
		j += i + len(begin)
		got, want := readme[i+len(begin):j], tt.table.Markdown()
		if got == want {
			continue
		}
		if *update {
			readme = readme[:i+len(begin)] + want + readme[j:]
			continue
		}
		t.Errorf("README.md's exit codes of %s differ from %s.ExitCodes (-readme +table):\n%s\nrewrite them with: go test ./cmd/vllm-timings -run TestReadmeExitCodes -u",
			tt.name, tt.name, cmp.Diff(got, want))
	}
	if *update && readme != string(raw) {
		if err := os.WriteFile(path, []byte(readme), 0o644); err != nil {
			t.Fatal(err)
		}
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
