package main

// The reliability harness (issue 14): it runs the real command on copies of
// a vLLM tree while failing its system calls (strace -e inject), killing it
// (SIGKILL at a chosen system call, or after a random delay) and racing it
// against itself, and after every round classifies the tree. A tree is
// damaged when a file holds anything but its original or its patched
// bytes, a file was emptied, or a serving file imports a module that is not
// there. `go test` runs a small deterministic subset; scripts/reliability
// runs every round:
//
//	go test ./cmd/vllm-timings -run TestReliability -count=1 -v -args -reliability
//
// The command runs as this test binary (testscript.Main), whose command
// entry locks the main goroutine to one OS thread: strace counts system
// calls per thread, so the Nth rename is then the same rename in every run.

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io/fs"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vllm-timings/vllm-timings/patcher"
	"github.com/vllm-timings/vllm-timings/patcher/testtree"
)

var (
	relFull   = flag.Bool("reliability", false, "run every fault, kill and race round (scripts/reliability), not the deterministic subset")
	relKills  = flag.Int("reliability.kills", 100, "with -reliability: random-delay SIGKILL rounds per command and timing mode")
	relRaces  = flag.Int("reliability.races", 200, "with -reliability: rounds of apply and revert started together")
	relTree   = flag.String("reliability.tree", "", "take the target files from this real vllm package directory instead of the openai-packages fixture")
	relSeed   = flag.Int64("reliability.seed", 0, "random seed for kill delays (0: the time)")
	relReport = flag.String("reliability.report", "", "append the summary lines to this file")
)

// The system calls the write path makes, and the error each is failed with.
var faultErrno = map[string]string{
	"openat":     "ENOSPC",
	"read":       "EIO",
	"write":      "ENOSPC",
	"close":      "EIO",
	"fsync":      "EIO",
	"fdatasync":  "EIO",
	"fchmod":     "EPERM",
	"fchmodat":   "EPERM",
	"fchown":     "EPERM",
	"fchownat":   "EPERM",
	"renameat":   "EIO",
	"renameat2":  "EIO",
	"unlinkat":   "EIO",
	"flock":      "EIO",
	"ftruncate":  "EIO",
	"linkat":     "EIO",
	"mkdirat":    "EIO",
	"newfstatat": "EIO",
	"fstat":      "EIO",
	"getdents64": "EIO",
}

// mutating are the calls that change the tree; pairs are drawn from the
// calls made from the first of them on (the write phase).
var mutating = map[string]bool{"renameat": true, "renameat2": true, "unlinkat": true, "linkat": true, "flock": true}

const (
	relModule   = "vllm/_llamacpp_timings.py"
	relLock     = "vllm/.vllm-timings.lock"
	relManifest = "vllm/.vllm-timings.json"
)

// world is one tree to torture: its pristine and patched contents and a
// place to make copies.
type world struct {
	t       *testing.T
	bin     string
	strace  string
	work    string
	base    string            // a pristine site directory (holds vllm/)
	orig    map[string][]byte // pristine files, relative to the site
	patched map[string][]byte // the same after apply
	env     []string
	n       int
	mu      sync.Mutex
}

func newWorld(t *testing.T) *world {
	t.Helper()
	bin, err := exec.LookPath(binary) // testscript.Main put this test binary on PATH under that name
	if err != nil {
		t.Fatal(err)
	}
	w := &world{t: t, bin: bin, work: t.TempDir()}
	// No python3 on the command's PATH: the compile check uses the
	// project's scanner, and strace then counts only the command's calls.
	w.env = append(os.Environ(), "PATH="+filepath.Join(w.work, "nobin"), "VLLM_DIR=", "VIRTUAL_ENV=", "GOMAXPROCS=1")
	w.base = filepath.Join(w.work, "base")
	if *relTree != "" {
		copyTargets(t, *relTree, w.base)
		// The real tree may be patched already (scripts/real-vllm patches
		// its virtualenv): start from its pristine files.
		if code, out := w.run(w.base, nil, "revert"); code != 0 {
			t.Fatalf("revert of the copied tree: exit %d\n%s", code, out)
		}
	} else if err := testtree.Unpack("openai-packages", w.base); err != nil {
		t.Fatal(err)
	}
	w.orig = readTree(t, w.base)
	p := w.fresh(false)
	if code, out := w.run(p, nil, "apply"); code != 0 {
		t.Fatalf("apply on a pristine copy: exit %d\n%s", code, out)
	}
	w.patched = readTree(t, p)
	if bytes.Equal(w.patched[relModule], nil) {
		t.Fatalf("apply created no %s", relModule)
	}
	return w
}

// copyTargets copies, from a real vllm package, the files any patch set
// reads plus what makes it a package, into site/vllm.
func copyTargets(t *testing.T, pkg, site string) {
	lib, err := patcher.LoadLibrary(nil, "")
	if err != nil {
		t.Fatal(err)
	}
	rels := map[string]bool{"vllm/__init__.py": true, "vllm/_version.py": true}
	for _, s := range lib.All() {
		for _, r := range s.Targets() {
			rels[r] = true
		}
	}
	for r := range rels {
		b, err := os.ReadFile(filepath.Join(filepath.Dir(filepath.Clean(pkg)), filepath.FromSlash(r)))
		if err != nil {
			continue
		}
		dst := filepath.Join(site, filepath.FromSlash(r))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// fresh returns a new copy of the tree, pristine or patched.
func (w *world) fresh(patched bool) string {
	w.mu.Lock()
	w.n++
	dir := filepath.Join(w.work, "r"+strconv.Itoa(w.n))
	w.mu.Unlock()
	src := w.orig
	if patched {
		src = w.patched
	}
	for rel, b := range src {
		if rel == relLock || rel == relManifest {
			if !patched {
				continue
			}
		}
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			w.t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			w.t.Fatal(err)
		}
	}
	return dir
}

// command builds the command line, under strace when straceArgs is not nil.
func (w *world) command(ctx context.Context, site string, straceArgs []string, args ...string) *exec.Cmd {
	full := append(append([]string{}, args...), "--vllm-dir", filepath.Join(site, "vllm"))
	var cmd *exec.Cmd
	if straceArgs != nil {
		sargs := append(append([]string{"-f", "-qq", "-o", "/dev/null"}, straceArgs...), append([]string{"--", w.bin}, full...)...)
		cmd = exec.CommandContext(ctx, w.strace, sargs...)
	} else {
		cmd = exec.CommandContext(ctx, w.bin, full...)
	}
	cmd.Env = w.env
	return cmd
}

// run runs the command to its end and returns its exit code and output.
func (w *world) run(site string, straceArgs []string, args ...string) (int, string) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := w.command(ctx, site, straceArgs, args...)
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		return -2, string(out) + "\n(timed out)"
	}
	return exitCode(err), string(out)
}

func exitCode(err error) int {
	if err == nil {
		return 0
	}
	if ee, ok := err.(*exec.ExitError); ok {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return -1
		}
		return ee.ExitCode()
	}
	return -3
}

// readTree reads every file below site (not __pycache__), by relative path.
func readTree(t testing.TB, site string) map[string][]byte {
	out := map[string][]byte{}
	err := filepath.WalkDir(site, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == "__pycache__" {
				return filepath.SkipDir
			}
			return nil
		}
		rel, _ := filepath.Rel(site, p)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		out[filepath.ToSlash(rel)] = b
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// verdict classifies a tree.
type verdict struct {
	State     string   // original, patched, mixed or damaged
	Problems  []string // why it is damaged
	Leftovers []string // temporary files of ours
	Manifest  string   // "", or the manifest's state field, or "invalid"
}

func (v verdict) String() string {
	s := v.State
	if len(v.Problems) > 0 {
		s += " (" + strings.Join(v.Problems, "; ") + ")"
	}
	if len(v.Leftovers) > 0 {
		s += fmt.Sprintf(" leftovers %v", v.Leftovers)
	}
	if v.Manifest != "" {
		s += " manifest " + v.Manifest
	}
	return s
}

func isOurs(rel string) bool {
	return strings.HasPrefix(filepath.Base(rel), ".vllm-timings")
}

// check classifies the tree at site against the world's two states.
func (w *world) check(site string) verdict {
	cur := readTree(w.t, site)
	var v verdict
	paths := map[string]bool{}
	for _, m := range []map[string][]byte{w.orig, w.patched, cur} {
		for p := range m {
			paths[p] = true
		}
	}
	sorted := make([]string, 0, len(paths))
	for p := range paths {
		sorted = append(sorted, p)
	}
	sort.Strings(sorted)
	origAll, patchedAll := true, true
	for _, p := range sorted {
		if p == relLock {
			continue
		}
		if p == relManifest {
			if b, ok := cur[p]; ok {
				var m struct {
					State string `json:"state"`
				}
				if json.Unmarshal(b, &m) != nil || m.State == "" {
					v.Manifest = "invalid"
				} else {
					v.Manifest = m.State
				}
			}
			continue
		}
		if isOurs(p) {
			if _, ok := cur[p]; ok {
				v.Leftovers = append(v.Leftovers, p)
			}
			continue
		}
		c, have := cur[p]
		o, inOrig := w.orig[p]
		n, inPatched := w.patched[p]
		isOrig := have == inOrig && (!have || bytes.Equal(c, o))
		isPatched := have == inPatched && (!have || bytes.Equal(c, n))
		if !isOrig && !isPatched {
			switch {
			case have && len(c) == 0:
				v.Problems = append(v.Problems, p+" emptied")
			case have:
				v.Problems = append(v.Problems, fmt.Sprintf("%s holds %d foreign bytes", p, len(c)))
			default:
				v.Problems = append(v.Problems, p+" missing")
			}
		}
		origAll = origAll && isOrig
		patchedAll = patchedAll && isPatched
	}
	// Imports resolve: a serving file that imports the module needs it.
	if _, ok := cur[relModule]; !ok {
		for p, c := range cur {
			if strings.HasSuffix(p, ".py") && bytes.Contains(c, []byte("import _llamacpp_timings")) {
				v.Problems = append(v.Problems, p+" imports the missing "+relModule)
			}
		}
	}
	if v.Manifest == "invalid" {
		v.Problems = append(v.Problems, "manifest unreadable")
	}
	switch {
	case len(v.Problems) > 0:
		v.State = "damaged"
	case origAll:
		v.State = "original"
	case patchedAll:
		v.State = "patched"
	default:
		v.State = "mixed"
	}
	return v
}

// clean reports whether a tree is in the state a command should end in:
// pristine (no manifest, no lock, nothing left) after revert, patched with
// its manifest after apply.
func (w *world) clean(site, op string) error {
	v := w.check(site)
	want := "patched"
	if op == "revert" {
		want = "original"
	}
	if v.State != want || len(v.Leftovers) > 0 {
		return fmt.Errorf("after %s: %s, want %s and nothing left over", op, v, want)
	}
	return nil
}

// syscallEntry is one system call of the command's main thread, and which
// invocation of its kind it was on that thread.
type syscallEntry struct {
	Name  string
	N     int
	Write bool // made in the write phase
	Line  string
}

// trace runs op once on a fresh tree under strace and lists the main
// thread's calls of every kind in faultErrno, in order.
func (w *world) trace(op string) []syscallEntry {
	site := w.fresh(op == "revert")
	log := filepath.Join(w.work, "trace-"+op+".log")
	names := make([]string, 0, len(faultErrno))
	for n := range faultErrno {
		names = append(names, n)
	}
	sort.Strings(names)
	cmd := exec.Command(w.strace, "-f", "-qq", "-o", log, "-e", "trace="+strings.Join(names, ","), "--", w.bin, op, "--vllm-dir", filepath.Join(site, "vllm"))
	cmd.Env = w.env
	if out, err := cmd.CombinedOutput(); err != nil {
		w.t.Fatalf("strace %s: %v\n%s", op, err, out)
	}
	b, err := os.ReadFile(log)
	if err != nil {
		w.t.Fatal(err)
	}
	type call struct{ tid, name, line string }
	var calls []call
	counts := map[string]int{}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.SplitN(line, " ", 2)
		if len(f) != 2 {
			continue
		}
		i := strings.IndexByte(f[1], '(')
		if i <= 0 {
			continue
		}
		c := call{f[0], strings.TrimSpace(f[1][:i]), line}
		calls = append(calls, c)
		if strings.Contains(line, site) {
			counts[c.tid]++
		}
	}
	// The main thread is the one that touched the tree most.
	main := ""
	for tid, n := range counts {
		if main == "" || n > counts[main] {
			main = tid
		}
	}
	var out []syscallEntry
	per := map[string]int{}
	writing := false
	for _, c := range calls {
		if c.tid != main {
			continue
		}
		per[c.name]++
		// The write phase starts with the first temporary file (the lock
		// is taken before the tree is read).
		if !writing && strings.Contains(c.line, site) && (c.name == "renameat" || c.name == "unlinkat" || (c.name == "openat" && strings.Contains(c.line, ".tmp"))) {
			writing = true
		}
		out = append(out, syscallEntry{Name: c.name, N: per[c.name], Write: writing, Line: c.line})
	}
	return out
}

func injectArg(e syscallEntry, what string) string {
	return fmt.Sprintf("inject=%s:%s:when=%d", e.Name, what, e.N)
}

// faultArgs fails the given calls: one -e inject per kind, with a when=
// range and step when two calls of one kind are failed.
func faultArgs(es ...syscallEntry) []string {
	byName := map[string][]int{}
	var order []string
	for _, e := range es {
		if _, ok := byName[e.Name]; !ok {
			order = append(order, e.Name)
		}
		byName[e.Name] = append(byName[e.Name], e.N)
	}
	var args []string
	for _, name := range order {
		ns := byName[name]
		sort.Ints(ns)
		when := strconv.Itoa(ns[0])
		if len(ns) == 2 {
			when = fmt.Sprintf("%d..%d+%d", ns[0], ns[1], ns[1]-ns[0])
		}
		args = append(args, "-e", fmt.Sprintf("inject=%s:error=%s:when=%s", name, faultErrno[name], when))
	}
	return args
}

// parallel runs f(0..n-1) on as many workers as there are CPUs; rounds
// that do not depend on timing use it.
func parallel(n int, f func(i int)) {
	workers := runtime.NumCPU()
	next := make(chan int)
	var wg sync.WaitGroup
	for k := 0; k < workers; k++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				f(i)
			}
		}()
	}
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
}

// tally counts rounds and keeps the first failures.
type tally struct {
	mu       sync.Mutex
	name     string
	rounds   int
	failures []string
	states   map[string]int
}

func (t *tally) add(desc string, err error, state string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.rounds++
	if t.states == nil {
		t.states = map[string]int{}
	}
	t.states[state]++
	if err != nil {
		t.failures = append(t.failures, desc+": "+err.Error())
	}
}

func (t *tally) report(tt *testing.T) {
	keys := make([]string, 0, len(t.states))
	for k := range t.states {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, t.states[k]))
	}
	line := fmt.Sprintf("%s: %d rounds, %d damaged or not repaired; after the round: %s", t.name, t.rounds, len(t.failures), strings.Join(parts, ", "))
	tt.Log(line)
	if *relReport != "" {
		f, err := os.OpenFile(*relReport, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err == nil {
			fmt.Fprintln(f, line)
			f.Close()
		}
	}
	for i, f := range t.failures {
		if i == 20 {
			tt.Errorf("... and %d more", len(t.failures)-20)
			break
		}
		tt.Error(f)
	}
}

// faultRound fails the given calls during op and checks the tree: an
// exit of 0 must leave it in op's end state, any other exit in its start
// state; a rerun must end clean.
func (w *world) faultRound(op string, es ...syscallEntry) (string, error) {
	site := w.fresh(op == "revert")
	code, out := w.run(site, faultArgs(es...), op)
	v := w.check(site)
	start, end := "original", "patched"
	if op == "revert" {
		start, end = end, start
	}
	state := fmt.Sprintf("%s exit %d", v.State, code)
	if code == 0 {
		state = v.State + " exit 0"
	} else if code > 0 {
		state = v.State + " exit≠0"
	}
	switch {
	case v.State == "damaged":
		return state, fmt.Errorf("exit %d, tree %s\n%s", code, v, out)
	case code == 0 && v.State != end:
		return state, fmt.Errorf("exit 0 but the tree is %s, want %s\n%s", v, end, out)
	case code != 0 && v.State != start:
		return state, fmt.Errorf("exit %d but the tree is %s, want %s (rolled back)\n%s", code, v, start, out)
	}
	if code2, out2 := w.run(site, nil, op); code2 != 0 {
		return state, fmt.Errorf("rerun exit %d\n%s", code2, out2)
	}
	if err := w.clean(site, op); err != nil {
		return state, fmt.Errorf("rerun: %v", err)
	}
	os.RemoveAll(site)
	return state, nil
}

// killRound runs op, SIGKILLs it (after delay, or at a call strace
// injects signal=KILL into), and checks that imports resolve, no file is
// damaged and a rerun of op ends clean.
func (w *world) killRound(op string, straceArgs []string, delay time.Duration) (string, error) {
	site := w.fresh(op == "revert")
	if straceArgs != nil && delay < 0 {
		w.run(site, straceArgs, op) // strace delivers the SIGKILL
	} else {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		cmd := w.command(ctx, site, straceArgs, op)
		if err := cmd.Start(); err != nil {
			cancel()
			return "", err
		}
		time.Sleep(delay)
		victim := cmd.Process.Pid
		if straceArgs != nil {
			if kids := children(victim); len(kids) > 0 {
				victim = kids[0]
			}
		}
		syscall.Kill(victim, syscall.SIGKILL)
		cmd.Wait()
		cancel()
	}
	v := w.check(site)
	if v.State == "damaged" {
		return v.State, fmt.Errorf("after the kill: %s", v)
	}
	if code, out := w.run(site, nil, op); code != 0 {
		return v.State, fmt.Errorf("after the kill (%s), rerun exit %d\n%s", v, code, out)
	}
	if err := w.clean(site, op); err != nil {
		return v.State, fmt.Errorf("after the kill (%s), rerun: %v", v.State, err)
	}
	os.RemoveAll(site)
	return v.State, nil
}

func children(pid int) []int {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if n, err := strconv.Atoi(f); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// raceRound starts apply and revert together on a tree (patched or not)
// and checks that both succeed and the tree ends in one state, whole.
func (w *world) raceRound(patched bool, straceApply []string) (string, error) {
	site := w.fresh(patched)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	a := w.command(ctx, site, straceApply, "apply")
	r := w.command(ctx, site, nil, "revert")
	var aout, rout bytes.Buffer
	a.Stdout, a.Stderr = &aout, &aout
	r.Stdout, r.Stderr = &rout, &rout
	if err := a.Start(); err != nil {
		return "", err
	}
	if straceApply != nil {
		// Start revert once apply is writing: it holds the lock, or (a
		// tool without one) has staged a temporary file.
		writing := func() bool {
			if lockHeld(filepath.Join(site, relLock)) {
				return true
			}
			for _, d := range []string{"vllm", "vllm/entrypoints/openai/chat_completion"} {
				if m, _ := filepath.Glob(filepath.Join(site, d, ".vllm-timings-*.tmp")); len(m) > 0 {
					return true
				}
			}
			return false
		}
		if !waitFor(writing, 10*time.Second) {
			a.Process.Kill()
			a.Wait()
			return "", fmt.Errorf("apply never started writing")
		}
	}
	if err := r.Start(); err != nil {
		return "", err
	}
	ea, er := a.Wait(), r.Wait()
	v := w.check(site)
	defer func() {
		if v.State == "original" || v.State == "patched" {
			os.RemoveAll(site)
		}
	}()
	state := v.State
	switch {
	case exitCode(ea) != 0 || exitCode(er) != 0:
		return state, fmt.Errorf("apply exit %d, revert exit %d, tree %s\napply: %s\nrevert: %s", exitCode(ea), exitCode(er), v, aout.String(), rout.String())
	case v.State != "original" && v.State != "patched" || len(v.Leftovers) > 0:
		return state, fmt.Errorf("tree %s\napply: %s\nrevert: %s", v, aout.String(), rout.String())
	case v.State == "original" && v.Manifest != "":
		return state, fmt.Errorf("original tree with manifest %s", v.Manifest)
	case v.State == "patched" && v.Manifest != "applied":
		return state, fmt.Errorf("patched tree with manifest %q", v.Manifest)
	}
	return state, nil
}

func waitFor(cond func() bool, max time.Duration) bool {
	deadline := time.Now().Add(max)
	for time.Now().Before(deadline) {
		if cond() {
			return true
		}
		time.Sleep(2 * time.Millisecond)
	}
	return false
}

// lockHeld reports whether another process holds the lock file.
func lockHeld(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return true
	}
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return false
}

func TestReliabilityFaults(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.strace = testtree.RequireTool(t, "strace")
	for _, op := range []string{"apply", "revert"} {
		calls := w.trace(op)
		var writePhase []syscallEntry
		for _, e := range calls {
			if e.Write {
				writePhase = append(writePhase, e)
			}
		}
		singles := calls
		if !*relFull {
			// The subset: every rename.
			singles = nil
			for _, e := range writePhase {
				if e.Name == "renameat" {
					singles = append(singles, e)
				}
			}
		}
		one := &tally{name: fmt.Sprintf("faults %s, one call failed (%d calls traced, %d in the write phase)", op, len(calls), len(writePhase))}
		parallel(len(singles), func(i int) {
			e := singles[i]
			state, err := w.faultRound(op, e)
			one.add(fmt.Sprintf("%s #%d failed", e.Name, e.N), err, state)
		})
		one.report(t)
		two := &tally{name: fmt.Sprintf("faults %s, two calls failed", op)}
		var pairs [][2]syscallEntry
		for i := range writePhase {
			for j := i + 1; j < len(writePhase); j++ {
				pairs = append(pairs, [2]syscallEntry{writePhase[i], writePhase[j]})
			}
		}
		if !*relFull {
			// The subset: the second rename failed, then each later rename
			// or unlink (the rollback's).
			var keep [][2]syscallEntry
			for _, p := range pairs {
				if p[0].Name == "renameat" && p[0].N == firstN(writePhase, "renameat")+1 && mutating[p[1].Name] {
					keep = append(keep, p)
				}
			}
			if len(keep) > 3 {
				keep = keep[:3]
			}
			pairs = keep
		}
		parallel(len(pairs), func(i int) {
			p := pairs[i]
			state, err := w.faultRound(op, p[0], p[1])
			two.add(fmt.Sprintf("%s #%d and %s #%d failed", p[0].Name, p[0].N, p[1].Name, p[1].N), err, state)
		})
		two.report(t)
	}
}

func firstN(es []syscallEntry, name string) int {
	for _, e := range es {
		if e.Name == name {
			return e.N
		}
	}
	return 0
}

func TestReliabilityKills(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.strace = testtree.RequireTool(t, "strace")
	for _, op := range []string{"apply", "revert"} {
		// Deterministic: SIGKILL at each mutating call of the write phase
		// (every call of it with -reliability).
		at := &tally{name: fmt.Sprintf("kills %s, SIGKILL at a system call", op)}
		var points []syscallEntry
		for _, e := range w.trace(op) {
			if e.Write && (*relFull || e.Name == "renameat") {
				points = append(points, e)
			}
		}
		parallel(len(points), func(i int) {
			e := points[i]
			state, err := w.killRound(op, []string{"-e", injectArg(e, "signal=KILL")}, -1)
			at.add(fmt.Sprintf("SIGKILL at %s #%d", e.Name, e.N), err, state)
		})
		at.report(t)
		if !*relFull {
			continue
		}
		seed := *relSeed
		if seed == 0 {
			seed = time.Now().UnixNano()
		}
		rng := rand.New(rand.NewSource(seed))
		// Random delays, at natural speed and with every mutating call
		// slowed by 2 ms (so more kills land inside the write phase).
		slow := []string{"-e", "inject=renameat,unlinkat,fsync,flock:delay_enter=2000"}
		for _, mode := range []struct {
			name   string
			strace []string
		}{{"natural speed", nil}, {"mutating calls slowed 2 ms", slow}} {
			t0 := time.Now()
			for i := 0; i < 5; i++ {
				w.run(w.fresh(op == "revert"), mode.strace, op)
			}
			span := time.Since(t0) / 5 * 3 / 2
			rk := &tally{name: fmt.Sprintf("kills %s, random delay 0-%v, %s (seed %d)", op, span.Round(time.Millisecond), mode.name, seed)}
			for i := 0; i < *relKills; i++ {
				d := time.Duration(rng.Int63n(int64(span)))
				state, err := w.killRound(op, mode.strace, d)
				rk.add(fmt.Sprintf("kill after %v", d), err, state)
			}
			rk.report(t)
		}
	}
}

func TestReliabilityRaces(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.strace = testtree.RequireTool(t, "strace")
	// Deterministic: apply sits 300 ms on the lock it took and its renames
	// take 50 ms each; revert starts while apply holds the lock, waits,
	// and runs after it.
	det := &tally{name: "races, apply slowed (300 ms holding the lock, 50 ms renames), then revert"}
	for _, patched := range []bool{false, true} {
		state, err := w.raceRound(patched, []string{"-e", "inject=flock:delay_exit=300000:when=1", "-e", "inject=renameat:delay_enter=50000"})
		if err == nil && state != "original" {
			err = fmt.Errorf("revert started second but the tree is %s", state)
		}
		det.add(fmt.Sprintf("from a %s tree", map[bool]string{false: "pristine", true: "patched"}[patched]), err, state)
	}
	det.report(t)
	if !*relFull {
		return
	}
	rt := &tally{name: "races, apply and revert started together"}
	for i := 0; i < *relRaces; i++ {
		state, err := w.raceRound(i%2 == 1, nil)
		rt.add(fmt.Sprintf("round %d", i), err, state)
	}
	rt.report(t)
}
