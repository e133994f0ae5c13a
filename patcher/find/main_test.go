package find

import (
	"os"
	"testing"

	"github.com/vllm-timings/vllm-timings/patcher/testtree"
)

// TestMain puts the real python3 first on PATH (testtree.PythonFirstOnPath)
// and reports the tests that skipped.
func TestMain(m *testing.M) {
	cleanup := testtree.PythonFirstOnPath()
	code := m.Run()
	cleanup()
	testtree.ReportSkips()
	os.Exit(code)
}

// requireTool skips without the tool, except in CI (CI=true), where a
// missing tool is a failure.
func requireTool(t testing.TB, name string) string {
	t.Helper()
	return testtree.RequireTool(t, name)
}

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
