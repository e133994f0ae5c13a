package main

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
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
