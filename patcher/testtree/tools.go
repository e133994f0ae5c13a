package testtree

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// RequireTool returns the path of an external program a test runs. Outside
// CI a missing program skips the test and says so; with CI=true it fails it,
// because .ci/run installs everything the tests use and a green CI must
// mean the program really ran. For python3 it is the interpreter itself
// (see Python), not a version manager's shim in front of it.
func RequireTool(t testing.TB, name string) string {
	t.Helper()
	var p string
	var err error
	if name == "python3" {
		p, err = Python()
	} else {
		p, err = exec.LookPath(name)
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not on PATH, and CI=true requires it; .ci/run installs it: %v", name, err)
		}
		Skipf(t, name+" on PATH", "SKIPPED: %s is not on PATH (with CI=true this fails): %v", name, err)
	}
	return p
}

var python struct {
	once sync.Once
	path string
	err  error
}

// Python returns the interpreter that "python3" on PATH runs: the
// program's own sys.executable, asked once per test process. Where PATH's
// python3 is a version manager's shim (pyenv's is a bash script that runs
// about fifteen more processes to pick the interpreter, some 100 ms before
// Python starts), every test's python3 would pay that again; the
// interpreter it picks is the same each time.
func Python() (string, error) {
	python.once.Do(func() {
		shim, err := exec.LookPath("python3")
		if err != nil {
			python.err = err
			return
		}
		out, err := exec.Command(shim, "-S", "-c", "import sys; print(sys.executable)").Output()
		if err != nil {
			python.err = fmt.Errorf("%s -c 'print(sys.executable)': %v", shim, err)
			return
		}
		python.path = strings.TrimSpace(string(out))
		if python.path == "" {
			python.path = shim // an embedded interpreter that does not know
		}
	})
	return python.path, python.err
}

// PythonFirstOnPath puts Python's interpreter, as "python3", in a new
// directory at the front of PATH, so that what the tests run and what runs
// python3 from PATH in the test process (the patcher's compile check, the
// binary under test in a script) start the interpreter directly. It is a
// no-op where python3 is already the interpreter or is missing. Call it
// from TestMain; the returned func removes the directory.
func PythonFirstOnPath() (cleanup func()) {
	py, err := Python()
	shim, lerr := exec.LookPath("python3")
	if err != nil || lerr != nil || sameFile(py, shim) {
		return func() {}
	}
	dir, err := os.MkdirTemp("", "vllm-timings-python-")
	if err != nil {
		return func() {}
	}
	if err := os.Symlink(py, filepath.Join(dir, "python3")); err != nil {
		os.RemoveAll(dir)
		return func() {}
	}
	os.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return func() { os.RemoveAll(dir) }
}

func sameFile(a, b string) bool {
	ra, err1 := filepath.EvalSymlinks(a)
	rb, err2 := filepath.EvalSymlinks(b)
	return err1 == nil && err2 == nil && ra == rb
}

var modules sync.Map // "python\x00module" → error (nil: importable)

// RequirePythonModule is RequireTool for a module python can import. Each
// module is tried once per test process.
func RequirePythonModule(t testing.TB, python, module string) {
	t.Helper()
	key := python + "\x00" + module
	res, ok := modules.Load(key)
	if !ok {
		var err error
		if out, e := exec.Command(python, "-c", "import "+module).CombinedOutput(); e != nil {
			err = fmt.Errorf("%v: %s", e, strings.TrimSpace(string(out)))
		}
		res, _ = modules.LoadOrStore(key, err)
	}
	if err, _ := res.(error); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("python module %s is not importable, and CI=true requires it; .ci/run installs it: %v", module, err)
		}
		Skipf(t, "python module "+module, "SKIPPED: python module %s is not installed (with CI=true this fails)", module)
	}
}
