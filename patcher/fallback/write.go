package fallback

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Source is the embedded module's text.
//
//go:embed vllm_timings_fallback.py
var Source []byte

// The entry point's distribution: a dist-info directory is all
// importlib.metadata needs to find an entry point on sys.path.
const (
	distInfo = "vllm_timings_fallback-0.dist-info"
	metadata = "Metadata-Version: 2.1\nName: vllm-timings-fallback\nVersion: 0\n" +
		"Summary: vllm-timings' stat logger plugin, registered without pip (see vllm_timings_fallback.py)\n"
	entryPoints = "[vllm.stat_logger_plugins]\nvllm_timings = " + StatLoggerEntryPoint + "\n"
)

// Layout is where the fallback lives under a base directory: the module in
// one directory and the entry point in another, so that putting the second
// on PYTHONPATH or not decides whether vLLM loads the stat logger, and
// servers with engine stats on and off can share one base.
type Layout struct{ Base string }

// ModuleDir holds vllm_timings_fallback.py.
func (l Layout) ModuleDir() string { return filepath.Join(l.Base, "module") }

// PluginDir holds the dist-info that registers the stat logger.
func (l Layout) PluginDir() string { return filepath.Join(l.Base, "stat-logger") }

// PythonPath is what goes first on PYTHONPATH, in order.
func (l Layout) PythonPath(statLogger bool) []string {
	if statLogger {
		return []string{l.ModuleDir(), l.PluginDir()}
	}
	return []string{l.ModuleDir()}
}

// files are the files of a Layout, relative to its base, with their text.
func files() []struct{ rel, text string } {
	return []struct{ rel, text string }{
		{filepath.Join("module", Module+".py"), string(Source)},
		{filepath.Join("stat-logger", distInfo, "METADATA"), metadata},
		{filepath.Join("stat-logger", distInfo, "entry_points.txt"), entryPoints},
	}
}

// Digest names this binary's module: bases are per content, so a new
// version never rewrites a module a running server imported.
func Digest() string {
	h := sha256.New()
	for _, f := range files() {
		fmt.Fprintf(h, "%s\x00%d\x00%s", f.rel, len(f.text), f.text)
	}
	return hex.EncodeToString(h.Sum(nil))[:12]
}

// Write puts the Layout's files under base, creating what is missing: each
// file is written to a temporary name and renamed, so a server never reads
// half a file, and a file that already holds the right text is left alone.
func Write(base string) (Layout, error) {
	l := Layout{Base: base}
	for _, f := range files() {
		path := filepath.Join(base, f.rel)
		if have, err := os.ReadFile(path); err == nil && bytes.Equal(have, []byte(f.text)) {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return l, err
		}
		tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
		if err != nil {
			return l, err
		}
		_, err = tmp.WriteString(f.text)
		if cerr := tmp.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Chmod(tmp.Name(), 0o644)
		}
		if err == nil {
			err = os.Rename(tmp.Name(), path)
		}
		if err != nil {
			_ = os.Remove(tmp.Name())
			return l, err
		}
	}
	return l, nil
}

// PrivateBase is a base directory for this user and this module: under
// $XDG_RUNTIME_DIR when it is set, else under the temporary directory, in a
// directory of its own that only this user can write (a directory on
// PYTHONPATH that others could write to would run their code). It is
// created if need be; one that exists must be a real directory owned by
// this user and writable by no one else.
func PrivateBase(getenv func(string) string) (string, error) {
	uid := os.Geteuid()
	parent := filepath.Join(os.TempDir(), fmt.Sprintf("vllm-timings-%d", uid))
	if run := getenv("XDG_RUNTIME_DIR"); run != "" && filepath.IsAbs(run) {
		parent = filepath.Join(run, "vllm-timings")
	}
	if err := os.Mkdir(parent, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", err
	}
	st, err := os.Lstat(parent)
	if err != nil {
		return "", err
	}
	if !st.IsDir() {
		return "", fmt.Errorf("%s is not a directory", parent)
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok && int(sys.Uid) != uid {
		return "", fmt.Errorf("%s belongs to another user", parent)
	}
	if st.Mode().Perm()&0o022 != 0 {
		return "", fmt.Errorf("%s is writable by others", parent)
	}
	return filepath.Join(parent, "fallback-"+Digest()), nil
}

// PrependPythonPath puts dirs first on env's PYTHONPATH, keeping what was
// there after them.
func PrependPythonPath(env []string, dirs ...string) []string {
	out := make([]string, 0, len(env)+1)
	val := strings.Join(dirs, string(filepath.ListSeparator))
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PYTHONPATH="); ok {
			if v != "" {
				val += string(filepath.ListSeparator) + v
			}
			continue
		}
		out = append(out, kv)
	}
	return append(out, "PYTHONPATH="+val)
}
