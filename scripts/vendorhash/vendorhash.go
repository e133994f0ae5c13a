package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

// PinFile is where the pinned vendorHash lives, relative to the module root.
const PinFile = "modules/package.nix"

// FixCommand is the one command that brings PinFile up to date.
const FixCommand = "scripts/vendor-hash -w"

// Compute returns the vendorHash of the Go module rooted at moduleRoot, as
// buildGoModule's goModules derivation would produce it: `go mod vendor`,
// then the NAR hash of the vendor directory.
//
// It runs the go command on PATH with GOFLAGS cleared of -mod (as in the
// goModules build), GOTOOLCHAIN=local and GOWORK=off. Modules missing from
// the module cache are downloaded from GOPROXY.
func Compute(ctx context.Context, moduleRoot string) (string, error) {
	if fi, err := os.Stat(filepath.Join(moduleRoot, "vendor")); err == nil && fi.IsDir() {
		return "", fmt.Errorf("%s/vendor exists; buildGoModule refuses a source tree with a vendor directory when vendorHash is set, so remove it", moduleRoot)
	}
	tmp, err := os.MkdirTemp("", "vendorhash-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	out := filepath.Join(tmp, "vendor")

	cmd := exec.CommandContext(ctx, "go", "mod", "vendor", "-o", out)
	cmd.Dir = moduleRoot
	cmd.Env = append(os.Environ(), "GOFLAGS="+withoutModFlag(os.Getenv("GOFLAGS")), "GOTOOLCHAIN=local", "GOWORK=off", "GO111MODULE=on")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go mod vendor (needs the module cache or GOPROXY): %v\n%s", err, stderr.String())
	}
	// goModules runs `mkdir -p vendor` after `go mod vendor`, then refuses an
	// empty result ("please set vendorHash = null").
	entries, err := os.ReadDir(out)
	if errors.Is(err, os.ErrNotExist) || (err == nil && len(entries) == 0) {
		return "", errors.New("the module has no dependencies to vendor; buildGoModule wants vendorHash = null")
	}
	if err != nil {
		return "", err
	}
	return NARHash(out)
}

func withoutModFlag(goflags string) string {
	var kept []string
	for _, f := range strings.Fields(goflags) {
		if !strings.HasPrefix(f, "-mod=") {
			kept = append(kept, f)
		}
	}
	return strings.Join(kept, " ")
}

// pinRE matches the one vendorHash assignment in PinFile.
var pinRE = regexp.MustCompile(`(?m)^(\s*vendorHash\s*=\s*")([^"]*)(";)`)

// ReadPinned returns the vendorHash written in the Nix file at path.
func ReadPinned(path string) (string, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	m := pinRE.FindAllSubmatch(src, -1)
	if len(m) != 1 {
		return "", fmt.Errorf("%s: want exactly one line `vendorHash = \"...\";`, found %d", path, len(m))
	}
	return string(m[0][2]), nil
}

// WritePinned replaces the vendorHash in the Nix file at path with hash.
func WritePinned(path, hash string) error {
	if _, err := ReadPinned(path); err != nil {
		return err
	}
	src, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	out := pinRE.ReplaceAll(src, []byte("${1}"+hash+"${3}"))
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	return os.WriteFile(path, out, fi.Mode().Perm())
}
