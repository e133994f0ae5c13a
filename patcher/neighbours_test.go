package patcher

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	udiff "github.com/aymanbagabas/go-udiff"

	"github.com/vllm-timings/vllm-timings/patcher/patchsets"
	"github.com/vllm-timings/vllm-timings/patcher/spec"
)

const neighboursGolden = "testdata/golden/patchset-neighbours.diff"

// TestPatchSetNeighbours pins what differs between neighbouring embedded
// patch sets. The sets repeat each other on purpose (each is whole, so a
// reader of one needs no other); this golden shows every difference, so
// a change made to one set and forgotten in its neighbour shows up in
// review. Neighbours are the sets of one part (chat, responses,
// messages), in the order of their files' names and, within a file, of
// their blocks: oldest vLLM first. A new set or file is picked up
// without changing the test.
func TestPatchSetNeighbours(t *testing.T) {
	byPart := map[string][]*spec.PatchSet{}
	var parts []string
	text := map[string]string{}              // set name → its block's HCL
	for _, s := range patchsets.Embedded() { // equal to parsing the .hcl (gensets' TestGenerated)
		file := strings.TrimPrefix(s.Source, "embedded:")
		src, err := fs.ReadFile(patchsets.FS, file)
		if err != nil {
			t.Fatal(err)
		}
		text[s.Name] = block(t, file, strings.SplitAfter(string(src), "\n"), s.Range.Start.Line)
		if byPart[s.Part] == nil {
			parts = append(parts, s.Part)
		}
		byPart[s.Part] = append(byPart[s.Part], s)
	}
	sort.Strings(parts)
	var b strings.Builder
	b.WriteString("# What differs between neighbouring embedded patch sets: the sets of one\n# part, oldest vLLM first (file name, then order in the file).\n# Rewrite with: go test ./patcher -run TestPatchSetNeighbours -update\n")
	for _, part := range parts {
		sets := byPart[part]
		fmt.Fprintf(&b, "\n# part %q: %s\n", part, strings.Join(setNames(sets), " → "))
		for i := 1; i < len(sets); i++ {
			prev, cur := sets[i-1], sets[i]
			b.WriteString(udiff.Unified(prev.Name+" ("+prev.Source+")", cur.Name+" ("+cur.Source+")", text[prev.Name], text[cur.Name]))
		}
	}
	got := b.String()
	if *update {
		if err := os.WriteFile(neighboursGolden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(neighboursGolden)
	if err != nil || string(want) != got {
		t.Errorf("the differences between neighbouring patch sets changed (%v):\n%s\nIf each change is meant, rewrite %s with: go test ./patcher -run TestPatchSetNeighbours -update",
			err, udiff.Unified(neighboursGolden, "now", string(want), got), filepath.FromSlash("patcher/"+neighboursGolden))
	}
}

// block is the patchset block that starts at line (1-based) of a file: up
// to its closing brace, the first "}" at the start of a line.
func block(t *testing.T, file string, lines []string, line int) string {
	t.Helper()
	for end := line - 1; end < len(lines); end++ {
		if strings.TrimRight(lines[end], "\r\n") == "}" {
			return strings.Join(lines[line-1:end+1], "")
		}
	}
	t.Fatalf("%s: the patchset block at line %d has no closing brace at the start of a line", file, line)
	return ""
}

func setNames(sets []*spec.PatchSet) []string {
	out := make([]string, len(sets))
	for i, s := range sets {
		out[i] = s.Name
	}
	return out
}
