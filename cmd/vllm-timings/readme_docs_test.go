package main

import (
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/vllm-timings/vllm-timings/patcher/testtree"
)

// TestReadmeShape keeps the README what a newcomer reads in a few minutes:
// at most 300 lines, the test command within the first 60, and a link to
// every page of docs/, where the depth lives.
func TestReadmeShape(t *testing.T) {
	pages := testtree.Pages(t)
	readme := pages[0]
	lines := strings.Split(strings.TrimSuffix(readme.Text, "\n"), "\n")
	if len(lines) > 300 {
		t.Errorf("README.md has %d lines; keep it to 300 and move the depth to a page of docs/", len(lines))
	}
	if first := strings.Join(lines[:min(60, len(lines))], "\n"); !strings.Contains(first, "\ngo test ./...\n") {
		t.Error("README.md's first 60 lines do not show the test command `go test ./...`")
	}
	for _, p := range pages[1:] {
		if !strings.Contains(readme.Text, "]("+p.Path+")") {
			t.Errorf("README.md's map of the documentation does not link %s", p.Path)
		}
	}
}

// mdLink is a Markdown link or image: [text](target).
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestDocsLinks: every relative link in README.md and docs/ leads to a file
// of the repository, and a #fragment to a heading of its page, so moving a
// section between pages cannot leave a dangling reference.
func TestDocsLinks(t *testing.T) {
	root := testtree.RepoRoot()
	anchors := map[string]map[string]bool{}
	for _, p := range testtree.Pages(t) {
		anchors[p.Path] = headingAnchors(p.Text)
	}
	for _, p := range testtree.Pages(t) {
		for _, m := range mdLink.FindAllStringSubmatch(stripCode(p.Text), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, frag, _ := strings.Cut(target, "#")
			dest := p.Path
			if file != "" {
				dest = path.Clean(path.Join(path.Dir(p.Path), file))
				if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(dest))); err != nil {
					t.Errorf("%s links %q: no such file %s", p.Path, target, dest)
					continue
				}
			}
			if frag == "" {
				continue
			}
			a, ok := anchors[dest]
			if !ok {
				t.Errorf("%s links %q: a fragment of a file that is not a page of README.md or docs/", p.Path, target)
			} else if !a[frag] {
				t.Errorf("%s links %q: %s has no heading with the anchor %q", p.Path, target, dest, frag)
			}
		}
	}
}

// headingAnchors returns the anchors GitHub gives a page's headings: the
// text lowercased, spaces made hyphens, and punctuation other than - and _
// dropped (a repeated heading gets -1, -2, ...).
func headingAnchors(text string) map[string]bool {
	seen := map[string]int{}
	anchors := map[string]bool{}
	for _, line := range strings.Split(stripCode(text), "\n") {
		h := strings.TrimLeft(line, "#")
		if len(h) == len(line) || !strings.HasPrefix(h, " ") {
			continue
		}
		var b strings.Builder
		for _, r := range strings.ToLower(strings.TrimSpace(h)) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			anchors[a+"-"+strconv.Itoa(n)] = true
		} else {
			anchors[a] = true
		}
		seen[a]++
	}
	return anchors
}

// stripCode blanks fenced code blocks, whose lines are neither headings nor
// links.
func stripCode(text string) string {
	var out []string
	in := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "```") {
			in = !in
			out = append(out, "")
			continue
		}
		if in {
			line = ""
		}
		out = append(out, line)
	}
	return strings.Join(out, "\n")
}
