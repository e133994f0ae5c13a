package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/vllm-timings/vllm-timings/patcher/testtree"
)

var updateScripts = flag.Bool("u", false, "update testscript output files (cmp against files in the archive)")

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"vllm-timings": func() {
			// One OS thread for the command's work, so that strace's
			// per-thread call counts (reliability_test.go) are the same
			// in every run.
			runtime.LockOSThread()
			os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
		},
	})
}

// TestScripts runs the end-to-end scripts in testdata/script: the real
// binary (this test binary under the name vllm-timings) on fixture trees.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		UpdateScripts:       *updateScripts,
		RequireExplicitExec: true,
		Setup: func(env *testscript.Env) error {
			// Scripts find nothing but what they set up.
			env.Setenv("VLLM_DIR", "")
			env.Setenv("VIRTUAL_ENV", "")
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			// unpack-tree NAME DIR: write the fixture tree NAME into DIR.
			"unpack-tree": func(ts *testscript.TestScript, neg bool, args []string) {
				if len(args) != 2 {
					ts.Fatalf("usage: unpack-tree NAME DIR")
				}
				ts.Check(testtree.Unpack(args[0], ts.MkAbs(args[1])))
			},
			// treehash DIR: print a digest of every file below DIR.
			"treehash": func(ts *testscript.TestScript, neg bool, args []string) {
				if len(args) != 1 {
					ts.Fatalf("usage: treehash DIR")
				}
				h, err := testtree.Hash(ts.MkAbs(args[0]))
				ts.Check(err)
				fmt.Fprintln(ts.Stdout(), h)
			},
		},
	})
}
