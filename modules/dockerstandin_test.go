package modules

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vllm-timings/vllm-timings/patcher/testtree"
)

// standinGroup is the group the stand-in's socket belongs to: a number no
// account here has, so that only the processes given it can connect, and
// nothing is added to /etc/group.
const standinGroup = 64999

// TestDockerStandIn runs what the VM test (tests/vm.nix) runs, minus
// systemd and NixOS: tests/docker-standin.py as root on a socket
// root:64999 0660, and the real llama-swap as nobody with that group,
// serving one model made by `vllm-timings nix model` (the module's mkModel,
// held to it by TestModuleMatchesCLI) whose docker is the stand-in's client.
// A request through llama-swap must return timings, the daemon must have
// seen nobody with the group, the argv must hold the read-only mount and
// the patcher's exec, and the binary must have been read-only in the
// container. nobody without the group is refused, as by dockerd's socket.
//
// It needs root (mount namespaces, the socket's owner), util-linux and
// /usr/bin/python3 for nobody's client; it skips without root.
func TestDockerStandIn(t *testing.T) {
	if os.Geteuid() != 0 {
		testtree.Skipf(t, "root", "SKIPPED: needs root to run the Docker stand-in's daemon and its mount namespaces")
	}
	for _, tool := range []string{"unshare", "mount", "findmnt", "setpriv"} {
		testtree.RequireTool(t, tool)
	}
	python := testtree.RequireTool(t, "python3")
	// nobody's python3 (the client's): pyenv's lives under /root.
	const nobodyPython = "/usr/bin/python3"
	if _, err := os.Stat(nobodyPython); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is missing, and CI=true requires it", nobodyPython)
		}
		testtree.Skipf(t, nobodyPython, "SKIPPED: no %s for nobody's docker client", nobodyPython)
	}

	// Everything nobody runs or reads lives in a directory it can enter.
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	copyExe := func(src, name string) string {
		dst := filepath.Join(dir, name)
		if err := testtree.CopyFile(dst, src, 0o755); err != nil {
			t.Fatal(err)
		}
		return dst
	}
	vt := copyExe(testtree.VllmTimings(t), "vllm-timings")
	llamaSwap := copyExe(testtree.LlamaSwap(t), "llama-swap")
	script := filepath.Join(dir, "docker-standin.py")
	if err := testtree.CopyFile(script, filepath.Join("tests", "docker-standin.py"), 0o644); err != nil {
		t.Fatal(err)
	}
	client := filepath.Join(dir, "docker")
	if err := os.WriteFile(client, []byte("#!/bin/sh\nexec "+nobodyPython+" "+script+" \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}

	// The image, made as vm-node.nix makes it.
	image := filepath.Join(dir, "image")
	run(t, exec.Command(python, script, "image",
		filepath.Join(testtree.Dir(), "openai-packages.txtar"),
		filepath.Join(testtree.RepoRoot(), "scripts", "fake-openai-server.py"), image))

	sock := filepath.Join(dir, "docker.sock")
	logFile := filepath.Join(dir, "calls.jsonl")
	daemon := exec.Command(python, script, "daemon", "--socket", sock, "--group", strconv.Itoa(standinGroup), "--image", image, "--log", logFile)
	// SIGTERM: the daemon ends its containers, sessions of their own.
	daemonOut := startLogged(t, daemon, filepath.Join(dir, "daemon.log"), syscall.SIGTERM)
	waitFor(t, "the daemon's socket", func() bool { _, err := os.Stat(sock); return err == nil }, daemonOut)

	asNobody := func(groups bool, name string, args ...string) *exec.Cmd {
		p := []string{"--reuid=65534", "--regid=65534", "--clear-groups"}
		if groups {
			p = []string{"--reuid=65534", "--regid=65534", "--groups=" + strconv.Itoa(standinGroup)}
		}
		cmd := exec.Command("setpriv", append(append(p, name), args...)...)
		cmd.Env = append(os.Environ(), "DOCKER_HOST=unix://"+sock)
		return cmd
	}

	// Without the group, the socket refuses nobody.
	out, err := asNobody(false, client, "run", "--rm", "standin/vllm", "true").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "permission denied") {
		t.Fatalf("nobody without the group reached the socket: %v\n%s", err, out)
	}

	// The model entry, as mkModel makes it; the mount under /opt, which is
	// a tmpfs in the container, so that nothing is created on this host.
	const mount = "/opt/patches/vllm-timings"
	entryJSON := run(t, exec.Command(vt, "nix", "model", "vllm", "--binary", vt, "--mount", mount,
		"--image", "standin/vllm", "--docker", client, "--format", "json",
		"--before", "if touch "+mount+" 2>/dev/null; then echo 'vllm-timings is writable in the container' >&2; exit 1; fi",
		"--", "--served-model-name", "${MODEL_ID}", "--host", "0.0.0.0", "--port", "8000"))
	var entries map[string]map[string]any
	if err := json.Unmarshal(entryJSON, &entries); err != nil {
		t.Fatal(err)
	}
	// llama-swap reads YAML, of which JSON is a part.
	config, _ := json.Marshal(map[string]any{
		"healthCheckTimeout": 20,
		"startPort":          freePort(t),
		"models":             entries,
	})
	configFile := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(configFile, config, 0o644); err != nil {
		t.Fatal(err)
	}
	listen := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	swap := asNobody(true, llamaSwap, "--listen", listen, "--config", configFile)
	// SIGKILL: llama-swap would wait for its model to stop; the client
	// goes with it, and the daemon then ends the container.
	swapOut := startLogged(t, swap, filepath.Join(dir, "llama-swap.log"), syscall.SIGKILL)
	waitFor(t, "llama-swap", func() bool {
		c, err := net.Dial("tcp", listen)
		if err == nil {
			c.Close()
		}
		return err == nil
	}, swapOut)

	body := `{"model": "vllm", "messages": [{"role": "user", "content": "hello there"}]}`
	httpClient := &http.Client{Timeout: 90 * time.Second}
	resp, err := httpClient.Post("http://"+listen+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatalf("request through llama-swap: %v\nllama-swap:\n%s\ndaemon:\n%s", err, readFile(swapOut), readFile(daemonOut))
	}
	var got struct {
		Timings map[string]float64 `json:"timings"`
	}
	err = json.NewDecoder(resp.Body).Decode(&got)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 || got.Timings["predicted_n"] <= 0 || got.Timings["prompt_n"] <= 0 {
		t.Fatalf("llama-swap answered %d without timings (%v): %+v\nllama-swap:\n%s", resp.StatusCode, err, got, readFile(swapOut))
	}

	type runEntry struct {
		Caller struct {
			UID    int   `json:"uid"`
			Groups []int `json:"groups"`
		} `json:"caller"`
		Argv     []string        `json:"argv"`
		Readonly map[string]bool `json:"readonly"`
	}
	var runs []runEntry
	for _, line := range strings.Split(strings.TrimSpace(readFile(logFile)), "\n") {
		var e runEntry
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("the daemon's log: %v: %s", err, line)
		}
		if len(e.Argv) > 0 && e.Argv[0] == "run" {
			runs = append(runs, e)
		}
	}
	// The refused call never reached the daemon; llama-swap's did.
	if len(runs) != 1 {
		t.Fatalf("want one docker run in the daemon's log, got %d", len(runs))
	}
	r := runs[0]
	if r.Caller.UID != 65534 || !containsInt(r.Caller.Groups, standinGroup) {
		t.Errorf("the daemon saw caller %+v, want nobody with group %d", r.Caller, standinGroup)
	}
	if !slicesContains(r.Argv, vt+":"+mount+":ro") {
		t.Errorf("docker run has no read-only mount of %s: %q", vt, r.Argv)
	}
	if !strings.Contains(r.Argv[len(r.Argv)-1], "exec "+mount+" exec --on-failure warn -- vllm serve \"$@\" || exec vllm serve \"$@\"") {
		t.Errorf("the container's command does not run the patcher: %q", r.Argv[len(r.Argv)-1])
	}
	if !r.Readonly[mount] || len(r.Readonly) != 1 {
		t.Errorf("the binary was not read-only in the container: %v", r.Readonly)
	}
}

func containsInt(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func run(t *testing.T, cmd *exec.Cmd) []byte {
	t.Helper()
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, stderr)
	}
	return out
}

// startLogged starts cmd with its output in logPath, and ends it (and
// what it started) with sig when the test ends.
func startLogged(t *testing.T, cmd *exec.Cmd, logPath string, sig syscall.Signal) string {
	t.Helper()
	f, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, sig)
		cmd.Wait()
		f.Close()
	})
	return logPath
}

func waitFor(t *testing.T, what string, ok func() bool, logPath string) {
	t.Helper()
	for i := 0; i < 300; i++ {
		if ok() {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s did not start:\n%s", what, readFile(logPath))
}

func readFile(p string) string {
	b, _ := os.ReadFile(p)
	return string(b)
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
