package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"

	"github.com/vllm-timings/vllm-timings/nixgen"
	"github.com/vllm-timings/vllm-timings/patcher/testtree"
)

// TestNixFlags checks that the flags and arguments reach the options, with
// the run functions stubbed out.
func TestNixFlags(t *testing.T) {
	var got *nixModelOptions
	cmd := newCmdNix(func(o *nixModelOptions) error { got = o; return nil })
	cmd.SetArgs([]string{
		"model", "qwen-vllm", "--binary", "/b", "--mount", "/m", "--on-failure", "abort",
		"--patchset", "/p/1,2.hcl", "--patchset", "/p/3.hcl", "--image", "img", "--docker", "podman",
		"--docker-arg=--gpus=all", "--docker-arg", "--ipc=host", "--env", "A=1,2", "--env", "B=x=y", "--env", "C",
		"--before", "set -e", "--before", "pip install x", "--publish", "${PORT}:8000",
		"--entrypoint", "bash", "--entrypoint", "docker/entrypoint.sh", "--venv", "/v",
		"--macro", "ctx=75000", "--format", "json", "--", "Qwen/Qwen3-8B", "--raw", "${X:+--x}", "--max-model-len", "${ctx}", "--", "-x", "--raw", "--raw",
	})
	cmd.SetOut(new(bytes.Buffer))
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	want := nixgen.ModelOptions{
		Name: "qwen-vllm", Image: "img", Docker: "podman",
		ServeArgs: []nixgen.Arg{
			{Text: "Qwen/Qwen3-8B"},
			nixgen.Raw("${X:+--x}"),
			{Text: "--max-model-len"},
			{Text: "${ctx}"},
			{Text: "--"},
			{Text: "-x"},
			nixgen.Raw("--raw"),
		},
		ExtraDockerArgs: []string{"--gpus=all", "--ipc=host"},
		Env:             map[string]string{"A": "1,2", "B": "x=y"},
		PassEnv:         []string{"C"},
		Macros:          map[string]string{"ctx": "75000"},
		Before:          []string{"set -e", "pip install x"},
		Publish:         "${PORT}:8000",
		Entrypoint:      []string{"bash", "docker/entrypoint.sh"},
		Venv:            "/v",
	}
	if diff := cmp.Diff(want, got.Model); diff != "" {
		t.Errorf("model options (-want +got):\n%s", diff)
	}
	wantOpts := nixgen.Options{Binary: "/b", Mount: "/m", OnFailure: "abort", Patchsets: []string{"/p/1,2.hcl", "/p/3.hcl"}}
	if diff := cmp.Diff(wantOpts, got.Options); diff != "" {
		t.Errorf("options (-want +got):\n%s", diff)
	}
	if got.Format != "json" {
		t.Errorf("format %q, want json", got.Format)
	}
}

// TestNixRegenerateCommand runs the command named in each golden Nix file's
// header: it must print the file again, byte for byte.
func TestNixRegenerateCommand(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "nixgen", "testdata", "golden", "*.nix"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden Nix files: %v", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			want, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.SplitN(string(want), "\n", 3)
			if lines[0] != nixgen.Header {
				t.Fatalf("first line %q, want %q", lines[0], nixgen.Header)
			}
			line, ok := strings.CutPrefix(lines[1], "# regenerate with: ")
			if !ok {
				t.Fatalf("second line %q names no command", lines[1])
			}
			argv := nixShellWords(t, line)
			if argv[0] != "vllm-timings" {
				t.Fatalf("command %q does not run vllm-timings", line)
			}
			var stdout, stderr bytes.Buffer
			if code := run(argv[1:], &stdout, &stderr); code != 0 {
				t.Fatalf("%s: exit %d: %s", line, code, stderr.Bytes())
			}
			if diff := cmp.Diff(string(want), stdout.String()); diff != "" {
				t.Errorf("%s prints something else than %s (-file +output):\n%s", line, file, diff)
			}
		})
	}
}

// nixShellWords splits a command line as bash would, with mvdan.cc/sh.
func nixShellWords(t *testing.T, line string) []string {
	t.Helper()
	f, err := syntax.NewParser().Parse(strings.NewReader(line), "")
	if err != nil {
		t.Fatalf("parsing %q: %v", line, err)
	}
	call, ok := f.Stmts[0].Cmd.(*syntax.CallExpr)
	if len(f.Stmts) != 1 || !ok {
		t.Fatalf("%q is not one simple command", line)
	}
	var argv []string
	for _, w := range call.Args {
		s, err := expand.Literal(nil, w)
		if err != nil {
			t.Fatal(err)
		}
		argv = append(argv, s)
	}
	return argv
}

// TestReadmeNix runs each command shown in the sections marked
// "<!-- section: nixgen -->" of README.md and docs/ (README's model entry,
// and docs/nix.md's fragments, launcher image and host virtualenv ones) and
// requires the output shown under it. A section ends at the next marker or
// "## " heading.
func TestReadmeNix(t *testing.T) {
	const marker = "<!-- section: nixgen -->\n"
	var blocks []string
	sections := 0
	for _, page := range testtree.PagesWith(t, marker) {
		for _, section := range strings.Split(page.Text, marker)[1:] {
			sections++
			section, _, _ = strings.Cut(section, "\n## ")
			b := strings.Split(section, "```console\n")[1:]
			if len(b) == 0 {
				t.Fatalf("%s: a section marked nixgen shows no command:\n%.200s", page.Path, section)
			}
			blocks = append(blocks, b...)
		}
	}
	if sections < 4 {
		t.Fatalf("README.md and docs/ have %d sections marked nixgen, want README's model entry and docs/nix.md's fragments, launcher image and host virtualenv ones", sections)
	}
	for _, block := range blocks {
		block, _, _ = strings.Cut(block, "```\n")
		line, want, _ := strings.Cut(block, "\n")
		cmdline, ok := strings.CutPrefix(line, "$ ")
		if !ok {
			t.Fatalf("console block starts with %q, not with a $ command", line)
		}
		argv := nixShellWords(t, cmdline)
		var stdout, stderr bytes.Buffer
		if code := run(argv[1:], &stdout, &stderr); code != 0 {
			t.Fatalf("%s: exit %d: %s", cmdline, code, stderr.Bytes())
		}
		if diff := cmp.Diff(want, stdout.String()); diff != "" {
			t.Errorf("the documentation shows other output for %s (-page +actual):\n%s", cmdline, diff)
		}
	}
}
