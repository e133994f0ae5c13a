package testtree

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// LlamaSwapSource is ../shared/llama-swap beside the repository: llama-swap's
// source at a pinned commit (see ../shared/THIRD-PARTY.md).
func LlamaSwapSource() string {
	return filepath.Join(RepoRoot(), "..", "shared", "llama-swap")
}

// LlamaSwap returns a llama-swap binary built from LlamaSwapSource (see
// BuildInLlamaSwap). A build that fails skips the test, or fails it under
// CI=true.
func LlamaSwap(t testing.TB) string {
	t.Helper()
	bin, err := BuildLlamaSwap()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the real llama-swap could not be built, and CI=true requires it: %v", err)
		}
		Skipf(t, LlamaSwapMissing, "SKIPPED: the real llama-swap could not be built (with CI=true this fails): %v", err)
	}
	return bin
}

// LlamaSwapMissing is what the skip summary names when llama-swap could
// not be built.
const LlamaSwapMissing = "a llama-swap build from ../shared/llama-swap"

// BuildLlamaSwap is LlamaSwap for callers without a testing.TB (testscript
// commands): the binary, or why it could not be built.
func BuildLlamaSwap() (string, error) { return BuildInLlamaSwap(".", nil) }

var llamaSwapBuilds sync.Map // key → *llamaSwapBuild

type llamaSwapBuild struct {
	once sync.Once
	path string
	err  error
}

// BuildInLlamaSwap builds the Go package pkg ("." for llama-swap itself,
// or "./cmd/NAME" for a program of the caller's) inside a temporary copy
// of LlamaSwapSource into which files (path in the copy → content) have
// been written: a program there may import llama-swap's internal packages
// (nixgen/swaptest runs its config loader so). The shared tree is never
// written; llama-swap's dependencies come from the module proxy.
//
// This is the one builder of llama-swap's code for every test package. The
// binary is kept in the user cache directory under a key made of the
// source's hash, the files, pkg and the Go version, so a warm run builds
// nothing; a file lock makes test processes that start at once (go test
// ./... runs packages in parallel) build it once, and within a process
// each build happens once.
func BuildInLlamaSwap(pkg string, files map[string][]byte) (string, error) {
	src := LlamaSwapSource()
	if _, err := os.Stat(filepath.Join(src, "go.mod")); err != nil {
		return "", fmt.Errorf("no llama-swap source at %s: %v", src, err)
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%s/%s\n%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH, pkg)
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		fmt.Fprintf(h, "%s %d\n%s", name, len(files[name]), files[name])
	}
	key := hex.EncodeToString(h.Sum(nil))[:16]
	b, _ := llamaSwapBuilds.LoadOrStore(key, &llamaSwapBuild{})
	build := b.(*llamaSwapBuild)
	build.once.Do(func() { build.path, build.err = buildInLlamaSwap(src, key, pkg, files) })
	return build.path, build.err
}

func buildInLlamaSwap(src, key, pkg string, files map[string][]byte) (string, error) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		return "", err
	}
	srcKey, err := Hash(src)
	if err != nil {
		return "", err
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "vllm-timings")
	name := "llama-swap"
	if pkg != "." {
		name += "-" + filepath.Base(pkg)
	}
	bin := filepath.Join(dir, name+"-"+srcKey+"-"+key)
	if st, err := os.Stat(bin); err == nil && st.Mode().IsRegular() {
		return bin, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	unlock, err := lockFile(filepath.Join(dir, ".llama-swap.lock"))
	if err != nil {
		return "", err
	}
	defer unlock()
	if st, err := os.Stat(bin); err == nil && st.Mode().IsRegular() {
		return bin, nil // another test process built it meanwhile
	}
	tmp, err := os.MkdirTemp("", "llama-swap-src-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	if err := os.CopyFS(tmp, os.DirFS(src)); err != nil {
		return "", fmt.Errorf("copy %s: %v", src, err)
	}
	for name, data := range files {
		p := filepath.Join(tmp, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return "", err
		}
	}
	// Built next to its final place and renamed: a binary in the cache is
	// always whole.
	out := filepath.Join(dir, fmt.Sprintf(".%s-%d", name, os.Getpid()))
	cmd := exec.Command(goTool, "build", "-o", out, pkg)
	cmd.Dir = tmp
	cmd.Env = append(os.Environ(), "GOWORK=off", "CGO_ENABLED=0", "GOFLAGS=-mod=readonly -buildvcs=false")
	if b, err := cmd.CombinedOutput(); err != nil {
		os.Remove(out)
		return "", fmt.Errorf("go build %s in a copy of %s (its modules come from the Go module proxy): %v\n%s", pkg, src, err, b)
	}
	if err := os.Rename(out, bin); err != nil {
		return "", err
	}
	return bin, nil
}

// LlamaSwapServer is a running llama-swap.
type LlamaSwapServer struct {
	URL  string
	Log  *bytes.Buffer // its output
	stop func()
}

// Stop stops llama-swap, which stops the models' processes.
func (s *LlamaSwapServer) Stop() { s.stop() }

// StartLlamaSwap runs llama-swap on 127.0.0.1 with one model per entry of
// upstreams (model name → the base URL of a server that is already up). As
// with a real model, llama-swap starts the model's cmd and waits until the
// upstream answers GET /v1/models (the checkEndpoint vLLM users set); the
// cmd is a sleep standing in for the server process. The caller stops it
// (t.Cleanup(s.Stop), or at the end of TestMain for one shared by a
// package's tests).
func StartLlamaSwap(t testing.TB, upstreams map[string]string) *LlamaSwapServer {
	t.Helper()
	s, err := RunLlamaSwap(LlamaSwap(t), upstreams, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// RunLlamaSwap is StartLlamaSwap with the binary and a directory for its
// config given, for callers without a testing.TB.
func RunLlamaSwap(bin string, upstreams map[string]string, dir string) (*LlamaSwapServer, error) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		return nil, err
	}
	var cfg strings.Builder
	cfg.WriteString("healthCheckTimeout: 30\nlogLevel: warn\nmodels:\n")
	names := make([]string, 0, len(upstreams))
	for name := range upstreams {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		fmt.Fprintf(&cfg, "  %q:\n    cmd: %s 600\n    proxy: %q\n    checkEndpoint: /v1/models\n", name, sleep, upstreams[name])
	}
	config := filepath.Join(dir, "llama-swap.yaml")
	if err := os.WriteFile(config, []byte(cfg.String()), 0o644); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	ln.Close()

	s := &LlamaSwapServer{URL: "http://" + addr, Log: &bytes.Buffer{}}
	cmd := exec.Command(bin, "--config", config, "--listen", addr)
	cmd.Stdout, cmd.Stderr = s.Log, s.Log
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	s.stop = func() {
		cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(s.URL + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s, nil
			}
		}
		select {
		case <-done:
			return nil, fmt.Errorf("llama-swap exited before it answered:\n%s", s.Log)
		default:
		}
		if time.Now().After(deadline) {
			s.Stop()
			return nil, fmt.Errorf("llama-swap did not answer /health within 30 s:\n%s", s.Log)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// ActivityRow is what llama-swap's GET /api/metrics/activity says of one
// request, as far as the tests read it.
type ActivityRow struct {
	ID         int    `json:"id"`
	Model      string `json:"model"`
	ReqPath    string `json:"req_path"`
	StatusCode int    `json:"resp_status_code"`
	DurationMs int    `json:"duration_ms"`
	Tokens     struct {
		Cached          int     `json:"cache_tokens"`
		Draft           int     `json:"draft_tokens"`
		DraftAccepted   int     `json:"draft_acc_tokens"`
		Input           int     `json:"input_tokens"`
		Output          int     `json:"output_tokens"`
		PromptPerSecond float64 `json:"prompt_per_second"`
		TokensPerSecond float64 `json:"tokens_per_second"`
	} `json:"tokens"`
}

// Activity returns the activity rows with an id above after, oldest
// first, waiting up to 10 s until there are at least want of them:
// llama-swap stores a row just after the response has been sent.
func (s *LlamaSwapServer) Activity(t testing.TB, after, want int) []ActivityRow {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get(fmt.Sprintf("%s/api/metrics/activity?min_id=%d&limit=999&sort=id&order=asc", s.URL, after+1))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /api/metrics/activity: HTTP %d: %s", resp.StatusCode, body)
		}
		var page struct {
			Data []ActivityRow `json:"data"`
		}
		if err := json.Unmarshal(body, &page); err != nil {
			t.Fatalf("GET /api/metrics/activity: %v: %s", err, body)
		}
		if len(page.Data) >= want || time.Now().After(deadline) {
			return page.Data
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// PrebuildLlamaSwap starts building llama-swap in the background, for a
// TestMain to call before m.Run: on a cold cache the build (about a
// minute and a half of compiling, most of it modernc.org/sqlite) then runs
// beside the package's first tests instead of in front of the one that
// needs it. Builds are shared (BuildInLlamaSwap), so the test that needs
// it waits for this one. A run narrowed with -run builds nothing ahead.
func PrebuildLlamaSwap() {
	if !flag.Parsed() {
		flag.Parse()
	}
	if f := flag.Lookup("test.run"); f != nil && f.Value.String() != "" {
		return
	}
	go BuildLlamaSwap()
}
