package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

func main() {
	write := flag.Bool("w", false, "write the hash into "+PinFile)
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
	hash, err := Compute(context.Background(), root)
	if err != nil {
		return err
	}
	fmt.Println(hash)
	if write {
		return WritePinned(filepath.Join(root, PinFile), hash)
	}
	return nil
}
