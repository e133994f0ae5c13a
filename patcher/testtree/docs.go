package testtree

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// A Page is one of the project's Markdown pages: README.md or a file of
// docs/. Path is relative to the repository's root.
type Page struct {
	Path string
	Text string
}

// Pages returns README.md and every docs/*.md, README first, in a fixed
// order. Tests that keep the documentation true read it through here, so
// that a section can move between pages without its test losing it.
func Pages(t testing.TB) []Page {
	t.Helper()
	root := RepoRoot()
	names, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(names)
	names = append([]string{filepath.Join(root, "README.md")}, names...)
	var pages []Page
	for _, name := range names {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, name)
		pages = append(pages, Page{Path: filepath.ToSlash(rel), Text: string(data)})
	}
	return pages
}

// PagesWith returns the pages that hold marker, in Pages' order.
func PagesWith(t testing.TB, marker string) []Page {
	t.Helper()
	var with []Page
	for _, p := range Pages(t) {
		if strings.Contains(p.Text, marker) {
			with = append(with, p)
		}
	}
	return with
}

// PageWith returns the one page that holds marker, and fails the test when
// none or several do: the documentation shows each tested block once.
func PageWith(t testing.TB, marker string) Page {
	t.Helper()
	with := PagesWith(t, marker)
	if len(with) != 1 {
		var paths []string
		for _, p := range with {
			paths = append(paths, p.Path)
		}
		t.Fatalf("want exactly one page of README.md and docs/*.md holding %q, found %d %v", marker, len(with), paths)
	}
	return with[0]
}

// Write replaces the page's text on disk (for a test's -update flag).
func (p Page) Write(t testing.TB, text string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(RepoRoot(), filepath.FromSlash(p.Path)), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}
