package find

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/vllm-timings/vllm-timings/patcher/codes"
	"github.com/vllm-timings/vllm-timings/patcher/exit"
)

// Install is a vLLM package found on disk.
type Install struct {
	Dir     string // the vllm package directory
	Root    string // its parent (site-packages); target paths are relative to it
	Version string // from vllm/_version.py, or "unknown"
	Via     string // how it was found, for the user
}

// Options say where to look for vLLM. The zero value searches the
// running system.
type Options struct {
	Dir    string              // the vllm package directory (or site-packages above it); empty means search
	DirIs  string              // what Dir is, for messages: the caller's name for it; "the vllm directory" by default
	Getenv func(string) string // defaults to os.Getenv
	Root   string              // filesystem root for the well-known paths; "/" by default
	Python string              // interpreter for the last resort; "python3" by default, "-" disables it
	Bin    string              // the vllm program the server runs; empty means look on PATH
	BinIs  string              // what Bin is, for messages: the caller's name for it; "the vllm program" by default
	Path   string              // the PATH the server runs with; $PATH by default
}

// wellKnown are globbed in order below Root; $VIRTUAL_ENV comes first.
var wellKnown = []string{
	"opt/venv/lib/python3*/site-packages",
	"opt/conda/lib/python3*/site-packages",
	"opt/conda/envs/*/lib/python3*/site-packages",
	"usr/local/lib/python3*/dist-packages",
	"usr/local/lib/python3*/site-packages",
	"usr/lib/python3*/dist-packages",
	"usr/lib/python3*/site-packages",
	"usr/lib64/python3*/site-packages",
}

// Locate finds the vLLM package without importing it, the way the server
// will run it: the --vllm-dir flag, then $VLLM_DIR, then --vllm-bin or the
// vllm program on PATH (its shebang's interpreter's site-packages), then
// $VIRTUAL_ENV, $CONDA_PREFIX and well-known install paths (Docker images,
// /opt/venv, conda), and last python3's importlib.util.find_spec("vllm"),
// which finds the package without running it. When nothing is found, the
// error lists every place and method tried.
func Locate(o Options) (*Install, error) {
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	if o.Dir != "" {
		what := o.DirIs
		if what == "" {
			what = "the vllm directory"
		}
		return fromDir(o.Dir, what)
	}
	if d := getenv("VLLM_DIR"); d != "" {
		return fromDir(d, "$VLLM_DIR")
	}
	path := o.Path
	if path == "" {
		path = getenv("PATH")
	}
	if o.Bin != "" {
		what := o.BinIs
		if what == "" {
			what = "the vllm program"
		}
		return findViaBin(o.Bin, what, path, findSpec)
	}
	var tried []string
	if script, err := lookPath("vllm", path); err != nil {
		tried = append(tried, "the vllm program on PATH: none ("+pathHint(path)+")")
	} else {
		dir, via, where, err := viaScript(script, path, "vllm on PATH:", findSpec)
		if err == nil {
			return fromDir(dir, via)
		}
		if where == nil {
			tried = append(tried, "the vllm program on PATH, "+err.Error())
		} else {
			tried = append(tried, "the vllm program on PATH ("+script+"), through its interpreter: "+strings.Join(where, ", "))
		}
	}
	root := o.Root
	if root == "" {
		root = "/"
	}
	var patterns []string
	for _, env := range []string{"VIRTUAL_ENV", "CONDA_PREFIX"} {
		if venv := getenv(env); venv != "" {
			patterns = append(patterns, filepath.Join(venv, "lib/python3*/site-packages"))
		}
	}
	for _, p := range wellKnown {
		patterns = append(patterns, filepath.Join(root, p))
	}
	for _, p := range patterns {
		tried = append(tried, p)
		if d := globPackage(p); d != "" {
			return fromDir(d, p)
		}
	}
	py := o.Python
	if py == "" {
		py = "python3"
	}
	if py != "-" {
		ask := ` -c 'importlib.util.find_spec("vllm")'`
		if abs, err := lookPath(py, path); err != nil {
			tried = append(tried, py+ask+": no "+py+" on PATH ("+pathHint(path)+")")
		} else if d := findSpec(abs); d != "" {
			return fromDir(d, py+" ("+abs+")"+ask)
		} else {
			tried = append(tried, py+" ("+abs+")"+ask+": no vllm")
		}
	}
	return nil, &exit.Error{
		Code: codes.NotFound,
		Msg:  "vLLM not found. Looked in:\n  " + strings.Join(tried, "\n  ") + "\n",
		Hint: "Name the vllm program the server runs (for example /opt/venv/bin/vllm) or the vllm package directory " +
			"(or the site-packages directory that holds it), or set VLLM_DIR.",
		Advice: codes.AdviceFindVLLM,
	}
}

func isPackage(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "__init__.py"))
	return err == nil
}

// fromDir accepts the vllm package directory itself or a directory that
// holds it.
func fromDir(dir, via string) (*Install, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, &exit.Error{Code: codes.NotFound, Pos: via + " " + dir, Msg: err.Error(), Err: err}
	}
	if st, err := os.Stat(abs); err != nil || !st.IsDir() {
		msg := "no such directory"
		switch {
		case err == nil && st.Mode().IsRegular():
			msg = "is a file, not a directory"
		case err == nil:
			msg = "is " + DescribeMode(st.Mode()) + ", not a directory"
		case !errors.Is(err, fs.ErrNotExist):
			msg = err.Error()
		}
		return nil, &exit.Error{
			Code: codes.NotFound,
			Pos:  via + " " + dir,
			Msg:  msg,
			Hint: "Pass the vllm package directory (it holds __init__.py and entrypoints/) or the site-packages directory above it.",
			Err:  err,
		}
	}
	pkg := abs
	if filepath.Base(abs) != "vllm" || !isPackage(abs) {
		if isPackage(filepath.Join(abs, "vllm")) {
			pkg = filepath.Join(abs, "vllm")
		} else if filepath.Base(abs) != "vllm" {
			return nil, &exit.Error{
				Code: codes.NotFound,
				Pos:  via + " " + dir,
				Msg:  "not a vllm package (no vllm/__init__.py inside, and the directory is not named vllm)",
				Hint: "Pass the vllm package directory or the site-packages directory above it.",
			}
		}
	}
	return &Install{Dir: pkg, Root: filepath.Dir(pkg), Version: readVersion(pkg), Via: via}, nil
}

var versionRE = regexp.MustCompile(`(?m)^(?:__version__\s*=\s*)?(?:version\s*=\s*)?(?:__version__\s*=\s*)?['"]([^'"]+)['"]`)

// readVersion reads the version string that vLLM's build writes into
// vllm/_version.py; source trees have no such file.
func readVersion(pkg string) string {
	b, err := os.ReadFile(filepath.Join(pkg, "_version.py"))
	if err != nil {
		return "unknown"
	}
	for _, line := range strings.Split(string(b), "\n") {
		t := strings.TrimSpace(line)
		if !(strings.HasPrefix(t, "__version__") || strings.HasPrefix(t, "version")) || strings.HasPrefix(t, "version_tuple") || strings.HasPrefix(t, "__version_tuple__") {
			continue
		}
		if m := versionRE.FindStringSubmatch(t); m != nil {
			return m[1]
		}
	}
	return "unknown"
}

// findSpec asks Python where vllm is, without importing it.
func findSpec(python string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, "-c",
		`import importlib.util as u; s = u.find_spec("vllm"); print(s.submodule_search_locations[0] if s and s.submodule_search_locations else "")`)
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		return ""
	}
	return strings.TrimSpace(out.String())
}

// DescribeMode names what a file that is not a regular one is, for
// messages: "a directory", "a FIFO", ...
func DescribeMode(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	default:
		return "mode " + m.String()
	}
}
