package vendorhash

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
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
// byte what `nix-store --dump path` writes. The format is a sequence of
// strings, each a little-endian uint64 length, the bytes, and zero padding to
// a multiple of 8:
//
//	"nix-archive-1" node
//	node      = "(" "type" ( regular | symlink | directory ) ")"
//	regular   = "regular" [ "executable" "" ] "contents" <bytes>
//	symlink   = "symlink" "target" <target>
//	directory = "directory" { "entry" "(" "name" <name> "node" node ")" }
//
// Directory entries are sorted by name, byte-wise. A regular file is
// executable when its owner-execute bit is set; no other metadata is kept.
func WriteNAR(w io.Writer, path string) error {
	nw := &narWriter{w: w}
	nw.str("nix-archive-1")
	nw.node(path)
	return nw.err
}

type narWriter struct {
	w   io.Writer
	err error
}

func (n *narWriter) write(b []byte) {
	if n.err == nil {
		_, n.err = n.w.Write(b)
	}
}

func (n *narWriter) str(s string) { n.bytes([]byte(s)) }

func (n *narWriter) bytes(b []byte) {
	var l [8]byte
	binary.LittleEndian.PutUint64(l[:], uint64(len(b)))
	n.write(l[:])
	n.write(b)
	if pad := (8 - len(b)%8) % 8; pad > 0 {
		n.write(make([]byte, pad))
	}
}

func (n *narWriter) fail(err error) {
	if n.err == nil {
		n.err = err
	}
}

func (n *narWriter) node(path string) {
	if n.err != nil {
		return
	}
	fi, err := os.Lstat(path)
	if err != nil {
		n.fail(err)
		return
	}
	n.str("(")
	n.str("type")
	switch mode := fi.Mode(); {
	case mode.IsRegular():
		n.str("regular")
		if mode&0o100 != 0 {
			n.str("executable")
			n.str("")
		}
		n.str("contents")
		data, err := os.ReadFile(path)
		if err != nil {
			n.fail(err)
			return
		}
		n.bytes(data)
	case mode&fs.ModeSymlink != 0:
		target, err := os.Readlink(path)
		if err != nil {
			n.fail(err)
			return
		}
		n.str("symlink")
		n.str("target")
		n.str(target)
	case mode.IsDir():
		n.str("directory")
		entries, err := os.ReadDir(path)
		if err != nil {
			n.fail(err)
			return
		}
		names := make([]string, len(entries))
		for i, e := range entries {
			names[i] = e.Name()
		}
		sort.Strings(names) // byte-wise, as Nix orders entries
		for _, name := range names {
			n.str("entry")
			n.str("(")
			n.str("name")
			n.str(name)
			n.str("node")
			n.node(filepath.Join(path, name))
			n.str(")")
		}
	default:
		n.fail(fmt.Errorf("%s: a NAR holds only regular files, symlinks and directories, not %v", path, mode.Type()))
		return
	}
	n.str(")")
}
