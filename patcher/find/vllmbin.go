package find

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/vllm-timings/vllm-timings/patcher/codes"
	"github.com/vllm-timings/vllm-timings/patcher/exit"
)

// This file finds vLLM the way the server will run it: from the vllm
// console script (--vllm-bin, or the one on PATH) to the interpreter its
// shebang names, and from that interpreter to its site-packages. Nothing
// is imported and, as long as the interpreter's layout is a known one, no
// Python is started.

// lookPath is exec.LookPath on a given PATH value, so tests and callers
// can say which PATH the server will run with.
func lookPath(name, path string) (string, error) {
	if strings.Contains(name, "/") {
		if isExecutable(name) {
			return name, nil
		}
		return "", fmt.Errorf("%s is not an executable file", name)
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, name)
		if isExecutable(p) {
			return p, nil
		}
	}
	return "", fmt.Errorf("no %s on PATH", name)
}

func isExecutable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0
}

// scriptInterpreter reads the interpreter a console script runs with. It
// understands the three forms installers write:
//
//	#!/opt/venv/bin/python3                      (pip, uv, conda)
//	#!/usr/bin/env python3                       (hand-written, some images)
//	#!/bin/sh
//	'''exec' '/a long/path/bin/python' "$0" "$@"  (pip, for paths with spaces or over 127 bytes)
//	' '''
//
// env's interpreter is looked up on path, as env would.
func scriptInterpreter(script, path string) (string, error) {
	f, err := os.Open(script)
	if err != nil {
		return "", err
	}
	defer f.Close()
	r := bufio.NewReader(f)
	first, _ := r.ReadString('\n')
	if !strings.HasPrefix(first, "#!") {
		if strings.HasPrefix(first, "\x7fELF") {
			return "", notConsoleScript(fmt.Sprintf("%s is a compiled program, not a Python console script", script))
		}
		return "", notConsoleScript(fmt.Sprintf("%s has no #! line naming its interpreter", script))
	}
	words := strings.Fields(strings.TrimPrefix(strings.TrimSpace(first), "#!"))
	if len(words) == 0 {
		return "", fmt.Errorf("%s: its #! line is empty", script)
	}
	interp := words[0]
	switch filepath.Base(interp) {
	case "env":
		rest := words[1:]
		for len(rest) > 0 && strings.HasPrefix(rest[0], "-") {
			rest = rest[1:] // env -S, -i, ...
		}
		if len(rest) == 0 {
			return "", fmt.Errorf("%s: %q names no program after env", script, strings.TrimSpace(first))
		}
		p, err := lookPath(rest[0], path)
		if err != nil {
			return "", fmt.Errorf("%s: its #! line runs %q through env, and %v", script, rest[0], err)
		}
		return p, nil
	case "sh", "bash", "dash":
		second, _ := r.ReadString('\n')
		if !strings.HasPrefix(second, "'''exec' ") {
			return "", notConsoleScript(fmt.Sprintf("%s is a shell script, not a Python console script", script))
		}
		word, ok := firstShellWord(strings.TrimPrefix(second, "'''exec' "))
		if !ok {
			return "", fmt.Errorf("%s: cannot read the interpreter from its line %q", script, strings.TrimSpace(second))
		}
		interp = word
	}
	if !filepath.IsAbs(interp) {
		return "", fmt.Errorf("%s: its interpreter %q is not an absolute path", script, interp)
	}
	if !isExecutable(interp) {
		return "", fmt.Errorf("%s: its interpreter %s does not exist or is not executable", script, interp)
	}
	return interp, nil
}

// notConsoleScript is the error for a program that is not a Python
// console script at all (a shell wrapper, a compiled program), as opposed
// to one whose interpreter is missing.
type notConsoleScript string

func (e notConsoleScript) Error() string { return string(e) }

// IsNotConsoleScript reports whether err says a program is not a Python
// console script (a shell wrapper, a compiled program, no #! line): its
// interpreter cannot be read from it, and vLLM is better looked for
// elsewhere.
func IsNotConsoleScript(err error) bool {
	var e notConsoleScript
	return errors.As(err, &e)
}

// ScriptInterpreter is the Python interpreter a console script runs
// (its #! line, env's lookup on path, or pip's sh-exec form), for a
// check that must run the same Python as the script.
func ScriptInterpreter(script, path string) (string, error) { return scriptInterpreter(script, path) }

// firstShellWord reads the first word of a shell line as sh would, for
// the quoting installers write: bare characters, '...', and "..." with
// backslash escapes. ok is false for an empty or unterminated word.
func firstShellWord(line string) (word string, ok bool) {
	line = strings.TrimLeft(line, " \t")
	var b strings.Builder
	for i := 0; i < len(line); i++ {
		switch c := line[i]; c {
		case ' ', '\t', '\n':
			return b.String(), b.Len() > 0
		case '\'':
			j := strings.IndexByte(line[i+1:], '\'')
			if j < 0 {
				return "", false
			}
			b.WriteString(line[i+1 : i+1+j])
			i += j + 1
		case '"':
			i++
			for ; i < len(line) && line[i] != '"'; i++ {
				if line[i] == '\\' && i+1 < len(line) && strings.IndexByte("$`\"\\", line[i+1]) >= 0 {
					i++
				}
				b.WriteByte(line[i])
			}
			if i >= len(line) {
				return "", false
			}
		case '\\':
			if i+1 < len(line) {
				i++
				b.WriteByte(line[i])
			}
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), b.Len() > 0
}

var pythonVersionRE = regexp.MustCompile(`^python(3\.\d+)$`)

// pythonVersion guesses X.Y from the interpreter's name, following
// symlinks (a venv's bin/python links to python3.12), or from the venv's
// pyvenv.cfg; "" when neither says.
func pythonVersion(interp string) string {
	p := interp
	for i := 0; i < 8; i++ {
		if m := pythonVersionRE.FindStringSubmatch(filepath.Base(p)); m != nil {
			return m[1]
		}
		t, err := os.Readlink(p)
		if err != nil {
			break
		}
		if !filepath.IsAbs(t) {
			t = filepath.Join(filepath.Dir(p), t)
		}
		p = t
	}
	cfg, err := os.ReadFile(filepath.Join(filepath.Dir(filepath.Dir(interp)), "pyvenv.cfg"))
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(cfg), "\n") {
		k, v, ok := strings.Cut(line, "=")
		if ok && (strings.TrimSpace(k) == "version" || strings.TrimSpace(k) == "version_info") {
			parts := strings.Split(strings.TrimSpace(v), ".")
			if len(parts) >= 2 {
				return parts[0] + "." + parts[1]
			}
		}
	}
	return ""
}

// interpreterSitePatterns are where an interpreter's packages live, from
// its prefix (the directory above bin/): a venv or conda prefix, or a
// system Python with Debian's dist-packages and /usr/local.
func interpreterSitePatterns(interp string) []string {
	prefix := filepath.Dir(filepath.Dir(interp))
	v := pythonVersion(interp)
	ver := "python3*"
	if v != "" {
		ver = "python" + v
	}
	pats := []string{
		filepath.Join(prefix, "lib", ver, "site-packages"),
		filepath.Join(prefix, "lib64", ver, "site-packages"),
		filepath.Join(prefix, "local/lib", ver, "dist-packages"),
		filepath.Join(prefix, "lib", ver, "dist-packages"),
		filepath.Join(prefix, "lib/python3/dist-packages"),
	}
	if prefix == "/usr" {
		// Debian's python3 also reads /usr/local/lib/python3.X/dist-packages,
		// where pip installs as root.
		pats = append(pats, filepath.Join("/usr/local/lib", ver, "dist-packages"))
	}
	return pats
}

// globPackage returns the vllm package below the first directory matching
// pattern that holds one, newest Python first.
func globPackage(pattern string) string {
	dirs, _ := filepath.Glob(pattern)
	sort.Sort(sort.Reverse(sort.StringSlice(dirs)))
	for _, d := range dirs {
		if isPackage(filepath.Join(d, "vllm")) {
			return filepath.Join(d, "vllm")
		}
	}
	return ""
}

// viaScript follows a vllm console script to its package. It returns the
// package directory and how it was found, or "" and every place it looked
// (for the not-found message). runPython asks an interpreter with
// importlib.util.find_spec; it is used only when no known layout holds
// vllm.
func viaScript(script, path, what string, runPython func(string) string) (dir, via string, tried []string, err error) {
	interp, err := scriptInterpreter(script, path)
	if err != nil {
		return "", "", nil, err
	}
	via = fmt.Sprintf("%s %s, interpreter %s", what, script, interp)
	for _, p := range interpreterSitePatterns(interp) {
		tried = append(tried, p)
		if d := globPackage(p); d != "" {
			return d, via, tried, nil
		}
	}
	ask := interp + ` -c 'importlib.util.find_spec("vllm")'`
	tried = append(tried, ask)
	if d := runPython(interp); d != "" {
		return d, via + ", " + ask, tried, nil
	}
	return "", "", tried, fmt.Errorf("%s: its interpreter %s has no vllm package (looked in %s)", script, interp, strings.Join(tried, ", "))
}

// findViaBin resolves --vllm-bin (or exec's COMMAND named vllm; what says
// which): an explicit program that must lead to vLLM, or the whole run
// fails with codes.VLLMBin.
func findViaBin(bin, what, path string, runPython func(string) string) (*Install, error) {
	p, err := lookPath(bin, path)
	if err != nil {
		return nil, &exit.Error{
			Code: codes.VLLMBin, Msg: fmt.Sprintf("%s %s: %v", what, bin, err),
			Hint:   "Name the vllm program the server runs (for example /opt/venv/bin/vllm), or the vllm package directory.",
			Advice: codes.AdviceVLLMBin,
		}
	}
	dir, via, _, err := viaScript(p, path, what, runPython)
	if err != nil {
		return nil, &exit.Error{
			Code: codes.VLLMBin, Msg: fmt.Sprintf("%s: %v", what, err),
			Hint:   "Name the vllm console script the server runs, or the vllm package directory.",
			Advice: codes.AdviceVLLMScript,
		}
	}
	return fromDir(dir, via)
}

// pathHint shortens $PATH for a message.
func pathHint(path string) string {
	if path == "" {
		return "PATH is empty"
	}
	return "PATH=" + path
}
