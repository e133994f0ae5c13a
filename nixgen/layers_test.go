package nixgen

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vllm-timings/vllm-timings/nixgen/swaptest"
	"github.com/vllm-timings/vllm-timings/patcher/testtree"
)

// A layerCase is one input taken through every layer a model's cmd passes:
//
//  1. Nix: Go's rendering of the model, evaluated by nix-instantiate (and
//     fragments.nix's mkModel, which must agree: checkParity);
//  2. llama-swap: its own config loader (swaptest) substitutes the macros and
//     ${PORT} and splits cmd into the argv it runs, which must be the
//     intended one word for word;
//  3. the container: the argv runs as llama-swap would run it; docker run is
//     done by the test (runArgv: the -e variables, the entrypoint, a
//     "container" directory), then real bash for bash -c, and stubs for the
//     patcher, vllm, pip and python3 that record their argv.
type layerCase struct {
	name string
	v    variant
	// swapEnv is the model's llama-swap env list (NAME=VALUE), the
	// environment llama-swap starts docker with: what -e NAME passes on.
	swapEnv []string
	// wantBefore are the stub calls the before statements make, as
	// [stub name, args...]; the stub's path is filled in.
	wantBefore [][]string
	// wantServe are the serve arguments vllm gets after bash, with macros
	// (substituted by the test); nil means the plain arguments.
	wantServe []string
	// stubFail names a stub (pip, python3) that exits 7.
	stubFail string
	// wantStop: the run stops after the before statements with this exit
	// code (set -e and a failing stub).
	wantStop int
	// patcherFails also runs the case with a patcher that exits 13:
	// warn must start vLLM anyway, abort must stop with 13.
	patcherFails bool
	// mayRefuse accepts a refusal with a nixgen exit code (by both
	// implementations: checkParity).
	mayRefuse bool
	// argvOnly stops after llama-swap's argv: for words no shell reads,
	// which the argv check has already followed to where they go.
	argvOnly bool
}

// The stubs. Each appends its argv ($0 first) to $STUB_LOG, NUL-separated,
// one line per call (nixgen refuses newlines, so none is in an argument).
const (
	stubRecord = "{ printf '%s\\0' \"$0\" \"$@\"; printf '\\n'; } >>\"$STUB_LOG\"\n"
	// A program in the container's PATH: vllm, pip, python3.
	stubProgram = "#!/bin/sh\n" + stubRecord + "[ \"${0##*/}\" = \"$STUB_FAIL\" ] && exit 7\nexit 0\n"
	// The patcher, with the interface of vllm-timings apply and exec
	// (exec [--vllm-dir D] [--vllm-bin P] [--patchset F]... [--on-failure
	// abort|warn] [--overlay D] -- COMMAND...): it exits $PATCHER_EXIT, and
	// exec then runs COMMAND unless it failed with abort.
	stubPatcher = "#!/bin/sh\n" + stubRecord + `case $1 in
apply) exit "$PATCHER_EXIT" ;;
exec) shift ;;
*) echo "stub patcher: unknown command $1" >&2; exit 2 ;;
esac
onfail=abort
while [ $# -gt 0 ]; do
  case $1 in
  --) shift; break ;;
  --vllm-dir|--vllm-bin|--patchset|--overlay) [ $# -ge 2 ] || exit 2; shift 2 ;;
  --on-failure) [ $# -ge 2 ] || exit 2; onfail=$2; shift 2 ;;
  *) echo "stub patcher: exec does not take $1" >&2; exit 2 ;;
  esac
done
[ $# -gt 0 ] || { echo "stub patcher: exec has no command after --" >&2; exit 2; }
if [ "$PATCHER_EXIT" != 0 ] && [ "$onfail" != warn ]; then exit "$PATCHER_EXIT"; fi
exec "$@"
`
	// The image's own entrypoint in the launcher cases:
	// entrypoint = [ "bash" "docker/entrypoint.sh" ].
	stubLauncher = "exec vllm serve --from-launcher \"$@\"\n"
)

// runLayers takes every case through the layers, each in a subtest named
// after it, in parallel. All cases are evaluated in one nix-instantiate
// call and loaded by llama-swap in one config.
func runLayers(t *testing.T, cases []layerCase) {
	t.Helper()
	testtree.RequireTool(t, "bash")
	dir := t.TempDir()
	// What every case shares: the container's PATH (bin), its working
	// directory with the launcher, and the patcher stub that each case links
	// to its own mount path (a link is one system call; the cases are many).
	common := filepath.Join(dir, "common")
	for _, name := range []string{"vllm", "pip", "python3"} {
		writeFile(t, filepath.Join(common, "bin", name), stubProgram, 0o755)
	}
	writeFile(t, filepath.Join(common, "docker", "entrypoint.sh"), stubLauncher, 0o644)
	writeFile(t, filepath.Join(common, "patcher"), stubPatcher, 0o755)
	for i := range cases {
		c := &cases[i]
		// Unique names: one llama-swap config holds every case.
		c.v.model.Name = fmt.Sprintf("c%d-%s", i, sanitizeName(c.name))
		root := filepath.Join(dir, strconv.Itoa(i))
		if c.v.model.form() == formVenv {
			// The host form runs the binary and the venv where they are.
			c.v.opts.Binary = root + c.v.opts.Binary
			c.v.model.Venv = root + c.v.model.Venv
		} else {
			mount := c.v.opts.Mount
			if mount == "" {
				mount = DefaultMount
			}
			c.v.opts.Mount = root + mount
		}
	}
	vs := make([]variant, len(cases))
	for i, c := range cases {
		vs[i] = c.v
	}
	outs := evalVariants(t, vs)

	models := map[string]any{}
	for i, c := range cases {
		if outs[i].modelErr != nil {
			continue
		}
		raw, err := json.Marshal(outs[i].goNix.Model[c.v.model.Name])
		if err != nil {
			t.Fatal(err)
		}
		var entry map[string]any
		if err := json.Unmarshal(raw, &entry); err != nil {
			t.Fatal(err)
		}
		if c.swapEnv != nil {
			entry["env"] = c.swapEnv
		}
		models[c.v.model.Name] = entry
	}
	config, err := json.Marshal(map[string]any{"startPort": 5800, "models": models})
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := swaptest.Load(t, config)
	if err != nil {
		t.Fatalf("%v\n(a config of %d models)", err, len(models))
	}

	t.Run("cases", func(t *testing.T) {
		for i, c := range cases {
			t.Run(c.v.model.Name, func(t *testing.T) {
				t.Parallel()
				checkParity(t, c.v, outs[i])
				if err := outs[i].modelErr; err != nil {
					if !c.mayRefuse {
						t.Fatalf("refused: %v", err)
					}
					checkRefusal(t, err)
					t.Logf("refused: %v", err)
					return
				}
				lm, ok := loaded[c.v.model.Name]
				if !ok {
					t.Fatal("llama-swap's loader lost the model")
				}
				c.check(t, filepath.Join(dir, strconv.Itoa(i)), common, lm, outs[i].goNix.Model[c.v.model.Name].Cmd)
			})
		}
	})
}

func sanitizeName(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, s)
}

// forkMu keeps files from being written while a process is forked: a child
// forked while a file is open for writing holds it until it execs, and
// executing that file then fails with "text file busy" (golang/go#22315).
// Writers take the write lock; cmd.Start, which returns once the child has
// exec'd, takes the read lock.
var forkMu sync.RWMutex

func writeFile(t *testing.T, p, data string, mode os.FileMode) string {
	t.Helper()
	forkMu.Lock()
	defer forkMu.Unlock()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), mode); err != nil {
		t.Fatal(err)
	}
	return p
}

// intended is s with the macros replaced the way the user means them.
func (c *layerCase) intended(port int, s string) string {
	for k, val := range c.v.model.Macros {
		s = strings.ReplaceAll(s, "${"+k+"}", val)
	}
	s = strings.ReplaceAll(s, "${MODEL_ID}", c.v.model.Name)
	return strings.ReplaceAll(s, "${PORT}", strconv.Itoa(port))
}

// wantContainerPaths computes the patch sets' container paths from the
// documented rule, "<mount>.d/<n>-<basename>", without nixgen's code.
func wantContainerPaths(o Options) []string {
	var ps []string
	for i, p := range o.Patchsets {
		ps = append(ps, fmt.Sprintf("%s.d/%d-%s", o.Mount, i+1, p[strings.LastIndex(p, "/")+1:]))
	}
	return ps
}

func (c *layerCase) onFailure() string {
	if c.v.opts.OnFailure == "" {
		return "warn"
	}
	return c.v.opts.OnFailure
}

// check compares llama-swap's argv for the case with the intended one and
// runs it; root is the case's own directory, common the shared one.
func (c *layerCase) check(t *testing.T, root, common string, lm swaptest.Model, cmd string) {
	v, m := c.v, c.v.model
	if lm.ArgvError != "" {
		t.Fatalf("llama-swap cannot split the cmd: %s\n%s", lm.ArgvError, cmd)
	}
	u, err := url.Parse(lm.Proxy)
	if err != nil {
		t.Fatal(err)
	}
	port, err := strconv.Atoi(u.Port())
	if err != nil {
		t.Fatalf("proxy %q: %v", lm.Proxy, err)
	}
	// The in-process model of llama-swap (FuzzWordsInProcess uses it) must
	// agree with the real loader.
	if model, err := llamaSwapArgv(cmd, m.Name, m.Macros, port); err != nil || !slices.Equal(model, lm.Argv) {
		t.Errorf("llamaswap_test.go's model of llama-swap disagrees with its loader (err %v):\n%s", err, cmp.Diff(lm.Argv, model))
	}

	bin := filepath.Join(common, "bin")
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	link := func(src, dst string) string {
		t.Helper()
		forkMu.Lock()
		defer forkMu.Unlock()
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Link(src, dst); err != nil && !os.IsExist(err) {
			t.Fatal(err)
		}
		return dst
	}
	patcher := filepath.Join(common, "patcher")

	var serve []string
	if c.wantServe != nil {
		for _, a := range c.wantServe {
			serve = append(serve, c.intended(port, a))
		}
	} else {
		for _, a := range m.ServeArgs {
			serve = append(serve, c.intended(port, a.Text))
		}
	}
	var want, wantPatcher, wantVllm []string
	imageIndex := 0
	switch m.form() {
	case formVenv:
		link(patcher, v.opts.Binary)
		vllm := link(filepath.Join(bin, "vllm"), filepath.Join(m.Venv, "bin", "vllm"))
		want = []string{v.opts.Binary, "exec", "--on-failure", c.onFailure()}
		for _, p := range v.opts.Patchsets {
			want = append(want, "--patchset", p)
		}
		want = append(want, wantOverlay(m.Overlay)...)
		want = append(want, "--vllm-bin", vllm, "--", vllm, "serve")
		want = append(want, serve...)
		wantPatcher = want
		wantVllm = append([]string{vllm, "serve"}, serve...)
	default:
		link(patcher, v.opts.Mount)
		containerPaths := wantContainerPaths(v.opts)
		for _, p := range containerPaths {
			link(patcher, p) // any file will do
		}
		docker := m.Docker
		if docker == "" {
			docker = "docker"
		}
		publish := m.Publish
		if publish == "" {
			publish = "127.0.0.1:${PORT}:8000"
		}
		want = []string{c.intended(port, docker), "run", "--rm", "--name", m.Name, "-p", c.intended(port, publish)}
		want = append(want, "-v", v.opts.Binary+":"+v.opts.Mount+":ro")
		for i, p := range v.opts.Patchsets {
			want = append(want, "-v", p+":"+containerPaths[i]+":ro")
		}
		env := slices.Clone(m.PassEnv)
		for k, val := range m.Env {
			env = append(env, k+"="+c.intended(port, val))
		}
		slices.SortFunc(env, func(a, b string) int { return strings.Compare(envKey(a), envKey(b)) })
		for _, e := range env {
			want = append(want, "-e", e)
		}
		want = append(want, wantShm(m.ExtraDockerArgs)...)
		for _, a := range m.ExtraDockerArgs {
			want = append(want, c.intended(port, a))
		}
		if m.form() == formEntrypoint {
			want = append(want, "--entrypoint", v.opts.Mount)
		} else {
			want = append(want, "--entrypoint", "/bin/bash")
		}
		imageIndex = len(want) - 1 // counted after "run"
		want = append(want, c.intended(port, m.Image))
		wantPatcher = []string{v.opts.Mount}
		if m.form() == formEntrypoint {
			wantPatcher = append(wantPatcher, "exec", "--on-failure", c.onFailure())
			for _, p := range containerPaths {
				wantPatcher = append(wantPatcher, "--patchset", p)
			}
			wantPatcher = append(wantPatcher, wantOverlay(m.Overlay)...)
			wantPatcher = append(wantPatcher, "--")
			for _, e := range m.Entrypoint {
				wantPatcher = append(wantPatcher, c.intended(port, e))
			}
			wantPatcher = append(wantPatcher, serve...)
			want = append(want, wantPatcher[1:]...)
			if slices.Equal(m.Entrypoint, []string{"vllm", "serve"}) {
				// The image's own ENTRYPOINT ["vllm", "serve"].
				wantVllm = append([]string{filepath.Join(bin, "vllm"), "serve"}, serve...)
				break
			}
			if !slices.Equal(m.Entrypoint[:2], []string{"bash", "docker/entrypoint.sh"}) {
				t.Fatalf("the test's launcher is bash docker/entrypoint.sh, not %q", m.Entrypoint)
			}
			// The launcher runs vllm serve --from-launcher "$@".
			wantVllm = []string{filepath.Join(bin, "vllm"), "serve", "--from-launcher"}
			for _, e := range m.Entrypoint[2:] {
				wantVllm = append(wantVllm, c.intended(port, e))
			}
			wantVllm = append(wantVllm, serve...)
		} else if m.Overlay != "" {
			// bash -c "... exec PATCHER exec ... --overlay DIR -- vllm serve ARGS"
			wantPatcher = append(wantPatcher, "exec", "--on-failure", c.onFailure())
			for _, p := range containerPaths {
				wantPatcher = append(wantPatcher, "--patchset", p)
			}
			wantPatcher = append(wantPatcher, wantOverlay(m.Overlay)...)
			wantPatcher = append(append(wantPatcher, "--", "vllm", "serve"), serve...)
			want = append(want, "-c")
			wantVllm = append([]string{filepath.Join(bin, "vllm"), "serve"}, serve...)
		} else {
			// bash -c "... set -- ARGS; shopt -s execfail; exec PATCHER
			// exec ... -- vllm serve "$@" || exec vllm serve "$@""
			wantPatcher = append(wantPatcher, "exec", "--on-failure", c.onFailure())
			for _, p := range containerPaths {
				wantPatcher = append(wantPatcher, "--patchset", p)
			}
			wantPatcher = append(append(wantPatcher, "--", "vllm", "serve"), serve...)
			want = append(want, "-c")
			wantVllm = append([]string{filepath.Join(bin, "vllm"), "serve"}, serve...)
		}
	}
	got := lm.Argv
	if m.form() == formBash {
		if len(got) != len(want)+1 {
			t.Fatalf("llama-swap splits cmd into %d words, want %d (-want +got):\n%s", len(got), len(want)+1, cmp.Diff(want, got))
		}
		got = got[:len(want)]
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("argv after llama-swap (-want +got):\n%s\ncmd: %s", diff, cmd)
	}

	if c.argvOnly {
		return
	}
	var wantBefore [][]string
	for _, b := range c.wantBefore {
		call := []string{filepath.Join(bin, b[0])}
		for _, a := range b[1:] {
			call = append(call, c.intended(port, a))
		}
		wantBefore = append(wantBefore, call)
	}
	run := func(patcherExit int) ([][]string, int) {
		return runArgv(t, root, common, lm, imageIndex, c.stubFail, patcherExit)
	}
	calls, code := run(0)
	want2 := append(slices.Clone(wantBefore), wantPatcher, wantVllm)
	wantCode := 0
	if c.wantStop != 0 {
		want2, wantCode = wantBefore, c.wantStop
	}
	if diff := cmp.Diff(want2, calls); diff != "" || code != wantCode {
		t.Fatalf("the run: exit %d (want %d), calls (-want +got):\n%s\nargv: %q", code, wantCode, diff, lm.Argv)
	}
	if !c.patcherFails {
		return
	}
	calls, code = run(13)
	if c.onFailure() == "warn" {
		if diff := cmp.Diff(append(slices.Clone(wantBefore), wantPatcher, wantVllm), calls); diff != "" || code != 0 {
			t.Fatalf("a failing patcher with warn: exit %d, calls (-want +got):\n%s", code, diff)
		}
	} else if diff := cmp.Diff(append(slices.Clone(wantBefore), wantPatcher), calls); diff != "" || code != 13 {
		t.Fatalf("a failing patcher with abort: exit %d (want 13), calls (-want +got):\n%s", code, diff)
	}
	if m.form() != formBash || m.Overlay != "" {
		return
	}
	// The stock form with a patcher that cannot be executed at all (docker
	// makes a directory of a -v source that is missing): under warn bash's
	// execfail starts vllm serve as given; under abort bash stops (126).
	if err := os.Remove(v.opts.Mount); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(v.opts.Mount, 0o755); err != nil {
		t.Fatal(err)
	}
	calls, code = run(-1)
	if c.onFailure() == "warn" {
		if diff := cmp.Diff(append(slices.Clone(wantBefore), wantVllm), calls); diff != "" || code != 0 {
			t.Fatalf("a patcher that cannot run, with warn: exit %d, calls (-want +got):\n%s", code, diff)
		}
	} else if diff := cmp.Diff(wantBefore, calls); diff != "" || code != 126 {
		t.Fatalf("a patcher that cannot run, with abort: exit %d (want 126), calls (-want +got):\n%s", code, diff)
	}
}

func envKey(e string) string { k, _, _ := strings.Cut(e, "="); return k }

// runArgv runs llama-swap's argv as llama-swap does: the program with
// llama-swap's environment plus the model's env list. When the program is
// docker (imageIndex > 0: the image's position in argv), it is docker run
// done here, in the test: like Docker, it gives the entrypoint only the -e
// variables (NAME alone copies docker's own value, when set), the
// container's PATH and the stubs' settings, and runs it in the container's
// directory. (A docker stub in bash did the same at one more process per
// run.) It returns the stubs' calls and the exit code.
func runArgv(t *testing.T, root, common string, lm swaptest.Model, imageIndex int, stubFail string, patcherExit int) ([][]string, int) {
	t.Helper()
	log := filepath.Join(root, fmt.Sprintf("calls-%d", patcherExit))
	os.Remove(log)
	stubs := []string{"STUB_LOG=" + log, "STUB_FAIL=" + stubFail, "PATCHER_EXIT=" + strconv.Itoa(patcherExit)}
	env := append(append([]string{"PATH=/usr/bin:/bin", "HOME=/nonexistent-home"}, stubs...), lm.Env...)
	argv := lm.Argv
	if imageIndex > 0 {
		if argv[1] != "run" {
			t.Fatalf("docker %s: the test runs docker run only", argv[1])
		}
		lookup := func(name string) (string, bool) {
			for i := len(env) - 1; i >= 0; i-- {
				if k, v, _ := strings.Cut(env[i], "="); k == name {
					return v, true
				}
			}
			return "", false
		}
		container := append([]string{"PATH=" + filepath.Join(common, "bin") + ":/usr/bin:/bin"}, stubs...)
		entrypoint := ""
		opts := argv[2 : imageIndex+1]
		for i := 0; i < len(opts); i++ {
			switch opts[i] {
			case "-e":
				i++
				if strings.Contains(opts[i], "=") {
					container = append(container, opts[i])
				} else if v, ok := lookup(opts[i]); ok {
					container = append(container, opts[i]+"="+v)
				}
			case "--entrypoint":
				i++
				entrypoint = opts[i]
			}
		}
		argv = append([]string{entrypoint}, argv[imageIndex+2:]...)
		env = container
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = common
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	code := 0
	forkMu.RLock()
	err := cmd.Start()
	forkMu.RUnlock()
	if err == nil {
		err = cmd.Wait()
	}
	if err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatal(err)
		}
		code = ee.ExitCode()
	}
	// patcherExit -1: the patcher cannot be executed, and bash says so.
	if stderr.Len() > 0 && !(patcherExit < 0 && bytes.Contains(stderr.Bytes(), []byte("cannot execute"))) {
		t.Errorf("the run wrote to stderr: %s", stderr.Bytes())
	}
	raw, err := os.ReadFile(log)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var calls [][]string
	for _, rec := range strings.Split(string(raw), "\n") {
		if rec == "" {
			continue
		}
		calls = append(calls, strings.Split(strings.TrimSuffix(rec, "\x00"), "\x00"))
	}
	return calls, code
}

// layerVariants are the accepted parity variants and the golden models, as
// layer cases whose patcher also fails once.
func layerVariants() []layerCase {
	var cases []layerCase
	add := func(name string, v variant) {
		if _, err := NewModel(v.opts, v.model); err != nil {
			return
		}
		c := layerCase{name: name, v: v, patcherFails: true}
		if len(v.model.Before) > 0 || slices.ContainsFunc(v.model.ServeArgs, func(a Arg) bool { return a.Raw }) {
			return // their bash effects are checked by name in TestLayersBash
		}
		cases = append(cases, c)
	}
	for _, v := range parityVariants {
		add(v.model.Name, v)
	}
	for _, g := range goldenCases {
		if g.model != nil && g.function == false {
			add(g.name, variant{opts: g.opts, model: *g.model})
		}
	}
	add("weird-mount", variant{
		opts:  Options{Binary: "/b", Mount: `/m/it's "x" $HOME ${a b} ` + "`b`" + ` \ ☕/vt`, Patchsets: []string{"/p/it's.hcl", `/p/"q" $x.hcl`}},
		model: ModelOptions{Image: "img", ServeArgs: Args("ok")},
	})
	add("same-patchset-twice", variant{
		opts:  Options{Binary: "/b", OnFailure: "abort", Patchsets: []string{"/p/a.hcl", "/p/a.hcl"}},
		model: ModelOptions{Image: "img"},
	})
	return cases
}

// TestLayers takes the parity variants and the golden models through every
// layer, with a patcher that succeeds and one that fails.
func TestLayers(t *testing.T) {
	runLayers(t, layerVariants())
}

// wantShm is the shared-memory word the Docker forms add before the extra
// docker run words: --shm-size=1g, unless a word sets --shm-size or --ipc.
func wantShm(extra []string) []string {
	for _, w := range extra {
		if w == "--ipc" || w == "--shm-size" || strings.HasPrefix(w, "--ipc=") || strings.HasPrefix(w, "--shm-size=") {
			return nil
		}
	}
	return []string{"--shm-size=1g"}
}

// wantOverlay is the patcher's --overlay option, if the model has one.
func wantOverlay(dir string) []string {
	if dir == "" {
		return nil
	}
	return []string{"--overlay", dir}
}
