// Package testtree holds what the project's tests share: it unpacks the
// fixture vLLM trees kept as txtar archives in patcher/testdata/trees,
// hashes trees so tests can show that a failed run changed nothing, and
// finds the external programs tests run (skipped outside CI, failed in it).
package testtree

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"

	"github.com/rogpeppe/go-internal/txtar"
)

// Dir is patcher/testdata/trees in the source tree.
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "testdata", "trees")
}

// RepoRoot is the repository's root directory.
func RepoRoot() string { return filepath.Clean(filepath.Join(Dir(), "..", "..", "..")) }

// Unpack writes the named fixture (without .txtar) into dir. A fixture
// whose comment has a line "base: OTHER" is OTHER with its own files written
// over it (added or replaced), so a fixture for a later vLLM holds only what
// changed.
func Unpack(name, dir string) error {
	return unpack(name, dir, 0)
}

func unpack(name, dir string, depth int) error {
	return walkLayers(name, depth, func(_ string, a *txtar.Archive) error {
		for _, f := range a.Files {
			p := filepath.Join(dir, filepath.FromSlash(f.Name))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(p, f.Data, 0o644); err != nil {
				return err
			}
		}
		return nil
	})
}

// walkLayers calls layer for each "base: OTHER" of the fixture name, depth
// first, then for name itself.
func walkLayers(name string, depth int, layer func(string, *txtar.Archive) error) error {
	if depth > 8 {
		return fmt.Errorf("fixture %s: base chain too long", name)
	}
	a, err := txtar.ParseFile(filepath.Join(Dir(), name+".txtar"))
	if err != nil {
		return err
	}
	for _, line := range strings.Split(string(a.Comment), "\n") {
		if base, ok := strings.CutPrefix(line, "base: "); ok {
			if err := walkLayers(strings.TrimSpace(base), depth+1, layer); err != nil {
				return err
			}
		}
	}
	return layer(name, a)
}

// Names lists the fixture trees, without .txtar.
func Names() ([]string, error) {
	files, err := filepath.Glob(filepath.Join(Dir(), "*.txtar"))
	if err != nil {
		return nil, err
	}
	var names []string
	for _, f := range files {
		names = append(names, strings.TrimSuffix(filepath.Base(f), ".txtar"))
	}
	sort.Strings(names)
	return names, nil
}

// Layers is the order in which Unpack writes the fixture name: its base
// layers, deepest first, then the fixture itself.
func Layers(name string) ([]string, error) {
	var layers []string
	err := walkLayers(name, 0, func(n string, _ *txtar.Archive) error {
		layers = append(layers, n)
		return nil
	})
	return layers, err
}

// Hash digests every regular file's path, mode and content below dir,
// ignoring __pycache__ directories.
func Hash(dir string) (string, error) {
	var paths []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "__pycache__" {
			return filepath.SkipDir
		}
		if !d.IsDir() {
			paths = append(paths, p)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	sort.Strings(paths)
	h := sha256.New()
	for _, p := range paths {
		st, err := os.Lstat(p)
		if err != nil {
			return "", err
		}
		rel, _ := filepath.Rel(dir, p)
		h.Write([]byte(rel + "\x00" + st.Mode().String() + "\x00"))
		if st.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return "", err
			}
			h.Write(b)
		} else if st.Mode()&fs.ModeSymlink != 0 {
			l, _ := os.Readlink(p)
			h.Write([]byte(l))
		}
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}
