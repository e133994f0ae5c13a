package main

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/vllm-timings/vllm-timings/patcher/testtree"
	"github.com/vllm-timings/vllm-timings/patcher/verify/verifytest"
)

var update = flag.Bool("u", false, "rewrite what tests compare against: the cmp files in testdata/script/**/*.txtar and the README's exit-code tables")

// binary is the name under which TestMain puts this test binary on the
// scripts' $PATH, to run as the real vllm-timings. Scripts call it through
// the vllm-timings command, which records the exit code; a program given
// to testscript.Main would take precedence over a command of that name.
const binary = "vllm-timings-binary"

// testClock, set in the scripts' environment, makes verify's clock advance
// exactly 100 ms a reading, so that its tables are the same on every run.
const testClock = "VLLM_TIMINGS_TEST_CLOCK"

func TestMain(m *testing.M) {
	testscript.Main(pythonFirst{m}, map[string]func(){
		binary: func() {
			// One OS thread for the command's work, so that strace's
			// per-thread call counts (reliability_test.go) are the same
			// in every run.
			runtime.LockOSThread()
			if os.Getenv(testClock) != "" {
				var now time.Time
				verifyClock = func() time.Time {
					now = now.Add(100 * time.Millisecond)
					return now
				}
			}
			os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
		},
	})
}

// pythonFirst runs the tests with the real python3 first on PATH
// (testtree.PythonFirstOnPath), for the scripts' python3 and the binary's
// compile check; the binary's own runs (testscript.Main's commands) do not
// go through it.
type pythonFirst struct{ m *testing.M }

func (p pythonFirst) Run() int {
	defer testtree.PythonFirstOnPath()()
	testtree.PrebuildLlamaSwap()
	code := p.m.Run()
	testtree.ReportSkips()
	return code
}

// TestScripts runs the end-to-end scripts in testdata/script and in each
// folder below it: the real binary on fixture trees (patcher commands),
// on fake servers (verify) and on flags alone (nix). When a cmp fails
// after an intended change, the failure names the command that rewrites
// the expected files.
func TestScripts(t *testing.T) {
	const dir = "testdata/script"
	t.Cleanup(func() {
		if t.Failed() {
			t.Log("if the new output is intended, rewrite the cmp files with: go test ./cmd/vllm-timings -run TestScripts -u")
		}
	})
	testscript.Run(t, scriptParams(dir))
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() {
			t.Run(e.Name(), func(t *testing.T) {
				t.Parallel()
				testscript.Run(t, scriptParams(filepath.Join(dir, e.Name())))
			})
		}
	}
}

func scriptParams(dir string) testscript.Params {
	return testscript.Params{
		Dir:                 dir,
		UpdateScripts:       *update,
		RequireExplicitExec: true,
		Setup: func(env *testscript.Env) error {
			// Scripts find nothing but what they set up.
			env.Setenv("VLLM_DIR", "")
			env.Setenv("VIRTUAL_ENV", "")
			env.Setenv(testClock, "1")
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"vllm-timings": cmdVllmTimings,
			"exitcode":     cmdExitCode,
			"unpack-tree":  cmdUnpackTree,
			"treehash":     cmdTreehash,
			"fakeserver":   cmdFakeServer,
			"llamaswap":    cmdLlamaSwap,
		},
		Condition: scriptCondition,
	}
}

// scriptCondition is [llamaswap], the real llama-swap could be built, and
// [tool:NAME], NAME is on PATH. Scripts use them as [!llamaswap] skip and
// [!tool:NAME] skip, once each, and so a false one is recorded as a
// skipped script for the package's summary (testtree.ReportSkips). Under
// CI=true a missing one is an error, not a skip.
func scriptCondition(cond string) (bool, error) {
	var what string
	var err error
	switch name, ok := strings.CutPrefix(cond, "tool:"); {
	case cond == "llamaswap":
		what = testtree.LlamaSwapMissing
		if _, err = testtree.BuildLlamaSwap(); err != nil {
			err = fmt.Errorf("the real llama-swap could not be built: %v", err)
		}
	case ok:
		what = name + " on PATH"
		_, err = exec.LookPath(name)
	default:
		return false, fmt.Errorf("unknown condition %q", cond)
	}
	if err != nil && os.Getenv("CI") == "true" {
		return false, fmt.Errorf("%v, and CI=true requires it", err)
	}
	if err != nil {
		testtree.NoteSkip(what, fmt.Sprintf("script %d", skippedScripts.Add(1)))
	}
	return err == nil, nil
}

var skippedScripts atomic.Int64

// llamaswap SCENARIO [VAR] starts a verifytest server and, in front of it,
// the real llama-swap (built from ../shared/llama-swap) with one model,
// "vllm", and sets $VAR (default URL) to llama-swap's URL; both stop when
// the script ends. Scripts guard it with [!llamaswap] skip.
func cmdLlamaSwap(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 || len(args) > 2 {
		ts.Fatalf("usage: llamaswap SCENARIO [VAR]")
	}
	name := "URL"
	if len(args) == 2 {
		name = args[1]
	}
	bin, err := testtree.BuildLlamaSwap()
	ts.Check(err) // [llamaswap] has said why
	up, err := verifytest.NewServer(args[0])
	ts.Check(err)
	ts.Defer(up.Close)
	ls, err := testtree.RunLlamaSwap(bin, map[string]string{"vllm": up.URL}, ts.MkAbs("."))
	ts.Check(err)
	ts.Defer(ls.Stop)
	ts.Setenv(name, ls.URL)
}

// vllm-timings ARGS... runs the binary in the script's directory and
// environment and records its exit code; "! vllm-timings" expects a
// failure, which exitcode N then pins down.
func cmdVllmTimings(ts *testscript.TestScript, neg bool, args []string) {
	code := 0
	if err := ts.Exec(binary, args...); err != nil {
		var exitErr *exec.ExitError
		if !errors.As(err, &exitErr) {
			ts.Fatalf("running vllm-timings: %v", err)
		}
		code = exitErr.ExitCode()
	}
	ts.Setenv("EXITCODE", strconv.Itoa(code))
	switch {
	case neg && code == 0:
		ts.Fatalf("vllm-timings succeeded, want a failure")
	case !neg && code != 0:
		ts.Fatalf("vllm-timings exited %d", code)
	}
}

// exitcode N checks that the last vllm-timings exited with N.
func cmdExitCode(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: exitcode N")
	}
	if got := ts.Getenv("EXITCODE"); got != args[0] {
		ts.Fatalf("last vllm-timings exit code is %s, want %s", got, args[0])
	}
}

// unpack-tree NAME DIR writes the fixture tree NAME into DIR.
func cmdUnpackTree(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: unpack-tree NAME DIR")
	}
	ts.Check(testtree.Unpack(args[0], ts.MkAbs(args[1])))
}

// treehash DIR prints a digest of every file below DIR.
func cmdTreehash(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: treehash DIR")
	}
	h, err := testtree.Hash(ts.MkAbs(args[0]))
	ts.Check(err)
	fmt.Fprintln(ts.Stdout(), h)
}

// fakeserver SCENARIO [VAR] starts a verifytest server on 127.0.0.1 and sets
// $VAR (default URL) to its URL; it stops when the script ends. The scenario
// "down" sets the URL of a port nothing listens on.
func cmdFakeServer(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 || len(args) > 2 {
		ts.Fatalf("usage: fakeserver SCENARIO [VAR]")
	}
	name := "URL"
	if len(args) == 2 {
		name = args[1]
	}
	if args[0] == "down" {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		ts.Check(err)
		addr := ln.Addr().String()
		ts.Check(ln.Close())
		ts.Setenv(name, "http://"+addr)
		return
	}
	srv, err := verifytest.NewServer(args[0])
	ts.Check(err)
	ts.Defer(srv.Close)
	ts.Setenv(name, srv.URL)
}
