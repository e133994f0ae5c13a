package testtree

import (
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// helperEnv makes this test binary, run again by TestSkipSummary, the
// package whose tests skip.
const helperEnv = "VLLM_TIMINGS_SKIPS_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		os.Unsetenv("CI")
	}
	os.Exit(Main(m))
}

// TestSkipHelper is the skipping package, only when TestSkipSummary runs
// it: two tests skip for a missing program, one for a missing tree.
func TestSkipHelper(t *testing.T) {
	if os.Getenv(helperEnv) == "" {
		return
	}
	for _, name := range []string{"a", "b"} {
		t.Run(name, func(t *testing.T) { RequireTool(t, "vllm-timings-no-such-program") })
	}
	t.Run("tree", func(t *testing.T) { Skipf(t, "../shared/nowhere", "SKIPPED: no tree") })
}

// TestSkipSummary runs this test binary as go test runs it and checks the
// line Main prints at the end: the package, the count, what was missing;
// on stderr without -v when there is no terminal (go test shows it when
// the package fails; on a terminal it goes to /dev/tty, which a plain go
// test ./... shows), on stdout with -v. A package that skipped nothing
// prints nothing.
func TestSkipSummary(t *testing.T) {
	want := "SKIPPED in ./patcher/testtree: 3 tests, for want of vllm-timings-no-such-program on PATH (2), ../shared/nowhere (1); go test -v ./patcher/testtree names them, CI=true fails them\n"
	run := func(env string, args ...string) (stdout, stderr string) {
		cmd := exec.Command(os.Args[0], append([]string{"-test.run=^TestSkipHelper$"}, args...)...)
		cmd.Env = append(os.Environ(), env)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // no terminal
		var o, e strings.Builder
		cmd.Stdout, cmd.Stderr = &o, &e
		if err := cmd.Run(); err != nil {
			t.Fatalf("%v\n%s%s", err, o.String(), e.String())
		}
		return o.String(), e.String()
	}
	stdout, stderr := run(helperEnv + "=1")
	if stderr != want || strings.Contains(stdout, "SKIPPED in") {
		t.Errorf("without -v: stderr %q, want %q (stdout %q)", stderr, want, stdout)
	}
	stdout, _ = run(helperEnv+"=1", "-test.v")
	if !strings.HasSuffix(stdout, want) {
		t.Errorf("with -v: stdout does not end with %q:\n%s", want, stdout)
	}
	stdout, stderr = run("UNUSED=1")
	if strings.Contains(stdout+stderr, "SKIPPED") {
		t.Errorf("nothing skipped, but the output says so:\n%s%s", stdout, stderr)
	}
}
