package compile

import (
	"os"
	"testing"

	"github.com/vllm-timings/vllm-timings/patcher/testtree"
)

// TestMain puts the real python3 first on PATH and reports the tests
// that skipped.
func TestMain(m *testing.M) { os.Exit(testtree.MainWithPython(m)) }
