// Command writefallback writes the fallback's module and stat logger entry
// point under a directory, as vllm-timings exec does, and prints the
// directories to put first on PYTHONPATH, separated by ":". For the
// real-vLLM levels, which mount the module in vLLM's own app:
//
//	go run ./patcher/fallback/internal/writefallback DIR
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/vllm-timings/vllm-timings/patcher/fallback"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: writefallback DIR")
		os.Exit(2)
	}
	l, err := fallback.Write(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "writefallback:", err)
		os.Exit(1)
	}
	fmt.Println(strings.Join(l.PythonPath(true), string(filepath.ListSeparator)))
}
