package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/vllm-timings/vllm-timings/patcher"
	"github.com/vllm-timings/vllm-timings/patcher/exit"
	"github.com/vllm-timings/vllm-timings/patcher/fallback"
	"github.com/vllm-timings/vllm-timings/patcher/find"
)

// execve replaces this process; tests swap it.
var execve = syscall.Exec

// execErrorf is a failure to start COMMAND, with the shell's exit codes:
// patcher.ExitNotExecutable (126) or patcher.ExitCommandNotFound (127).
func execErrorf(code exit.Code, format string, args ...any) error {
	return exit.Errorf(code, format, args...)
}

type execOptions struct {
	applyOptions
	fallback fallbackOptions
	argv     []string
	environ  func() []string
}

func newCmdExec(errw io.Writer) *cobra.Command {
	// apply's messages go to stderr: stdout belongs to COMMAND.
	o := &execOptions{applyOptions: applyOptions{out: errw, err: errw}, environ: os.Environ}
	cmd := &cobra.Command{
		Use:   "exec [flags] -- COMMAND [ARGS...]",
		Short: "Patch vLLM, then replace this process with COMMAND (for entrypoints)",
		Long: `Patch vLLM as apply does, then execute COMMAND in place of this process: same
PID (PID 1 in a container), same stdin, stdout and stderr, so COMMAND gets
the signals (docker stop's SIGTERM) and its exit status is the container's.
COMMAND and ARGS are passed exactly as given, with no shell in between, so
nothing needs quoting. COMMAND is looked up on $PATH unless it holds a /,
as execvp does (a file without #! runs with /bin/sh).

When COMMAND is a program named vllm and neither --vllm-bin nor --vllm-dir
is given, vLLM is looked for through that program, the one that will
serve.

With --on-failure abort (the default) a failed patch stops here, with the
patcher's exit code, and COMMAND does not run. With --on-failure warn the
problem is printed and COMMAND runs anyway, without timings. A
/v1/responses or /v1/messages that fits no set is not a failure: the parts
that fit are applied, a warning names it, and COMMAND runs (--all-parts
makes it exit 29 instead).

With --overlay DIR the vLLM files are not touched (for a read-only or
non-root install): the patched modules go into DIR, and COMMAND runs with
DIR first on PYTHONPATH.

The fallback (--fallback auto, the default): the parts no patch set fits
get timings anyway, through vLLM's own extension points, editing no vLLM
file. When COMMAND is vllm serve, vllm-timings writes its middleware
module into a directory of this user's (or the overlay, or
--fallback-dir), puts that first on PYTHONPATH and adds to COMMAND
--middleware vllm_timings_fallback.TimingsMiddleware and the flags it
needs (--enable-force-include-usage, --enable-prompt-tokens-details), each
only where this vLLM has it and COMMAND does not set it. Where vLLM keeps
per-request stats (no --disable-log-stats) a stat logger plugin gives it
the engine's times. That covers everything apply did not patch: a part
no set fits, and all of them when nothing was patched (a read-only tree,
a failed apply, a vLLM no set fits: under --on-failure abort too, which
then starts vLLM with the fallback instead of stopping). Anything that
stops the fallback (COMMAND is not vllm serve, a vLLM without
--middleware, no writable directory, a Python that cannot import the
module) is a warning, and COMMAND runs as given. --fallback always adds it
for every part, --fallback off never. Without the flag,
$VLLM_TIMINGS_FALLBACK (auto, always or off) sets it: for the entries nix
model, mkModel and the NixOS module write, --env VLLM_TIMINGS_FALLBACK=off
switches the fallback off.

apply's messages go to stderr. Once COMMAND runs, its exit status is
vllm-timings'; before, the codes are apply's (127: COMMAND not found,
126: not executable):
` + patcher.ExitCodes.Text(),
		Example: `  # As a launcher image's entrypoint, in front of its own:
  docker run --entrypoint /patches/vllm-timings -v ./vllm-timings:/patches/vllm-timings:ro \
    IMAGE exec --on-failure warn -- bash docker/entrypoint.sh single

  # vLLM from a virtualenv, no Docker:
  vllm-timings exec -- /opt/venv/bin/vllm serve Qwen/Qwen3-8B --port 8000

  # Read-only root filesystem or a non-root user:
  vllm-timings exec --overlay /tmp/vllm-timings -- vllm serve Qwen/Qwen3-8B`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageErrorf("exec needs a command: vllm-timings exec [flags] -- COMMAND [ARGS...]")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			o.argv = args
			o.fallback.fromEnv(cmd, o.environ(), o.err)
			return execRun(o)
		},
	}
	// Flags after COMMAND are COMMAND's: "exec vllm serve --port 1" needs no --.
	cmd.Flags().SetInterspersed(false)
	o.register(cmd)
	o.onFailure = "abort"
	cmd.Flags().Var(&o.onFailure, "on-failure", "abort: exit with the patcher's code and do not run COMMAND; warn: print the problem and run COMMAND anyway, without timings")
	cmd.Flags().BoolVar(&o.takeOver, "take-over", false, "remove the edits of the older patch_timings scripts exactly, then apply (as apply --take-over)")
	cmd.Flags().BoolVar(&o.allParts, "all-parts", false, allPartsUsage+" (as apply --all-parts; COMMAND does not run)")
	o.registerLock(cmd)
	o.registerOverlay(cmd)
	o.fallback.register(cmd)
	return cmd
}

func execRun(o *execOptions) error {
	env := o.environ()
	path, err := lookCommand(o.argv[0], getenvFrom(env, "PATH"))
	if err != nil {
		return err
	}
	if o.vllmBin == "" && o.vllmDir == "" && filepath.Base(path) == "vllm" {
		// A vllm that is not a Python console script (a shell wrapper)
		// names no interpreter to follow: vLLM is looked for as apply
		// does.
		if _, err := find.ScriptInterpreter(path, getenvFrom(env, "PATH")); !find.IsNotConsoleScript(err) {
			o.vllmBin, o.vllmBinIs = path, "the command"
		}
	}
	o.applyOptions.fallback = fallback.Mode(o.fallback.mode) != fallback.Off && fallback.IsServe(append([]string{path}, o.argv[1:]...))
	overlay, err := applyOrWarn(&o.applyOptions)
	if err != nil && !(o.applyOptions.fallback && o.result.unfit) {
		return err
	}
	if overlay != "" {
		env = prependPythonPath(env, overlay)
	}
	j := joinFallback(o.fallback, o.result, o.overlay, path, o.argv, env)
	if err != nil {
		// No set fits chat/completions: under abort that stops here,
		// unless the fallback serves them instead.
		if j.serve == nil || !j.serve.Parts.Chat {
			if !j.notServe {
				j.report(o.err)
			}
			return err
		}
		fmt.Fprintf(o.err, "%s\n", strings.TrimRight(errorText(err), "\n"))
		logf(o.err, "warning: nothing was changed; vLLM starts with the fallback instead of the patch")
	}
	j.report(o.err)
	return execCommand(path, j.argv, j.env)
}

// execCommand replaces the process with path. Like execvp, a file the
// kernel will not run (no #!) is run with /bin/sh.
func execCommand(path string, argv, env []string) error {
	err := execve(path, argv, env)
	if errors.Is(err, syscall.ENOEXEC) {
		err = execve("/bin/sh", append([]string{"/bin/sh", path}, argv[1:]...), env)
	}
	code := patcher.ExitNotExecutable
	if errors.Is(err, fs.ErrNotExist) {
		code = patcher.ExitCommandNotFound // e.g. the #! interpreter is missing
	}
	return execErrorf(code, "exec %s: %v", argv[0], err)
}

// lookCommand finds name as execvp does: a name with a / is used as it
// is, any other is looked up on path ("/usr/local/bin:/usr/bin:/bin" when
// empty); a file found but not executable is remembered and reported if no
// later directory has an executable one.
func lookCommand(name, path string) (string, error) {
	check := func(p string) error {
		st, err := os.Stat(p)
		if err != nil {
			return err
		}
		if st.IsDir() {
			return fmt.Errorf("is a directory")
		}
		if st.Mode().Perm()&0o111 == 0 {
			return fs.ErrPermission
		}
		return nil
	}
	if name == "" {
		return "", execErrorf(patcher.ExitCommandNotFound, "exec: the command is empty")
	}
	if strings.Contains(name, "/") {
		err := check(name)
		switch {
		case err == nil:
			return name, nil
		case errors.Is(err, fs.ErrNotExist):
			return "", execErrorf(patcher.ExitCommandNotFound, "exec %s: no such file", name)
		default:
			return "", execErrorf(patcher.ExitNotExecutable, "exec %s: cannot execute: %v", name, err)
		}
	}
	if path == "" {
		path = "/usr/local/bin:/usr/bin:/bin"
	}
	denied := ""
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, name)
		err := check(p)
		if err == nil {
			return p, nil
		}
		if denied == "" && !errors.Is(err, fs.ErrNotExist) {
			denied = fmt.Sprintf("%s: %v", p, err)
		}
	}
	if denied != "" {
		return "", execErrorf(patcher.ExitNotExecutable, "exec %s: cannot execute %s", name, denied)
	}
	return "", execErrorf(patcher.ExitCommandNotFound, "exec %s: command not found on PATH=%s", name, path)
}

func getenvFrom(env []string, key string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], key+"="); ok {
			return v
		}
	}
	return ""
}

// prependPythonPath puts dir first on PYTHONPATH, keeping what was there.
func prependPythonPath(env []string, dir string) []string {
	out := make([]string, 0, len(env)+1)
	val := dir
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PYTHONPATH="); ok {
			if v != "" {
				val = dir + string(filepath.ListSeparator) + v
			}
			continue
		}
		out = append(out, kv)
	}
	return append(out, "PYTHONPATH="+val)
}
