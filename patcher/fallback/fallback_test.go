package fallback

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vllm-timings/vllm-timings/patcher/testtree"
)

// TestPythonFallbackModule runs the module's unit tests
// (testdata/test_fallback.py): the middleware driven with recorded shapes
// of vLLM's responses, the stat logger with a stand-in of vLLM's base class.
func TestPythonFallbackModule(t *testing.T) {
	py := testtree.RequireTool(t, "python3")
	cmd := exec.Command(py, "-m", "unittest", "discover", "-v", "-s", "testdata", "-p", "test_*.py")
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1", "VLLM_TIMINGS_FALLBACK="+Module+".py")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("python unit tests failed: %v\n%s", err, out)
	}
	if !bytes.Contains(out, []byte("\nOK")) {
		t.Fatalf("unexpected unittest output:\n%s", out)
	}
}

// TestModuleIsClean: the module compiles and pyflakes finds nothing.
func TestModuleIsClean(t *testing.T) {
	// Debian calls it pyflakes3; pip and nixpkgs, pyflakes.
	name := "pyflakes3"
	if _, err := exec.LookPath(name); err != nil {
		if _, err := exec.LookPath("pyflakes"); err == nil {
			name = "pyflakes"
		}
	}
	pyflakes := testtree.RequireTool(t, name)
	out, err := exec.Command(pyflakes, Module+".py").CombinedOutput()
	if err != nil || len(out) != 0 {
		t.Fatalf("%s %s.py: %v\n%s", name, Module, err, out)
	}
}

func TestDetect(t *testing.T) {
	for _, tc := range []struct {
		tree string
		want Features
	}{
		{"v0.10", Features{Middleware: true, ForceIncludeUsage: true, PromptTokensDetails: true}},
		{"v0.20", Features{Middleware: true, ForceIncludeUsage: true, PromptTokensDetails: true, StatLoggerPlugins: true, FinishedRequestIDs: true}},
		{"late", Features{Middleware: true, ForceIncludeUsage: true, PromptTokensDetails: true, PerRequestMetrics: true, StatLoggerPlugins: true, FinishedRequestIDs: true}},
		{"none", Features{}},
	} {
		got, err := Detect(filepath.Join("testdata", "features", tc.tree, "vllm"))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.tree, diff)
		}
	}
	if _, err := Detect(filepath.Join(t.TempDir(), "vllm")); err == nil {
		t.Error("Detect of a missing directory: no error")
	}
}

var all = Features{Middleware: true, ForceIncludeUsage: true, PromptTokensDetails: true, PerRequestMetrics: true, StatLoggerPlugins: true, FinishedRequestIDs: true}

func TestPlan(t *testing.T) {
	chat := Parts{Chat: true}
	noConfig := func(string) ([]byte, error) { return nil, errors.New("no") }
	yaml := func(text string) func(string) ([]byte, error) {
		return func(string) ([]byte, error) { return []byte(text), nil }
	}
	mw := []string{"--middleware", Middleware}
	for _, tc := range []struct {
		name     string
		f        Features
		argv     []string
		parts    Parts
		mode     Mode
		config   func(string) ([]byte, error)
		args     []string
		stats    bool
		off      string
		disabled bool
	}{
		{
			name: "chat", f: all, argv: []string{"vllm", "serve", "m"}, parts: chat, mode: Auto,
			args: append(mw, "--enable-force-include-usage", "--enable-prompt-tokens-details"), stats: true,
		},
		{name: "nothing needed", f: all, argv: []string{"vllm", "serve", "m"}, mode: Auto, disabled: true},
		{name: "off", f: all, argv: []string{"vllm", "serve", "m"}, parts: chat, mode: Off, disabled: true},
		{
			name: "always", f: all, argv: []string{"vllm", "serve", "m"}, mode: Always,
			args: append(mw, "--enable-force-include-usage", "--enable-prompt-tokens-details"), stats: true,
		},
		{name: "responses only", f: all, argv: []string{"/opt/venv/bin/vllm", "serve", "m"}, parts: Parts{Responses: true}, mode: Auto, args: mw, stats: true},
		{
			name: "messages only", f: all, argv: []string{"vllm", "serve", "m"}, parts: Parts{Messages: true}, mode: Auto,
			args: append(mw, "--enable-prompt-tokens-details"), stats: true,
		},
		{name: "user flags kept", f: all, argv: []string{"vllm", "serve", "m", "--enable_force_include_usage", "--no-enable-prompt-tokens-details=1", "--middleware", Middleware}, parts: chat, mode: Auto, stats: true},
		{
			name: "stats off", f: all, argv: []string{"vllm", "serve", "m", "--disable-log-stats"}, parts: chat, mode: Auto,
			args: append(mw, "--enable-force-include-usage", "--enable-prompt-tokens-details"),
		},
		{
			name: "stats off in config", f: all, argv: []string{"vllm", "serve", "m", "--config", "c.yaml"}, parts: chat, mode: Auto, config: yaml("model: m\ndisable-log-stats: true\n"),
			args: append(mw, "--enable-force-include-usage", "--enable-prompt-tokens-details"),
		},
		{
			name: "config sets a flag", f: all, argv: []string{"vllm", "serve", "--config=c.yaml"}, parts: chat, mode: Auto, config: yaml("enable_prompt_tokens_details: false\n"),
			args: append(mw, "--enable-force-include-usage"), stats: true,
		},
		{name: "unreadable config assumes everything", f: all, argv: []string{"vllm", "serve", "--config", "c.yaml"}, parts: chat, mode: Auto, config: noConfig, args: mw},
		{
			name: "no ids", f: Features{Middleware: true, ForceIncludeUsage: true, StatLoggerPlugins: true}, argv: []string{"vllm", "serve", "m"}, parts: chat, mode: Auto,
			args: append(mw, "--enable-force-include-usage"),
		},
		{
			name: "old vllm", f: Features{Middleware: true, ForceIncludeUsage: true, PromptTokensDetails: true}, argv: []string{"vllm", "serve", "m"}, parts: chat, mode: Auto,
			args: append(mw, "--enable-force-include-usage", "--enable-prompt-tokens-details"),
		},
		{
			name: "python -m", f: all, argv: []string{"/usr/bin/python3", "-u", "-m", "vllm.entrypoints.openai.api_server", "--model", "m"}, parts: chat, mode: Auto,
			args: append(mw, "--enable-force-include-usage", "--enable-prompt-tokens-details"), stats: true,
		},
		{name: "python -m cli serve", f: all, argv: []string{"python3.12", "-m", "vllm.entrypoints.cli.main", "serve", "m"}, parts: Parts{Responses: true}, mode: Auto, args: mw, stats: true},
		{name: "python -I", f: all, argv: []string{"python3", "-I", "-m", "vllm.entrypoints.openai.api_server"}, parts: chat, mode: Auto, off: "not `vllm serve`"},
		{name: "launcher", f: all, argv: []string{"bash", "docker/entrypoint.sh", "single"}, parts: chat, mode: Auto, off: "not `vllm serve`"},
		{name: "vllm bench", f: all, argv: []string{"vllm", "bench", "serve"}, parts: chat, mode: Auto, off: "not `vllm serve`"},
		{name: "no middleware option", f: Features{}, argv: []string{"vllm", "serve", "m"}, parts: chat, mode: Auto, off: "no --middleware"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Plan(tc.f, tc.argv, tc.parts, tc.mode, tc.config)
			switch {
			case tc.off != "":
				var o *OffError
				if !errors.As(err, &o) || !strings.Contains(o.Why, tc.off) {
					t.Fatalf("Plan = %v, %v; want off: %q", s, err, tc.off)
				}
				return
			case tc.disabled:
				if s != nil || err != nil {
					t.Fatalf("Plan = %+v, %v; want nil, nil", s, err)
				}
				return
			case err != nil:
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.args, s.Args); diff != "" {
				t.Errorf("args (-want +got):\n%s", diff)
			}
			if s.StatLogger != tc.stats {
				t.Errorf("StatLogger = %v, want %v", s.StatLogger, tc.stats)
			}
			if s.Sources == "" {
				t.Error("no sources")
			}
		})
	}
}

func TestWriteAndImport(t *testing.T) {
	py := testtree.RequireTool(t, "python3")
	base := filepath.Join(t.TempDir(), "fallback-"+Digest())
	l, err := Write(base)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(l.ModuleDir(), Module+".py"))
	if err != nil || !bytes.Equal(got, Source) {
		t.Fatalf("module not written: %v", err)
	}
	// A second write changes nothing (same inode: no rename happened).
	st1, _ := os.Stat(filepath.Join(l.ModuleDir(), Module+".py"))
	if _, err := Write(base); err != nil {
		t.Fatal(err)
	}
	st2, _ := os.Stat(filepath.Join(l.ModuleDir(), Module+".py"))
	if !os.SameFile(st1, st2) {
		t.Error("second Write rewrote the module")
	}
	env := PrependPythonPath([]string{"PATH=" + os.Getenv("PATH"), "PYTHONPATH=/elsewhere"}, l.PythonPath(true)...)
	if err := Importable(context.Background(), []string{py}, env); err != nil {
		t.Fatal(err)
	}
	if err := Importable(context.Background(), []string{py, "-I"}, env); err == nil || !strings.Contains(err.Error(), "not found on sys.path") {
		t.Fatalf("-I: err = %v, want not found", err)
	}
	if err := Importable(context.Background(), []string{filepath.Join(t.TempDir(), "nopython")}, env); err == nil {
		t.Fatal("a missing interpreter passed")
	}
	// The entry point, as importlib.metadata (what vLLM uses) sees it.
	out, err := exec.Command(py, append([]string{"-c", `import sys
sys.path[:0] = sys.argv[1:]
from importlib.metadata import entry_points
eps = entry_points(group="vllm.stat_logger_plugins")
print([(e.name, e.value) for e in eps])`}, l.PythonPath(true)...)...).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "[('vllm_timings', '"+StatLoggerEntryPoint+"')]" {
		t.Fatalf("entry points: %v\n%s", err, out)
	}
	out, err = exec.Command(py, append([]string{"-c", `import sys
sys.path[:0] = sys.argv[1:]
from importlib.metadata import entry_points
print(len(entry_points(group="vllm.stat_logger_plugins")))`}, l.PythonPath(false)...)...).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "0" {
		t.Fatalf("without the plugin dir: %v\n%s", err, out)
	}
}

func TestWriteReadOnly(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root writes read-only directories")
	}
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(dir, 0o755)
	if _, err := Write(filepath.Join(dir, "x")); err == nil {
		t.Fatal("Write into a read-only directory succeeded")
	}
}

func TestPrivateBase(t *testing.T) {
	run := t.TempDir()
	if err := os.Chmod(run, 0o700); err != nil {
		t.Fatal(err)
	}
	env := func(k string) string {
		if k == "XDG_RUNTIME_DIR" {
			return run
		}
		return ""
	}
	base, err := PrivateBase(env)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(run, "vllm-timings", "fallback-"+Digest()); base != want {
		t.Errorf("base = %s, want %s", base, want)
	}
	if err := os.Chmod(filepath.Join(run, "vllm-timings"), 0o777); err != nil {
		t.Fatal(err)
	}
	if _, err := PrivateBase(env); err == nil || !strings.Contains(err.Error(), "writable by others") {
		t.Errorf("a world-writable parent: err = %v", err)
	}
	if err := os.Remove(filepath.Join(run, "vllm-timings")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(t.TempDir(), filepath.Join(run, "vllm-timings")); err != nil {
		t.Fatal(err)
	}
	if _, err := PrivateBase(env); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("a symlink: err = %v", err)
	}
}

// The module serves only the routes exec planned it for: the parts the
// patch does not cover, every part with --fallback always.
func TestServeEnvNamesItsRoutes(t *testing.T) {
	s := &Serve{Parts: Parts{Responses: true, Messages: true}}
	got := s.Env([]string{"PATH=/bin", RoutesEnv + "=/v1/chat/completions", "HOME=/root"})
	want := []string{"PATH=/bin", "HOME=/root", RoutesEnv + "=/v1/responses /v1/messages"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Env (-want +got):\n%s", diff)
	}
	always, err := Plan(all, []string{"vllm", "serve", "m"}, Parts{Chat: true}, Always, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := always.Env(nil), []string{RoutesEnv + "=/v1/chat/completions /v1/completions /v1/responses /v1/messages"}; !cmp.Equal(got, want) {
		t.Errorf("--fallback always: Env = %q, want %q", got, want)
	}
}
