package find

import (
	"os"
	"testing"

	"github.com/vllm-timings/vllm-timings/patcher/testtree"
)

// TestMain puts the real python3 first on PATH and reports the tests
// that skipped.
func TestMain(m *testing.M) { os.Exit(testtree.MainWithPython(m)) }

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
