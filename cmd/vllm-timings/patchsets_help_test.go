package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestPatchsetsHelpLanguage holds patchsets_language.txt, which
// "vllm-timings patchsets --help" prints, equal to the "The patch set
// language" section of patcher/doc.go, the language's one description.
func TestPatchsetsHelpLanguage(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "..", "patcher", "doc.go"))
	if err != nil {
		t.Fatal(err)
	}
	want := docSection(t, string(src), "The patch set language")
	const file = "patchsets_language.txt"
	if *update {
		if err := os.WriteFile(file, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff(want, languageHelp); diff != "" && !*update {
		t.Errorf("%s differs from patcher/doc.go's language section (-doc.go +txt):\n%s\nrewrite it with: go test ./cmd/vllm-timings -run TestPatchsetsHelpLanguage -u", file, diff)
	}
}

// docSection is the text of the "# heading" section of a Go doc comment, as
// plain text: comment markers gone, code blocks indented by two spaces.
func docSection(t *testing.T, src, heading string) string {
	t.Helper()
	_, rest, ok := strings.Cut(src, "\n// # "+heading+"\n")
	if !ok {
		t.Fatalf("patcher/doc.go has no section %q", heading)
	}
	var out []string
	for _, l := range strings.Split(rest, "\n") {
		if strings.HasPrefix(l, "// # ") || !strings.HasPrefix(l, "//") {
			break
		}
		l = strings.TrimPrefix(strings.TrimPrefix(l, "//"), " ")
		if strings.HasPrefix(l, "\t") {
			l = "  " + l[1:]
		}
		out = append(out, l)
	}
	return strings.Trim(strings.Join(out, "\n"), "\n") + "\n"
}
