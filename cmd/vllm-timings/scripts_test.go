package main

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/vllm-timings/vllm-timings/patcher/testtree"
)

// scriptsDir is scripts/ of this checkout.
func scriptsDir() string { return filepath.Join(testtree.RepoRoot(), "scripts") }

// scriptFiles lists the files below scripts/ (paths relative to it, with
// slashes), and which of them are executable.
func scriptFiles(t *testing.T) (all, executable []string) {
	t.Helper()
	dir := scriptsDir()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == "__pycache__" {
				return filepath.SkipDir
			}
			return nil
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if rel == "README.md" {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		all = append(all, rel)
		if info.Mode()&0o111 != 0 {
			executable = append(executable, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return all, executable
}

// TestEveryScriptHasHelp runs every executable under scripts/ with --help, as a
// newcomer would, in an environment where it could do nothing else (no
// work directory, none of docker-level's variables): each must print its
// usage, naming itself, and exit 0. Files of the container image
// (real-vllm.d/docker/) are the image's: its launcher hands every argument
// to vllm serve, as launchers do.
func TestEveryScriptHasHelp(t *testing.T) {
	_, executable := scriptFiles(t)
	if len(executable) == 0 {
		t.Fatal("no executable under scripts/")
	}
	for _, rel := range executable {
		if strings.HasPrefix(rel, "real-vllm.d/docker/") {
			continue
		}
		t.Run(rel, func(t *testing.T) {
			if strings.HasSuffix(rel, ".py") {
				testtree.RequireTool(t, "python3")
			} else {
				testtree.RequireTool(t, "bash")
			}
			cmd := exec.Command(filepath.Join(scriptsDir(), filepath.FromSlash(rel)), "--help")
			cmd.Dir = t.TempDir()
			cmd.Env = append(os.Environ(), "REAL_VLLM_WORK="+t.TempDir())
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("scripts/%s --help: %v, want exit 0\n%s", rel, err, out)
			}
			if !strings.Contains(string(out), filepath.Base(rel)) {
				t.Errorf("scripts/%s --help does not name the script (its usage line):\n%s", rel, out)
			}
		})
	}
}

// TestScriptsReadmeMapsEveryFile keeps scripts/README.md the map of
// scripts/: every file below scripts/ has a row (its path in the first
// cell, or the top directory it is in, ending in /), every row names a
// file or directory that exists, and a row says "yes" in its `.ci/run` column
// exactly when .ci/run runs that script.
func TestScriptsReadmeMapsEveryFile(t *testing.T) {
	all, _ := scriptFiles(t)
	readme, err := os.ReadFile(filepath.Join(scriptsDir(), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	ci, err := os.ReadFile(filepath.Join(testtree.RepoRoot(), ".ci", "run"))
	if errors.Is(err, fs.ErrNotExist) {
		t.Fatal(".ci/run is missing")
	} else if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("^\\| `([^`]+)` \\|")
	named := map[string]bool{}
	for _, line := range strings.Split(string(readme), "\n") {
		m := row.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		name := m[1]
		named[name] = true
		if !slices.ContainsFunc(all, func(f string) bool { return f == name || strings.HasSuffix(name, "/") && strings.HasPrefix(f, name) }) {
			t.Errorf("scripts/README.md has a row for %s, which is not a file (or a directory, ending in /) below scripts/", name)
		}
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		if len(cells) != 4 || strings.HasPrefix(name, "real-vllm.d/") {
			continue // the table of real-vllm.d's pieces has no .ci/run column
		}
		claims := strings.HasPrefix(cells[3], "yes")
		runs := regexp.MustCompile(`(?m)^scripts/` + regexp.QuoteMeta(name) + `(\s|$)`).Match(ci)
		if claims != runs {
			t.Errorf("scripts/README.md says %s is run by .ci/run: %q; .ci/run runs it: %v", name, cells[3], runs)
		}
	}
	for _, f := range all {
		if !named[f] && !named[f[:strings.Index(f, "/")+1]] {
			t.Errorf("scripts/%s has no row in scripts/README.md (the first cell: `%s`)", f, f)
		}
	}
}

// TestScriptsShellcheck keeps every shell script under scripts/ and
// .ci/run free of ShellCheck warnings and errors (-S warning; style and
// info notes are the author's call), following what each sources (-x).
func TestScriptsShellcheck(t *testing.T) {
	shellcheck := testtree.RequireTool(t, "shellcheck")
	all, _ := scriptFiles(t)
	files := []string{filepath.Join(testtree.RepoRoot(), ".ci", "run")}
	for _, rel := range all {
		path := filepath.Join(scriptsDir(), filepath.FromSlash(rel))
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		first, _, _ := strings.Cut(string(b), "\n")
		if strings.HasSuffix(rel, ".sh") || strings.HasPrefix(first, "#!") && (strings.Contains(first, "bash") || strings.HasSuffix(first, "/sh")) {
			files = append(files, path)
		}
	}
	if len(files) < 10 {
		t.Fatalf("found %d shell scripts; the scan no longer finds them", len(files))
	}
	cmd := exec.Command(shellcheck, append([]string{"-x", "-S", "warning"}, files...)...)
	cmd.Dir = testtree.RepoRoot()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("shellcheck -x -S warning: %v\n%s", err, out)
	}
}
