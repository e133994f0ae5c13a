// Command vendor-hash prints the vendorHash of this Go module as nixpkgs'
// buildGoModule computes it. With -w it also writes it into modules/package.nix.
// Run it from anywhere inside the module: scripts/vendor-hash [-w].
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/vllm-timings/vllm-timings/modules/vendorhash"
)

func main() {
	write := flag.Bool("w", false, "write the hash into "+vendorhash.PinFile)
	flag.Parse()
	if err := run(*write); err != nil {
		fmt.Fprintln(os.Stderr, "vendor-hash:", err)
		os.Exit(1)
	}
}

func run(write bool) error {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return fmt.Errorf("go env GOMOD: %v", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return fmt.Errorf("not inside a Go module")
	}
	root := filepath.Dir(gomod)
	hash, err := vendorhash.Compute(context.Background(), root)
	if err != nil {
		return err
	}
	fmt.Println(hash)
	if write {
		return vendorhash.WritePinned(filepath.Join(root, vendorhash.PinFile), hash)
	}
	return nil
}
