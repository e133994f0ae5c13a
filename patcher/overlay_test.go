package patcher

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vllm-timings/vllm-timings/patcher/exit"
	"github.com/vllm-timings/vllm-timings/patcher/find"
	"github.com/vllm-timings/vllm-timings/patcher/testtree"
)

// pythonWith runs python3 with env added to the test's environment.
func pythonWith(t *testing.T, py string, env []string, args ...string) (string, string, error) {
	t.Helper()
	cmd := exec.Command(py, args...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.String(), stderr.String(), err
}

// TestOverlayServesThePatch: for every fixture layout, the overlay makes
// Python run the patched modules and none of the originals, the responses
// are those of a tree patched in place, and the tree is not changed.
func TestOverlayServesThePatch(t *testing.T) {
	py := requireTool(t, "python3")
	testtree.RequirePythonModule(t, py, "pydantic")
	var jobs []driveJob
	sites, overlays := map[string]string{}, map[string]string{}
	for _, fx := range fixtures {
		jobs = append(jobs, driveJob{fx.name, true, false})
		sites[fx.name] = fixture(t, fx.name)
		overlays[fx.name] = filepath.Join(t.TempDir(), "overlay") // kept for the hooks' check below
	}
	inPlace := driveAll(t, py, jobs...)
	// Bytecode for the originals, so loading one from its .pyc would
	// show too: one compileall for every tree.
	args := []string{"-m", "compileall", "-q"}
	for _, fx := range fixtures {
		args = append(args, sites[fx.name])
	}
	if out, err := exec.Command(py, args...).CombinedOutput(); err != nil {
		t.Fatalf("compileall: %v\n%s", err, out)
	}
	var mu sync.Mutex
	var hooks []string
	t.Run("fixtures", func(t *testing.T) {
		for _, fx := range fixtures {
			t.Run(fx.name, func(t *testing.T) {
				t.Parallel()
				site, ov := sites[fx.name], overlays[fx.name]
				before := hash(t, site)
				res, err := open(t, site).ApplyOverlay(ov)
				if err != nil {
					t.Fatal(err)
				}
				if !res.Needed || len(res.Written) != len(fx.edits)+3 { // the edits, the module, hook, manifest
					t.Errorf("written %v, want the %d edited files, the created module, hook and manifest", res.Written, len(fx.edits))
				}
				if after := hash(t, site); after != before {
					t.Fatal("apply --overlay changed the tree")
				}

				// One Python drives the serving code through the overlay,
				// then checks what it imported.
				driven := filepath.Join(t.TempDir(), "driven.json")
				env := []string{"PYTHONPATH=" + ov + string(filepath.ListSeparator) + site, "PYTHONDONTWRITEBYTECODE=1"}
				out, stderr, err := pythonWith(t, py, env, filepath.Join("testdata", "python", "overlay_check.py"), ov, "--drive", site, driven)
				if err != nil {
					t.Fatalf("overlay_check.py: %v\n%s%s", err, out, stderr)
				}
				for _, rel := range append([]string{module}, fx.edits...) {
					name, _ := moduleName(rel)
					if !strings.Contains(out, "served "+name+"\n") {
						t.Errorf("overlay_check.py did not import %s:\n%s", name, out)
					}
				}
				viaOverlay := readFile(t, driven)
				if !strings.Contains(viaOverlay, `"timings"`) {
					t.Fatal("no timings through the overlay")
				}
				if diff := cmp.Diff(string(inPlace[driveJob{fx.name, true, false}]), viaOverlay); diff != "" {
					t.Errorf("responses through the overlay differ from the tree patched in place (-in place +overlay):\n%s", diff)
				}
				if after := hash(t, site); after != before {
					t.Fatal("running through the overlay changed the tree")
				}
				mu.Lock()
				hooks = append(hooks, filepath.Join(ov, overlayHookName))
				mu.Unlock()
			})
		}
	})
	// The generated hooks are clean Python.
	if len(hooks) > 0 {
		pyCompile(t, hooks...)
		if msgs := pyflakesFindings(t, hooks...); len(msgs) > 0 {
			t.Errorf("pyflakes on the hooks: %v", msgs)
		}
	}
}

func TestOverlayChainsToSitecustomize(t *testing.T) {
	py := requireTool(t, "python3")
	site, ov, other := fixture(t, "openai-packages"), filepath.Join(t.TempDir(), "ov"), t.TempDir()
	if _, err := open(t, site).ApplyOverlay(ov); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(other, "sitecustomize.py"), "import sys\nsys.stderr.write('the other sitecustomize ran\\n')\nMARK = 'other'\n")
	// A second overlay between them is skipped, not chained to (its hook
	// would chain back).
	ov2 := filepath.Join(t.TempDir(), "ov2")
	if _, err := open(t, fixture(t, "openai-packages")).ApplyOverlay(ov2); err != nil {
		t.Fatal(err)
	}
	env := []string{"PYTHONPATH=" + strings.Join([]string{ov, ov2, other, site}, string(filepath.ListSeparator)), "PYTHONDONTWRITEBYTECODE=1"}
	out, stderr, err := pythonWith(t, py, env, "-c", "import sitecustomize, vllm._llamacpp_timings as m; print(sitecustomize.chained.MARK, m.__file__)")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if want := "other " + filepath.Join(ov, overlayFilesDir, module) + "\n"; out != want || stderr != "the other sitecustomize ran\n" {
		t.Errorf("got stdout %q stderr %q, want %q and the other's message once", out, stderr, want)
	}
	// Without another sitecustomize there is nothing to chain to.
	out, stderr, err = pythonWith(t, py, []string{"PYTHONPATH=" + ov, "PYTHONDONTWRITEBYTECODE=1"}, "-S", "-c", "import sys; sys.path.insert(0, "+pyQuote(ov)+"); import sitecustomize; print(sitecustomize.chained)")
	if err != nil || out != "None\n" {
		t.Errorf("no other sitecustomize: %q, %v\n%s", out, err, stderr)
	}
}

func pyQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `\'`) + "'" }

// TestOverlayStale: once the original changes (a vLLM upgrade), neither
// Python nor status use the copy made from the old one.
func TestOverlayStale(t *testing.T) {
	py := requireTool(t, "python3")
	site, ov := fixture(t, "openai-packages"), filepath.Join(t.TempDir(), "ov")
	if _, err := open(t, site).ApplyOverlay(ov); err != nil {
		t.Fatal(err)
	}
	replaceIn(t, filepath.Join(site, cmplServing), "class OpenAIServingCompletion", "# upgraded\nclass OpenAIServingCompletion")
	env := []string{"PYTHONPATH=" + ov + string(filepath.ListSeparator) + site, "PYTHONDONTWRITEBYTECODE=1"}
	out, stderr, err := pythonWith(t, py, env, "-c", "import vllm.entrypoints.openai.completion.serving as c, vllm.entrypoints.openai.chat_completion.serving as s; print(c.__file__); print(s.__file__)")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	want := filepath.Join(site, cmplServing) + "\n" + filepath.Join(ov, overlayFilesDir, chatServing) + "\n"
	if out != want {
		t.Errorf("imported\n%s want\n%s", out, want)
	}
	if !strings.Contains(stderr, "not serving vllm.entrypoints.openai.completion.serving: "+filepath.Join(site, cmplServing)+" changed since the overlay was made") || !strings.Contains(stderr, "rerun: vllm-timings apply --overlay "+ov) {
		t.Errorf("no warning about the stale copy:\n%s", stderr)
	}

	s, err := Open(Options{Find: find.Options{Dir: site}, Overlay: ov})
	if err != nil {
		t.Fatal(err)
	}
	r := s.Status()
	if r.State != Outdated || r.Overlay == nil {
		t.Fatalf("status: %+v", r)
	}
	got := map[string]string{}
	for _, f := range r.Overlay.Files {
		got[f.Path] = f.Why
	}
	wantWhy := map[string]string{module: "", chatServing: "", cmplServing: "the original changed since the overlay was made", outputProcessor: ""}
	if diff := cmp.Diff(wantWhy, got); diff != "" {
		t.Errorf("overlay files (-want +got):\n%s", diff)
	}
	// apply --overlay again makes it current.
	res, err := open(t, site).ApplyOverlay(ov)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Written) != 3 { // the completion copy, hook and manifest
		t.Errorf("rewrote %v", res.Written)
	}
	s, _ = Open(Options{Find: find.Options{Dir: site}, Overlay: ov})
	if r := s.Status(); r.State != Patched {
		t.Errorf("after apply --overlay: %s", r.State)
	}
}

func TestOverlayLifecycle(t *testing.T) {
	site, ov := fixture(t, "openai-packages"), filepath.Join(t.TempDir(), "ov")
	before := hash(t, site)
	status := func() *StatusReport {
		t.Helper()
		s, err := Open(Options{Find: find.Options{Dir: site}, Overlay: ov})
		if err != nil {
			t.Fatal(err)
		}
		return s.Status()
	}
	if r := status(); r.State != Unpatched || r.Overlay.Problem == "" {
		t.Errorf("before: %s, %+v", r.State, r.Overlay)
	}
	if _, err := open(t, site).ApplyOverlay(ov); err != nil {
		t.Fatal(err)
	}
	if r := status(); r.State != Patched || r.Overlay.PatchSet != "openai-packages" {
		t.Errorf("after: %s, %+v", r.State, r.Overlay)
	}
	// The tree itself is still unpatched.
	if r := open(t, site).Status(); r.State != Unpatched {
		t.Errorf("tree: %s", r.State)
	}
	// Idempotent.
	res, err := open(t, site).ApplyOverlay(ov)
	if err != nil || len(res.Written) != 0 || !res.Needed {
		t.Errorf("second apply: %+v, %v", res, err)
	}
	// A copy edited by hand is not served.
	copyPath := filepath.Join(ov, overlayFilesDir, chatServing)
	writeFile(t, copyPath, readFile(t, copyPath)+"# edited\n")
	if r := status(); r.State == Patched {
		t.Errorf("edited copy: still %s", r.State)
	}
	// Revert removes the overlay's files, keeps the directory and never
	// touches the tree.
	if err := os.WriteFile(filepath.Join(ov, "__pycache__"), nil, 0o644); err == nil {
		os.Remove(filepath.Join(ov, "__pycache__"))
	}
	lines, err := open(t, site).RevertOverlay(ov, true)
	if err != nil || len(lines) != 3 || !strings.HasPrefix(lines[0], "would remove ") {
		t.Fatalf("dry run: %v, %v", lines, err)
	}
	if _, err := os.Stat(filepath.Join(ov, overlayHookName)); err != nil {
		t.Fatal("dry run removed the hook")
	}
	if lines, err = open(t, site).RevertOverlay(ov, false); err != nil || len(lines) != 3 {
		t.Fatalf("revert: %v, %v", lines, err)
	}
	if entries, _ := os.ReadDir(ov); len(entries) != 0 {
		t.Errorf("left in the overlay: %v", entries)
	}
	if lines, err = open(t, site).RevertOverlay(ov, false); err != nil || len(lines) != 0 {
		t.Errorf("second revert: %v, %v", lines, err)
	}
	if hash(t, site) != before {
		t.Error("the tree changed")
	}

	// A tree patched in place needs no overlay, and an old one is cleared.
	if _, err := open(t, site).ApplyOverlay(ov); err != nil {
		t.Fatal(err)
	}
	if _, err := open(t, site).Apply(); err != nil {
		t.Fatal(err)
	}
	res, err = open(t, site).ApplyOverlay(ov)
	if err != nil || res.Needed || len(res.Written) != 3 {
		t.Errorf("patched in place: %+v, %v", res, err)
	}
	if _, err := os.Stat(filepath.Join(ov, overlayHookName)); err == nil {
		t.Error("the old hook is still there")
	}
}

func TestOverlayRefusals(t *testing.T) {
	site := fixture(t, "openai-packages")
	before := hash(t, site)
	var pe *exit.Error
	refuse := func(name, dir, want string) {
		t.Helper()
		_, err := open(t, site).ApplyOverlay(dir)
		if !errors.As(err, &pe) || pe.Code != ExitOverlay || !strings.Contains(pe.Msg, want) {
			t.Errorf("%s: %v; want exit %d and %q", name, err, ExitOverlay, want)
		}
	}
	foreign := t.TempDir()
	writeFile(t, filepath.Join(foreign, "json.py"), "")
	writeFile(t, filepath.Join(foreign, "notes.txt"), "")
	refuse("other files", foreign, "holds files vllm-timings did not write (json.py, notes.txt)")
	theirs := t.TempDir()
	writeFile(t, filepath.Join(theirs, "sitecustomize.py"), "import os\n")
	refuse("someone else's sitecustomize", theirs, "holds files vllm-timings did not write (sitecustomize.py)")
	refuse("inside the package", filepath.Join(site, "vllm", "overlay"), "is inside the vllm package")
	refuse("a colon", filepath.Join(t.TempDir(), "a:b"), "PYTHONPATH cannot carry")
	file := filepath.Join(t.TempDir(), "file")
	writeFile(t, file, "")
	refuse("a file", file, "not a directory")
	if entries, _ := os.ReadDir(foreign); len(entries) != 2 {
		t.Errorf("the refused directory changed: %v", entries)
	}
	if hash(t, site) != before {
		t.Error("the tree changed")
	}
}

// TestOverlayAsAnotherUser runs apply --overlay as nobody on a tree nobody
// can write: the overlay is written, the tree untouched; and a directory
// nobody cannot write is exit 37 with nothing changed.
func TestOverlayAsAnotherUser(t *testing.T) {
	dir, bin := asNobody(t, "vllm-timings-overlay-")
	site := filepath.Join(dir, "site")
	if err := testtree.Unpack("openai-packages", site); err != nil {
		t.Fatal(err)
	}
	before := hash(t, site)
	ov := filepath.Join(dir, "ov")
	if err := os.Mkdir(ov, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(ov, 0o777)
	run := func(args ...string) (string, int) {
		cmd := nobodyCmd(bin, args...)
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return string(out), ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return string(out), 0
	}
	out, code := run("apply", "--vllm-dir", site, "--overlay", ov)
	if code != 0 || !strings.Contains(out, "export PYTHONPATH="+ov+"${PYTHONPATH:+:$PYTHONPATH}\n") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	if out, code = run("status", "--vllm-dir", site, "--overlay", ov); code != 0 || !strings.Contains(out, "state: patched") {
		t.Errorf("status: exit %d\n%s", code, out)
	}
	if out, code = run("apply", "--vllm-dir", site, "--overlay", filepath.Join(site, "..", "nope")); code != int(ExitOverlay) || !strings.Contains(out, "cannot write the overlay") {
		t.Errorf("unwritable overlay: exit %d\n%s", code, out)
	}
	if hash(t, site) != before {
		t.Error("the tree changed")
	}
}
