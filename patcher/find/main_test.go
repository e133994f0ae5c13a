package find

import (
	"os"
	"testing"

	"github.com/vllm-timings/vllm-timings/patcher/testtree"
)

// TestMain puts the real python3 first on PATH and reports the tests
// that skipped.
func TestMain(m *testing.M) { os.Exit(testtree.MainWithPython(m)) }

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
