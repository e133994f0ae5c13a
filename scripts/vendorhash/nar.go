package main

import (
	"crypto/sha256"
	"encoding/base64"
	"io"

	"github.com/nix-community/go-nix/pkg/nar"
)

// NARHash returns the SRI SHA-256 hash ("sha256-<base64>") of the NAR
// serialisation of path, the value `nix hash path --sri` prints and the
// value a recursive fixed-output derivation is checked against.
func NARHash(path string) (string, error) {
	h := sha256.New()
	if err := WriteNAR(h, path); err != nil {
		return "", err
	}
	return "sha256-" + base64.StdEncoding.EncodeToString(h.Sum(nil)), nil
}

// WriteNAR writes the NAR (Nix ARchive) serialisation of path to w, byte for
// byte what `nix-store --dump path` writes: go-nix's nar.DumpPath. Directory
// entries are sorted by name, byte-wise; a regular file is executable when
// its owner-execute bit is set; no other metadata is kept. A path holding
// anything but regular files, symlinks and directories is an error.
func WriteNAR(w io.Writer, path string) error {
	return nar.DumpPath(w, path)
}
