package nixgen

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// testPort is the port llama-swap allocates in these tests.
const testPort = 5800

// layerVariants are the accepted parity variants, the golden models and a
// few more, with their
// mount moved under dir: the bash layer runs on this machine, so the
// "container" paths must exist here.
func layerVariants(dir string) []variant {
	extra := []variant{
		{opts: Options{Binary: "/b", Mount: `/m/it's "x" $HOME ${a b} ` + "`b`" + ` \ ☕/vt`, Patchsets: []string{"/p/it's.hcl", `/p/"q" $x.hcl`}},
			model: ModelOptions{Name: "weird-mount", Image: "img", ServeArgs: []string{"ok"}}},
		{opts: Options{Binary: "/b", OnFailure: "abort", Patchsets: []string{"/p/a.hcl", "/p/a.hcl"}},
			model: ModelOptions{Name: "same-patchset-twice", Image: "img"}},
	}
	for _, c := range goldenCases {
		if c.model != nil {
			extra = append(extra, variant{opts: c.opts, model: *c.model})
		}
	}
	var out []variant
	for _, v := range append(slices.Clone(parityVariants), extra...) {
		if _, err := NewModel(v.opts, v.model); err != nil {
			continue
		}
		mount := v.opts.Mount
		if mount == "" {
			mount = DefaultMount
		}
		v.opts.Mount = dir + mount
		out = append(out, v)
	}
	return out
}

// TestLayers takes each variant through every layer: Nix evaluates the
// model that Go rendered; a model of llama-swap substitutes the macros and
// splits cmd with llama-swap's own splitter; the docker argv is compared
// with the intended one; then real bash runs the -c string with a stub
// patcher at the mount path and a stub vllm on PATH, which record their argv.
func TestLayers(t *testing.T) {
	bash := needTool(t, "bash")
	dir := t.TempDir()
	vs := layerVariants(dir)
	outs := evalVariants(t, vs)
	for i, v := range vs {
		t.Run(fmt.Sprintf("%d-%s", i, v.model.Name), func(t *testing.T) {
			checkParity(t, v, outs[i])
			m, ok := outs[i].goNix.Model[v.model.Name]
			if !ok {
				t.Fatal("no model from nix-instantiate")
			}
			checkLayers(t, bash, v, m.Cmd)
		})
	}
}

// intended replaces macro references the way the user means them.
func intended(v variant, s string) string {
	for k, val := range v.model.Macros {
		s = strings.ReplaceAll(s, "${"+k+"}", val)
	}
	s = strings.ReplaceAll(s, "${MODEL_ID}", v.model.Name)
	return strings.ReplaceAll(s, "${PORT}", strconv.Itoa(testPort))
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

// checkLayers checks the llama-swap and bash layers for cmd, as evaluated
// by Nix. It returns early (having failed t) when a layer is wrong.
func checkLayers(t *testing.T, bash string, v variant, cmd string) {
	t.Helper()
	argv, err := llamaSwapArgv(cmd, v.model.Name, v.model.Macros, testPort)
	if err != nil {
		t.Fatalf("llama-swap would refuse the cmd: %v\n%s", err, cmd)
	}

	// The docker argv, word for word.
	docker := v.model.Docker
	if docker == "" {
		docker = "docker"
	}
	want := []string{intended(v, docker), "run", "--rm", "--name", v.model.Name, "-p", "127.0.0.1:" + strconv.Itoa(testPort) + ":8000"}
	want = append(want, "-v", v.opts.Binary+":"+v.opts.Mount+":ro")
	containerPaths := wantContainerPaths(v.opts)
	for i, p := range v.opts.Patchsets {
		want = append(want, "-v", p+":"+containerPaths[i]+":ro")
	}
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range v.model.Env {
			if !yield(k) {
				return
			}
		}
	}) {
		want = append(want, "-e", k+"="+intended(v, v.model.Env[k]))
	}
	for _, a := range v.model.ExtraDockerArgs {
		want = append(want, intended(v, a))
	}
	want = append(want, "--entrypoint", "/bin/bash", intended(v, v.model.Image), "-c")
	if len(argv) != len(want)+1 {
		t.Fatalf("llama-swap splits cmd into %d words, want %d (-want +got):\n%s", len(argv), len(want)+1, cmp.Diff(want, argv))
	}
	if diff := cmp.Diff(want, argv[:len(want)]); diff != "" {
		t.Fatalf("docker argv after llama-swap (-want +got):\n%s", diff)
	}
	script := argv[len(argv)-1]

	// The container: the stub patcher at the mount path, the patch sets at
	// their container paths, and vllm on PATH.
	root := t.TempDir()
	for _, p := range append([]string{v.opts.Mount}, containerPaths...) {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// Each stub appends its argv to $STUB_LOG, NUL-separated, one line per call.
	const stub = "#!/bin/sh\n{ printf '%s\\0' \"$0\" \"$@\"; printf '\\n'; } >>\"$STUB_LOG\"\n"
	if err := os.WriteFile(v.opts.Mount, []byte(stub+"exit \"$PATCHER_EXIT\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range containerPaths {
		if err := os.WriteFile(p, []byte("# patch set\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(root, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	vllm := filepath.Join(bin, "vllm")
	if err := os.WriteFile(vllm, []byte(stub), 0o755); err != nil {
		t.Fatal(err)
	}
	wantApply := []string{v.opts.Mount, "apply", "--on-failure", onFailure(v.opts)}
	for _, p := range containerPaths {
		wantApply = append(wantApply, "--patchset", p)
	}
	wantServe := []string{vllm, "serve"}
	for _, a := range v.model.ServeArgs {
		wantServe = append(wantServe, intended(v, a))
	}

	// The patcher succeeds: it runs first, then vLLM.
	calls, code := runBash(t, bash, root, script, 0)
	if diff := cmp.Diff([][]string{wantApply, wantServe}, calls); diff != "" || code != 0 {
		t.Fatalf("bash -c: exit %d, calls (-want +got):\n%s\nscript: %s", code, diff, script)
	}
	// The patcher fails: warn starts vLLM anyway, abort stops with its code.
	calls, code = runBash(t, bash, root, script, 13)
	if onFailure(v.opts) == "warn" {
		if diff := cmp.Diff([][]string{wantApply, wantServe}, calls); diff != "" || code != 0 {
			t.Fatalf("bash -c with a failing patcher and warn: exit %d, calls (-want +got):\n%s", code, diff)
		}
	} else if diff := cmp.Diff([][]string{wantApply}, calls); diff != "" || code != 13 {
		t.Fatalf("bash -c with a failing patcher and abort: exit %d (want 13), calls (-want +got):\n%s", code, diff)
	}
}

func onFailure(o Options) string {
	if o.OnFailure == "" {
		return "warn"
	}
	return o.OnFailure
}

// runBash runs bash -c script as the container's entrypoint would, and
// returns the stubs' argvs in call order and bash's exit code. The stub
// patcher exits with patcherExit.
func runBash(t *testing.T, bash, root, script string, patcherExit int) ([][]string, int) {
	t.Helper()
	log := filepath.Join(root, "calls")
	os.Remove(log)
	cmd := exec.Command(bash, "-c", script)
	cmd.Dir = root
	cmd.Env = []string{
		"PATH=" + filepath.Join(root, "bin") + ":/usr/bin:/bin",
		"STUB_LOG=" + log,
		"PATCHER_EXIT=" + strconv.Itoa(patcherExit),
		"HOME=/nonexistent-home",
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	code := 0
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatal(err)
		}
		code = ee.ExitCode()
	}
	if stderr.Len() > 0 {
		t.Errorf("bash wrote to stderr: %s", stderr.Bytes())
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
