package modules

import (
	"os"
	"testing"

	"github.com/vllm-timings/vllm-timings/patcher/testtree"
)

// TestMain ends the run with one line naming what the skipped tests
// lacked (testtree.Main), which a plain go test ./... shows.
// llama-swap's build starts first (testtree.PrebuildLlamaSwap).
func TestMain(m *testing.M) {
	testtree.PrebuildLlamaSwap()
	os.Exit(testtree.Main(m))
}
