package find

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vllm-timings/vllm-timings/patcher/codes"
	"github.com/vllm-timings/vllm-timings/patcher/exit"
)

// fakePython is an executable that stands for an interpreter: the finder
// never runs it when the layout is known, and if it is run it says so.
func fakePython(t *testing.T, path string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, path, "#!/bin/sh\necho ran >\"$0.ran\"\n")
	if err := os.Chmod(path, 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

func consoleScript(t *testing.T, path, head string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, path, head+"\nimport sys\nfrom vllm.entrypoints.cli.main import main\nsys.exit(main())\n")
	if err := os.Chmod(path, 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestScriptInterpreter(t *testing.T) {
	dir := t.TempDir()
	py := fakePython(t, filepath.Join(dir, "my venv/bin/python3.12"))
	onPath := fakePython(t, filepath.Join(dir, "pathbin/python3"))
	tests := []struct {
		name, head, want, err string
	}{
		{"absolute", "#!" + filepath.Join(dir, "pathbin/python3"), onPath, ""},
		{"absolute with flags", "#!" + filepath.Join(dir, "pathbin/python3") + " -sE", onPath, ""},
		{"env", "#!/usr/bin/env python3", onPath, ""},
		{"env -S", "#!/usr/bin/env -S python3 -u", onPath, ""},
		{"pip's sh trampoline", "#!/bin/sh\n'''exec' '" + py + "' \"$0\" \"$@\"\n' '''", py, ""},
		{"pip's sh trampoline, double quotes", "#!/bin/sh\n'''exec' \"" + py + "\" \"$0\" \"$@\"\n' '''", py, ""},
		{"missing interpreter", "#!/nonexistent/bin/python3", "", "its interpreter /nonexistent/bin/python3 does not exist"},
		{"env, not on PATH", "#!/usr/bin/env python9", "", `runs "python9" through env, and no python9 on PATH`},
		{"no shebang", "import sys", "", "has no #! line"},
		{"a shell script", "#!/bin/sh\nexec python3 -m vllm", "", "is a shell script, not a Python console script"},
		{"relative", "#!python3", "", `its interpreter "python3" is not an absolute path`},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			script := consoleScript(t, filepath.Join(dir, "scripts", string(rune('a'+i)), "vllm"), tt.head)
			got, err := scriptInterpreter(script, filepath.Join(dir, "pathbin"))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("got %q, %v; want an error containing %q", got, err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestFindThroughTheVLLMProgram(t *testing.T) {
	none := func(string) string { return "" }

	// A venv that is not first on PATH: /app/venv/bin/vllm, found by
	// --vllm-bin; python3 on PATH is another one without vllm.
	app := t.TempDir()
	venvPy := fakePython(t, filepath.Join(app, "venv/bin/python3.12"))
	if err := os.Symlink("python3.12", filepath.Join(app, "venv/bin/python")); err != nil {
		t.Fatal(err)
	}
	pkg := mkpkg(t, filepath.Join(app, "venv/lib/python3.12/site-packages"), "0.33.0")
	mkpkg(t, filepath.Join(app, "venv/lib/python3.11/site-packages"), "0.1.0") // a stale leftover
	bin := consoleScript(t, filepath.Join(app, "venv/bin/vllm"), "#!"+filepath.Join(app, "venv/bin/python"))
	sysBin := filepath.Join(t.TempDir(), "bin")
	fakePython(t, filepath.Join(sysBin, "python3"))

	inst, err := Locate(Options{Bin: bin, BinIs: "--vllm-bin", Getenv: none, Path: sysBin, Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if inst.Dir != pkg || inst.Version != "0.33.0" || !strings.HasPrefix(inst.Via, "--vllm-bin "+bin+", interpreter ") {
		t.Errorf("--vllm-bin: got %+v, want %s", inst, pkg)
	}
	if _, err := os.Stat(venvPy + ".ran"); err == nil {
		t.Error("the finder ran the interpreter although the layout is known")
	}

	// The same venv's bin on PATH, after the system's: vllm is found on
	// PATH although python3 is the system one.
	inst, err = Locate(Options{Getenv: none, Path: sysBin + ":" + filepath.Join(app, "venv/bin"), Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if inst.Dir != pkg || !strings.HasPrefix(inst.Via, "vllm on PATH: "+bin) {
		t.Errorf("PATH: got %+v, want %s", inst, pkg)
	}

	// A conda prefix: /opt/conda/bin/vllm with the shebang conda writes.
	conda := t.TempDir()
	fakePython(t, filepath.Join(conda, "bin/python3.11"))
	cpkg := mkpkg(t, filepath.Join(conda, "lib/python3.11/site-packages"), "0.30.0")
	consoleScript(t, filepath.Join(conda, "bin/vllm"), "#!"+filepath.Join(conda, "bin/python3.11"))
	inst, err = Locate(Options{Getenv: none, Path: filepath.Join(conda, "bin"), Root: t.TempDir(), Python: "-"})
	if err != nil || inst.Dir != cpkg {
		t.Errorf("conda prefix: got %+v, %v; want %s", inst, err, cpkg)
	}

	// /opt/conda without vllm on PATH: a well-known path.
	root := t.TempDir()
	opkg := mkpkg(t, filepath.Join(root, "opt/conda/lib/python3.12/site-packages"), "0.31.0")
	inst, err = Locate(Options{Getenv: none, Root: root, Python: "-"})
	if err != nil || inst.Dir != opkg || inst.Via != filepath.Join(root, "opt/conda/lib/python3*/site-packages") {
		t.Errorf("/opt/conda: got %+v, %v; want %s", inst, err, opkg)
	}
	epkg := mkpkg(t, filepath.Join(t.TempDir(), "opt/conda/envs/serve/lib/python3.12/site-packages"), "0.31.0")
	envRoot := strings.TrimSuffix(epkg, "/opt/conda/envs/serve/lib/python3.12/site-packages/vllm")
	inst, err = Locate(Options{Getenv: none, Root: envRoot, Python: "-"})
	if err != nil || inst.Dir != epkg {
		t.Errorf("/opt/conda/envs: got %+v, %v; want %s", inst, err, epkg)
	}
	inst, err = Locate(Options{Getenv: func(k string) string {
		if k == "CONDA_PREFIX" {
			return conda
		}
		return ""
	}, Root: t.TempDir(), Python: "-"})
	if err != nil || inst.Dir != cpkg || inst.Via != filepath.Join(conda, "lib/python3*/site-packages") {
		t.Errorf("$CONDA_PREFIX: got %+v, %v; want %s", inst, err, cpkg)
	}
}

func TestFindVLLMProgramFailures(t *testing.T) {
	none := func(string) string { return "" }
	dir := t.TempDir()
	broken := consoleScript(t, filepath.Join(dir, "broken/vllm"), "#!/gone/venv/bin/python")
	emptyPy := fakePython(t, filepath.Join(dir, "empty/bin/python3"))
	empty := consoleScript(t, filepath.Join(dir, "empty/bin/vllm"), "#!"+emptyPy)

	var pe *exit.Error
	for _, tt := range []struct{ bin, want string }{
		{broken, "its interpreter /gone/venv/bin/python does not exist"},
		{empty, "its interpreter " + emptyPy + " has no vllm package (looked in " + filepath.Join(dir, "empty/lib/python3*/site-packages")},
		{filepath.Join(dir, "nope/vllm"), "is not an executable file"},
		{"vllm", "no vllm on PATH"},
	} {
		_, err := Locate(Options{Bin: tt.bin, Getenv: none, Path: filepath.Join(dir, "nothing"), Root: t.TempDir()})
		if !errors.As(err, &pe) || pe.Code != codes.VLLMBin || !strings.Contains(pe.Msg, tt.want) {
			t.Errorf("--vllm-bin %s: %v; want exit %d and %q", tt.bin, err, codes.VLLMBin, tt.want)
		}
	}

	// Without --vllm-bin, a broken vllm on PATH is one of the places tried,
	// and the search goes on: a well-known path still wins.
	root := t.TempDir()
	pkg := mkpkg(t, filepath.Join(root, "usr/local/lib/python3.12/dist-packages"), "0.33.0")
	inst, err := Locate(Options{Getenv: none, Path: filepath.Join(dir, "broken"), Root: root, Python: "-"})
	if err != nil || inst.Dir != pkg {
		t.Fatalf("got %+v, %v; want %s", inst, err, pkg)
	}

	// Nothing anywhere: the message lists every method, the broken
	// shebang and which python3 was asked.
	pyBin := filepath.Join(dir, "pybin")
	fakePython(t, filepath.Join(pyBin, "python3"))
	_, err = Locate(Options{Getenv: none, Path: filepath.Join(dir, "broken") + ":" + pyBin, Root: t.TempDir()})
	if !errors.As(err, &pe) || pe.Code != codes.NotFound {
		t.Fatalf("got %v, want not found", err)
	}
	for _, want := range []string{
		"the vllm program on PATH, " + broken + ": its interpreter /gone/venv/bin/python does not exist",
		"/opt/venv/lib/python3*/site-packages",
		"/opt/conda/lib/python3*/site-packages",
		"/usr/local/lib/python3*/dist-packages",
		"python3 (" + filepath.Join(pyBin, "python3") + `) -c 'importlib.util.find_spec("vllm")': no vllm`,
	} {
		if !strings.Contains(pe.Msg, want) {
			t.Errorf("message lacks %q:\n%s", want, pe.Msg)
		}
	}
	// What to do is the command's to word with its flags (the hint
	// says it without them).
	if pe.Advice != codes.AdviceFindVLLM || !strings.Contains(pe.Hint, "VLLM_DIR") {
		t.Errorf("advice %q, hint %q; want %q and a hint naming VLLM_DIR", pe.Advice, pe.Hint, codes.AdviceFindVLLM)
	}
}

func TestPythonVersion(t *testing.T) {
	dir := t.TempDir()
	fakePython(t, filepath.Join(dir, "usr/bin/python3.12"))
	venv := filepath.Join(dir, "venv")
	if err := os.MkdirAll(filepath.Join(venv, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "usr/bin/python3.12"), filepath.Join(venv, "bin/python")); err != nil {
		t.Fatal(err)
	}
	fakePython(t, filepath.Join(dir, "uv/bin/python"))
	writeFile(t, filepath.Join(dir, "uv/pyvenv.cfg"), "home = /x/bin\nversion_info = 3.11.7\n")
	for in, want := range map[string]string{
		filepath.Join(dir, "usr/bin/python3.12"): "3.12",
		filepath.Join(venv, "bin/python"):        "3.12",
		filepath.Join(dir, "uv/bin/python"):      "3.11",
		filepath.Join(dir, "nothing/python"):     "",
	} {
		if got := pythonVersion(in); got != want {
			t.Errorf("pythonVersion(%s) = %q, want %q", in, got, want)
		}
	}
}

func TestFirstShellWord(t *testing.T) {
	for in, want := range map[string]string{
		`'/a b/python' "$0" "$@"`:       "/a b/python",
		`"/a b/py\"thon" "$0"`:          `/a b/py"thon`,
		`/plain/python "$0"`:            "/plain/python",
		`/x/'y z'/python`:               "/x/y z/python",
		`"/a\\b" x`:                     `/a\b`,
		`/with\ space/python "$0" "$@"`: "/with space/python",
		"  '/lead'\n":                   "/lead",
	} {
		if got, ok := firstShellWord(in); !ok || got != want {
			t.Errorf("firstShellWord(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
	for _, in := range []string{"", "   ", `'unterminated`, `"unterminated`} {
		if got, ok := firstShellWord(in); ok {
			t.Errorf("firstShellWord(%q) = %q, want not ok", in, got)
		}
	}
}
