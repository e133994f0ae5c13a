package patcher

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vllm-timings/vllm-timings/patcher/exit"
	"github.com/vllm-timings/vllm-timings/patcher/find"
)

// TestFailuresChangeNothing covers every way apply can refuse: each gives
// its own exit code, a message that names the problem, and an
// unchanged tree.
func TestFailuresChangeNothing(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, site string)
		code  exit.Code
		msg   []string // substrings the message must contain
	}{
		{
			name: "missing anchor",
			setup: func(t *testing.T, site string) {
				replaceIn(t, filepath.Join(site, chatServing), "final_usage_chunk = ChatCompletionStreamResponse(", "final_chunk = ChatCompletionStreamResponse(")
			},
			code: ExitMissing,
			msg:  []string{"Anchor not found", chatServing, `"final_usage_chunk = ChatCompletionStreamResponse("`, "nearest is line 94: final_chunk", "embedded:openai-packages.hcl:65,", "adapt the anchor"},
		},
		{
			name: "doubled anchor",
			setup: func(t *testing.T, site string) {
				replaceIn(t, filepath.Join(site, chatServing), "        return response\n", "        response = ChatCompletionResponse(**response.model_dump())\n        return response\n")
			},
			code: ExitAmbiguous,
			msg:  []string{"Anchor matches more than once", chatServing, "matches 2 statements", "full-response"},
		},
		{
			name: "unknown layout",
			setup: func(t *testing.T, site string) {
				if err := os.RemoveAll(filepath.Join(site, "vllm", "entrypoints")); err != nil {
					t.Fatal(err)
				}
			},
			code: ExitNotFound,
			msg:  []string{"layout no patch set knows", "openai-packages needs " + chatServing},
		},
		{
			name: "broken markers",
			setup: func(t *testing.T, site string) {
				if _, err := open(t, site).Apply(); err != nil {
					t.Fatal(err)
				}
				replaceIn(t, filepath.Join(site, cmplServing), "# <<< vllm-timings openai-packages/import\n", "")
			},
			code: ExitModified,
			msg:  []string{"Broken vllm-timings markers", cmplServing, "line 35 opens a vllm-timings block inside the one opened at line 9"},
		},
		{
			name: "foreign module file",
			setup: func(t *testing.T, site string) {
				writeFile(t, filepath.Join(site, module), "# someone else's\n")
			},
			code: ExitModified,
			msg:  []string{"not written by vllm-timings", module},
		},
		{
			name: "symlink out of the package",
			setup: func(t *testing.T, site string) {
				outside := filepath.Join(t.TempDir(), "serving.py")
				writeFile(t, outside, readFile(t, filepath.Join(site, chatServing)))
				p := filepath.Join(site, chatServing)
				if err := os.Remove(p); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(outside, p); err != nil {
					t.Fatal(err)
				}
			},
			code: ExitFS,
			msg:  []string{"refusing " + chatServing, "outside the vllm package"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			site := fixture(t, "openai-packages")
			tt.setup(t, site)
			before := hash(t, site)
			var err error
			s, err := Open(Options{Find: find.Options{Dir: filepath.Join(site, "vllm")}})
			if err == nil {
				_, err = s.Apply()
			}
			var pe *exit.Error
			if !errors.As(err, &pe) {
				t.Fatalf("apply: got %v, want an *exit.Error", err)
			}
			if pe.Code != tt.code {
				t.Errorf("exit code %d, want %d; message:\n%s", pe.Code, tt.code, pe)
			}
			for _, m := range tt.msg {
				if !strings.Contains(pe.Error(), m) {
					t.Errorf("message lacks %q:\n%s", m, pe)
				}
			}
			if after := hash(t, site); after != before {
				t.Errorf("tree changed: %s -> %s", before, after)
			}
		})
	}
}

// TestReadOnlyTree runs the real binary as an unprivileged user on a tree it
// may read but not write: the error names the file, says what to do, exits
// 7, and nothing changes. (Root ignores file modes, so the test drops to
// uid 65534; it needs root to do that.)
func TestReadOnlyTree(t *testing.T) {
	dir, bin := asNobody(t, "vllm-timings-ro-")
	site := filepath.Join(dir, "site")
	if err := os.Mkdir(site, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unpackInto(site); err != nil {
		t.Fatal(err)
	}
	before := hash(t, site)
	for _, onFailure := range []string{"abort", "warn"} {
		cmd := nobodyCmd(bin, "apply", "--vllm-dir", filepath.Join(site, "vllm"), "--on-failure", onFailure)
		out, err := cmd.CombinedOutput()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		want := map[string]int{"abort": int(ExitFS), "warn": 0}[onFailure]
		if code != want {
			t.Errorf("--on-failure %s: exit %d, want %d\n%s", onFailure, code, want, out)
		}
		for _, m := range []string{"cannot write vllm/", "permission denied", "read-only here", "--overlay DIR", "Nothing was changed"} {
			if !strings.Contains(string(out), m) {
				t.Errorf("--on-failure %s: output lacks %q:\n%s", onFailure, m, out)
			}
		}
		if after := hash(t, site); after != before {
			t.Fatalf("tree changed: %s -> %s", before, after)
		}
	}
	// A tree patched by an older vllm-timings (no manifest) that this
	// user cannot write: already patched, exit 0, nothing written.
	if _, err := open(t, site).Apply(); err != nil {
		t.Fatal(err)
	}
	for _, ours := range []string{ManifestName, LockName} {
		os.Remove(filepath.Join(site, "vllm", ours))
	}
	patched := hash(t, site)
	cmd := nobodyCmd(bin, "apply", "--vllm-dir", filepath.Join(site, "vllm"))
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "already patched; nothing to do") {
		t.Errorf("apply on a patched read-only tree: %v\n%s", err, out)
	}
	if after := hash(t, site); after != patched {
		t.Fatalf("tree changed: %s -> %s", patched, after)
	}
}
