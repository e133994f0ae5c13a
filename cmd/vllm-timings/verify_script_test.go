package main

import (
	"bytes"
	"flag"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/vllm-timings/vllm-timings/patcher/testtree"
	"github.com/vllm-timings/vllm-timings/patcher/verify/verifytest"
)

var updateVerifyScripts = flag.Bool("update-verify-scripts", false,
	"rewrite the cmp files in testdata/script/verify/*.txtar with the actual output")

// TestScriptsVerify runs testdata/script/verify/*.txtar: the command's output
// and exit codes end to end. Each script starts fake servers with
// "fakeserver" and runs the command in-process with "vllm-timings-inproc";
// "exitcode" checks the exit code of the last run. The in-process command
// cannot be called "vllm-timings": a program registered with testscript.Main
// (main_test.go registers that name) takes precedence over Params.Cmds. When a cmp fails after an
// intended change, regenerate with:
//
//	go test ./cmd/vllm-timings -run TestScriptsVerify -update-verify-scripts
func TestScriptsVerify(t *testing.T) {
	t.Cleanup(func() {
		if t.Failed() {
			t.Log("if the new output is intended, regenerate the cmp files with: go test ./cmd/vllm-timings -run TestScriptsVerify -update-verify-scripts")
		}
	})
	testscript.Run(t, testscript.Params{
		Dir:           "testdata/script/verify",
		UpdateScripts: *updateVerifyScripts,
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"vllm-timings-inproc": cmdVllmTimings,
			"fakeserver":          cmdFakeServer,
			"llamaswap":           cmdLlamaSwap,
			"exitcode":            cmdExitCode,
		},
		Condition: llamaSwapCondition,
	})
}

// llamaSwapCondition is [llamaswap]: the real llama-swap could be built.
// Under CI=true a failed build is an error, not a skip.
func llamaSwapCondition(cond string) (bool, error) {
	if cond != "llamaswap" {
		return false, fmt.Errorf("unknown condition %q", cond)
	}
	_, err := testtree.BuildLlamaSwap()
	if err != nil && os.Getenv("CI") == "true" {
		return false, fmt.Errorf("the real llama-swap could not be built, and CI=true requires it: %v", err)
	}
	return err == nil, nil
}

// inProcess serializes in-process runs: scripts run in parallel, but each run
// needs its own clock and the script's VLLM_API_KEY in the process
// environment.
var inProcess sync.Mutex

// vllm-timings-inproc ARGS... runs the command line in-process and records its exit
// code for exitcode. Every request it makes takes exactly 100 ms on its
// clock, so the tables in the scripts are reproducible.
func cmdVllmTimings(ts *testscript.TestScript, neg bool, args []string) {
	inProcess.Lock()
	var now time.Time
	verifyClock = func() time.Time {
		now = now.Add(100 * time.Millisecond)
		return now
	}
	old, had := os.LookupEnv("VLLM_API_KEY")
	os.Setenv("VLLM_API_KEY", ts.Getenv("VLLM_API_KEY"))
	var stdout, stderr bytes.Buffer
	code := run(args, &stdout, &stderr)
	if had {
		os.Setenv("VLLM_API_KEY", old)
	} else {
		os.Unsetenv("VLLM_API_KEY")
	}
	verifyClock = nil
	inProcess.Unlock()

	ts.Stdout().Write(stdout.Bytes())
	ts.Stderr().Write(stderr.Bytes())
	ts.Setenv("EXITCODE", strconv.Itoa(code))
	if code != 0 && !neg {
		ts.Fatalf("vllm-timings exited %d:\n%s", code, stderr.String())
	}
	if code == 0 && neg {
		ts.Fatalf("vllm-timings succeeded unexpectedly")
	}
}

// exitcode N checks that the last vllm-timings-inproc exited with N.
func cmdExitCode(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 || neg {
		ts.Fatalf("usage: exitcode N")
	}
	if got := ts.Getenv("EXITCODE"); got != args[0] {
		ts.Fatalf("exit code %s, want %s", got, args[0])
	}
}

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
