package main

import (
	"flag"
	"strconv"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

var updateNixScripts = flag.Bool("update-nix-scripts", false, "rewrite the expected output in testdata/script/nix/*.txtar from the actual output")

// TestScriptsNix runs the end-to-end scripts of vllm-timings nix. The
// command vllm-timings-inproc runs vllm-timings in-process (the name vllm-timings is the real binary, registered by TestMain); "! vllm-timings-inproc" expects a failure,
// and "exitcode N" checks the last exit code. Regenerate the expected
// outputs with: go test ./cmd/vllm-timings -run TestScriptsNix -update-nix-scripts
func TestScriptsNix(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script/nix",
		UpdateScripts:       *updateNixScripts,
		RequireExplicitExec: true,
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"vllm-timings-inproc": func(ts *testscript.TestScript, neg bool, args []string) {
				code := run(args, ts.Stdout(), ts.Stderr())
				ts.Setenv("VLLM_TIMINGS_EXIT", strconv.Itoa(code))
				switch {
				case neg && code == 0:
					ts.Fatalf("vllm-timings succeeded, want a failure")
				case !neg && code != 0:
					ts.Fatalf("vllm-timings exited %d", code)
				}
			},
			"exitcode": func(ts *testscript.TestScript, neg bool, args []string) {
				if neg || len(args) != 1 {
					ts.Fatalf("usage: exitcode N")
				}
				if got := ts.Getenv("VLLM_TIMINGS_EXIT"); got != args[0] {
					ts.Fatalf("last vllm-timings exit code is %s, want %s", got, args[0])
				}
			},
		},
	})
}
