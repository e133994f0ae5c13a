package patcher

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/vllm-timings/vllm-timings/patcher/find"
	"github.com/vllm-timings/vllm-timings/patcher/testtree"
)

// benchSite is the tree the apply benchmarks patch: $VLLM_TIMINGS_BENCH_SITE
// (a directory holding vllm/, such as a real site-packages; it is copied,
// never written) or the openai-packages-raw-stream fixture. The whole
// process, python3's compile check included, is what scripts/bench-apply
// measures; these show the in-process share and where it goes (-cpuprofile).
func benchSite(b *testing.B) string {
	b.Helper()
	dir := b.TempDir()
	if site := os.Getenv("VLLM_TIMINGS_BENCH_SITE"); site != "" {
		if err := os.CopyFS(dir, os.DirFS(site)); err != nil {
			b.Fatal(err)
		}
		return dir
	}
	if err := testtree.Unpack("openai-packages-raw-stream", dir); err != nil {
		b.Fatal(err)
	}
	return dir
}

// applyOnce is one apply as the command runs it: a fresh library and a
// fresh parse of every target (the memo is the session's), the lock taken,
// the scanner instead of python3.
func applyOnce(b *testing.B, site string) []string {
	s, err := Open(Options{Find: find.Options{Dir: filepath.Join(site, "vllm")}, Lock: true, Python: "-"})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	out, err := s.Apply()
	if err != nil {
		b.Fatal(err)
	}
	return out
}

// BenchmarkApplyPatched is apply on a tree it already patched: nothing to
// write.
func BenchmarkApplyPatched(b *testing.B) {
	site := benchSite(b)
	applyOnce(b, site)
	for b.Loop() {
		if out := applyOnce(b, site); len(out) != 0 {
			b.Fatalf("apply on a patched tree wrote %v", out)
		}
	}
}

// BenchmarkApplyUnpatched is apply then revert: each iteration writes the
// patch (fsync included) and takes it out again.
func BenchmarkApplyUnpatched(b *testing.B) {
	site := benchSite(b)
	for b.Loop() {
		if out := applyOnce(b, site); len(out) == 0 {
			b.Fatal("apply wrote nothing")
		}
		s, err := Open(Options{Find: find.Options{Dir: filepath.Join(site, "vllm")}, Lock: true, Python: "-"})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.Revert(false); err != nil {
			b.Fatal(err)
		}
		s.Close()
	}
}

// BenchmarkLoadLibrary is the embedded sets' cost at start: compiled in.
func BenchmarkLoadLibrary(b *testing.B) {
	for b.Loop() {
		if _, err := LoadLibrary(nil, ""); err != nil {
			b.Fatal(err)
		}
	}
}
