package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/vllm-timings/vllm-timings/patcher/testtree"
)

// makeTree builds a small tree that exercises every NAR node kind: an empty
// file, a file whose length is not a multiple of 8, an executable, a symlink,
// an empty directory and entry names whose byte order differs from a
// case-insensitive order.
func makeTree(t *testing.T) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "tree")
	for _, d := range []string{"a/empty", "B"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := []struct {
		name string
		data string
		mode os.FileMode
	}{
		{"modules.txt", "# example.com/m v1.0.0\n## explicit; go 1.21\nexample.com/m\n", 0o644},
		{"a/run.sh", "#!/bin/sh\necho hi\n", 0o755},
		{"a/zero", "", 0o644},
		{"B/eight888", "12345678", 0o444},
	}
	for _, f := range files {
		p := filepath.Join(root, f.name)
		if err := os.WriteFile(p, []byte(f.data), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, f.mode); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("../modules.txt", filepath.Join(root, "a/link")); err != nil {
		t.Fatal(err)
	}
	return root
}

// makeTreeHash is what Nix 2.8 printed for the same tree, built by hand in a
// shell: `nix-hash --type sha256 DIR | xxd -r -p | base64`. It pins the
// serialisation where Nix is not installed.
const makeTreeHash = "sha256-HRohVZIcRgCwiTObqF35IKb2SgmU+4NTct/Z0h3jx/g="

func TestNARHashOfKnownTree(t *testing.T) {
	got, err := NARHash(makeTree(t))
	if err != nil {
		t.Fatal(err)
	}
	if got != makeTreeHash {
		t.Errorf("NARHash = %s, want %s", got, makeTreeHash)
	}
}

// TestWriteNARMatchesNixStore compares the serialisation with Nix's own,
// `nix-store --dump`, byte for byte.
func TestWriteNARMatchesNixStore(t *testing.T) {
	nixStore := testtree.RequireTool(t, "nix-store")
	root := makeTree(t)
	want, err := exec.Command(nixStore, "--dump", root).Output()
	if err != nil {
		t.Fatalf("nix-store --dump: %v", err)
	}
	var got bytes.Buffer
	if err := WriteNAR(&got, root); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Errorf("WriteNAR differs from nix-store --dump (%d vs %d bytes)", got.Len(), len(want))
	}
}

func TestNARRefusesSpecialFiles(t *testing.T) {
	root := t.TempDir()
	if err := exec.Command("mkfifo", filepath.Join(root, "fifo")).Run(); err != nil {
		testtree.Skipf(t, "mkfifo", "SKIPPED: mkfifo: %v", err)
	}
	if _, err := NARHash(root); err == nil {
		t.Error("NARHash accepted a named pipe")
	}
}

func TestReadWritePinned(t *testing.T) {
	p := filepath.Join(t.TempDir(), "package.nix")
	src := "{\n  pname = \"x\";\n  vendorHash = \"sha256-old\";\n}\n"
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WritePinned(p, "sha256-new="); err != nil {
		t.Fatal(err)
	}
	got, err := ReadPinned(p)
	if err != nil || got != "sha256-new=" {
		t.Fatalf("ReadPinned = %q, %v; want sha256-new=", got, err)
	}
	b, _ := os.ReadFile(p)
	if want := "{\n  pname = \"x\";\n  vendorHash = \"sha256-new=\";\n}\n"; string(b) != want {
		t.Errorf("file after WritePinned:\n%s\nwant:\n%s", b, want)
	}

	if err := os.WriteFile(p, []byte("{ }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadPinned(p); err == nil {
		t.Error("ReadPinned found a hash in a file without one")
	}
}

// TestPinnedVendorHashIsCurrent fails when modules/package.nix's vendorHash no
// longer matches go.mod/go.sum and the module's imports, which happens
// whenever a dependency is added or removed (for example after a merge).
//
// It runs `go mod vendor`, which downloads from GOPROXY whatever is not in
// the module cache yet: on a fresh machine this test uses the network.
func TestPinnedVendorHashIsCurrent(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "vendor")); err == nil {
		// buildGoModule's checkPhase runs the tests in a tree whose vendor/
		// is the goModules output that Nix has already checked against this
		// very hash, and the sandbox has no network for `go mod vendor`.
		t.Skip("SKIPPED: vendor/ present (running inside nix build's checkPhase); Nix itself verified vendorHash")
	}
	pinned, err := ReadPinned(filepath.Join(root, PinFile))
	if err != nil {
		t.Fatal(err)
	}
	got, err := Compute(context.Background(), root)
	if err != nil {
		t.Fatalf("%v\nbuildGoModule runs this same `go mod vendor`, so `nix build` would fail too. A go.mod that is not tidy is the usual cause: run `go mod tidy`, then %s.", err, FixCommand)
	}
	if got != pinned {
		t.Errorf("%s: vendorHash is stale: it says %s, but go mod vendor now gives %s.\nFix: %s", PinFile, pinned, got, FixCommand)
	}
}
