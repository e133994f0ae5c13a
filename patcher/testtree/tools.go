package testtree

import (
	"os"
	"os/exec"
	"testing"
)

// RequireTool returns the path of an external program a test runs. Outside
// CI a missing program skips the test and says so; with CI=true it fails it,
// because .ci/run installs everything the tests use and a green CI must
// mean the program really ran.
func RequireTool(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not on PATH, and CI=true requires it; .ci/run installs it", name)
		}
		t.Skipf("SKIPPED: %s is not on PATH (with CI=true this fails)", name)
	}
	return p
}

// RequirePythonModule is RequireTool for a module python can import.
func RequirePythonModule(t testing.TB, python, module string) {
	t.Helper()
	if err := exec.Command(python, "-c", "import "+module).Run(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("python module %s is not importable, and CI=true requires it; .ci/run installs it", module)
		}
		t.Skipf("SKIPPED: python module %s is not installed (with CI=true this fails)", module)
	}
}
