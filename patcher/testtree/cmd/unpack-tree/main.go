// Command unpack-tree lays out a fixture vLLM tree of
// patcher/testdata/trees in a directory, its "base:" layers first, as the
// tests do (testtree.Unpack):
//
//	go run ./patcher/testtree/cmd/unpack-tree endpoints-packages "$(mktemp -d)"
//
// DIR is created if missing and must be empty: the layers are written in
// order, each over the one before, and a file left from another tree would
// make a tree no test sees. TREE is a fixture's name or its .txtar file.
// Without arguments it lists the fixtures and their layers. Exit 2 is a
// usage error, 1 a failure to write.
package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/vllm-timings/vllm-timings/patcher/testtree"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

const usage = "usage: go run ./patcher/testtree/cmd/unpack-tree TREE DIR (TREE one of the fixtures below, or its .txtar file; DIR new or empty)"

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 1 && (args[0] == "-h" || args[0] == "--help" || args[0] == "-list") || len(args) == 0 {
		out := stdout
		code := 0
		if len(args) == 0 {
			out, code = stderr, 2
		}
		fmt.Fprintln(out, usage)
		list(out)
		return code
	}
	if len(args) != 2 {
		fmt.Fprintln(stderr, "unpack-tree: "+usage)
		return 2
	}
	name := strings.TrimSuffix(filepath.Base(args[0]), ".txtar")
	if _, err := os.Stat(filepath.Join(testtree.Dir(), name+".txtar")); err != nil {
		fmt.Fprintf(stderr, "unpack-tree: no fixture %q in patcher/testdata/trees; the fixtures:\n", args[0])
		list(stderr)
		return 2
	}
	dir := args[1]
	switch entries, err := os.ReadDir(dir); {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		fmt.Fprintf(stderr, "unpack-tree: %s: %v\n", dir, err)
		return 2
	case len(entries) > 0:
		fmt.Fprintf(stderr, "unpack-tree: %s is not empty; pass a new or empty directory, for example \"$(mktemp -d)\"\n", dir)
		return 2
	}
	if err := testtree.Unpack(name, dir); err != nil {
		fmt.Fprintf(stderr, "unpack-tree: %v\n", err)
		return 1
	}
	return 0
}

// list prints each fixture with the layers it is unpacked from.
func list(w io.Writer) {
	names, err := testtree.Names()
	if err != nil {
		fmt.Fprintf(w, "  (cannot list patcher/testdata/trees: %v)\n", err)
		return
	}
	for _, n := range names {
		layers, err := testtree.Layers(n)
		if err != nil {
			fmt.Fprintf(w, "  %s (%v)\n", n, err)
			continue
		}
		if len(layers) == 1 {
			fmt.Fprintf(w, "  %s\n", n)
		} else {
			fmt.Fprintf(w, "  %s (layers: %s)\n", n, strings.Join(layers, ", "))
		}
	}
}
