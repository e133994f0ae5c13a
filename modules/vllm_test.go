package modules

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vllm-timings/vllm-timings/nixgen/nixtest"
	"github.com/vllm-timings/vllm-timings/patcher/testtree"
)

// vllmTimings gives the binary (testtree.VllmTimings) in a directory that
// looks like the package's output: PKG/bin/vllm-timings, a link to it.
func vllmTimings(t *testing.T) (pkg, exe string) {
	t.Helper()
	built := testtree.VllmTimings(t)
	pkg = t.TempDir()
	exe = filepath.Join(pkg, "bin", "vllm-timings")
	if err := os.Mkdir(filepath.Dir(exe), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(built, exe); err != nil {
		t.Fatal(err)
	}
	return pkg, exe
}

// standins are a Python package derivation with what patchVllm reads
// (pythonModule.sitePackages, overridePythonAttrs, an existing postInstall)
// and a vllm-timings package whose output is pkg. No derivation is built.
func standins(pkg string) string {
	return `
  vllm =
    let
      make = attrs: attrs // {
        type = "derivation";
        name = "python3.12-vllm-0.10.0";
        outPath = "/nix/store/00000000000000000000000000000000-python3.12-vllm-0.10.0";
        pythonModule.sitePackages = "lib/python3.12/site-packages";
        overridePythonAttrs = f: make (attrs // f attrs);
      };
    in
    make { postInstall = "echo nixpkgs-own-postInstall\n"; passthru.tests = { }; };
  vllm-timings = { type = "derivation"; name = "vllm-timings-0.1.0"; outPath = ` + nixtest.String(pkg) + `; meta.mainProgram = "vllm-timings"; };
`
}

// patchVllmResult is what the evaluation gives for each way in: the flake's
// lib.patchVllm, overlays.vllm on a stand-in pkgs, and the module's
// patchVllm option.
type patchVllmResult struct {
	PostInstall string `json:"postInstall"`
	VllmTimings bool   `json:"vllmTimings"`
	Tests       bool   `json:"tests"`
}

func evalPatchVllm(t *testing.T, pkg string) map[string]patchVllmResult {
	t.Helper()
	needFlake(t)
	var got map[string]patchVllmResult
	evalJSON(t, flakeExpr+`let
  lib = nixpkgs.lib;
`+standins(pkg)+`
  show = v: { inherit (v) postInstall; vllmTimings = v.passthru.vllmTimings; tests = v.passthru ? tests; };
  # overlays.vllm on a pkgs that has only what it touches.
  pkgs = lib.fix (lib.extends flake.overlays.vllm (final: {
    pythonPackagesExtensions = [ ];
    buildPackages = { inherit vllm-timings; };
  }));
  python3Packages = lib.foldl' (ps: ext: ps // ext ps ps) { inherit vllm; } pkgs.pythonPackagesExtensions;
  module = (lib.evalModules {
    modules = [
      ./nixos/default.nix
      {
        options.warnings = lib.mkOption { type = lib.types.listOf lib.types.str; default = [ ]; };
        options.services.llama-swap.enable = lib.mkEnableOption "llama-swap";
        options.systemd.services = lib.mkOption { type = lib.types.attrs; default = { }; };
      }
      {
        _module.args.pkgs = throw "no pkgs";
        services.llama-swap.vllmTimings = { package = vllm-timings; patchsets = [ "/etc/vllm-timings/extra.hcl" ]; };
      }
    ];
  }).config.services.llama-swap.vllmTimings;
in {
  lib = show (flake.lib.patchVllm { inherit vllm vllm-timings; });
  overlay = show python3Packages.vllm;
  module = show (module.patchVllm vllm);
}`, &got)
	return got
}

// TestPatchVllmEval evaluates the three ways to nixpkgs' patched vllm with
// nixpkgs' lib and stand-in derivations: each appends the apply step to the
// package's own postInstall and keeps its passthru.
func TestPatchVllmEval(t *testing.T) {
	const pkg = "/nix/store/11111111111111111111111111111111-vllm-timings-0.1.0"
	got := evalPatchVllm(t, pkg)
	apply := pkg + `/bin/vllm-timings apply --on-failure abort --vllm-dir "$out/lib/python3.12/site-packages/vllm"`
	for _, way := range []string{"lib", "overlay", "module"} {
		r, ok := got[way]
		if !ok {
			t.Errorf("%s: no result", way)
			continue
		}
		want := apply
		if way == "module" {
			want = pkg + `/bin/vllm-timings apply --on-failure abort --patchset /etc/vllm-timings/extra.hcl --vllm-dir "$out/lib/python3.12/site-packages/vllm"`
		}
		if !strings.HasPrefix(r.PostInstall, "echo nixpkgs-own-postInstall\n") || !strings.Contains(r.PostInstall, "\n"+want+"\n") {
			t.Errorf("%s: postInstall is\n%s\nwant nixpkgs' own, then\n%s", way, r.PostInstall, want)
		}
		if !r.VllmTimings || !r.Tests {
			t.Errorf("%s: passthru lost: %+v", way, r)
		}
	}
	r := nixtest.TryExpr(t, `(import `+nixtest.Path("modules/vllm.nix")+` { lib = import `+nixtest.String(nixtest.NixpkgsLib(t))+`; }) { vllm = { overridePythonAttrs = f: { }; pythonModule = false; }; vllm-timings = { }; }`)
	if r.OK || !bytes.Contains(r.Stderr, []byte("pass the package pkgs.python3Packages.vllm rather than the application")) {
		t.Errorf("an application instead of a package: ok=%v\n%s", r.OK, r.Stderr)
	}
}

// TestPatchVllmBuildStep runs the postInstall that the evaluation gives, as
// stdenv runs it (bash, set -euo pipefail, $out set), on a fixture vLLM
// tree laid out like the package's $out, with the real binary. The tree
// must come out patched, and a tree that no patch set fits must fail the
// step and stay unchanged. (A real nix build against nixpkgs' vllm cannot
// run here: no nixpkgs, no store, no network for vLLM's sources.)
func TestPatchVllmBuildStep(t *testing.T) {
	bash := testtree.RequireTool(t, "bash")
	pkg, exe := vllmTimings(t)
	script := evalPatchVllm(t, pkg)["lib"].PostInstall

	run := func(fixture string) (string, string, int, string) {
		out := filepath.Join(t.TempDir(), "out")
		site := filepath.Join(out, "lib", "python3.12", "site-packages")
		if err := testtree.Unpack(fixture, site); err != nil {
			t.Fatal(err)
		}
		before, err := testtree.Hash(site)
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bash, "-euo", "pipefail", "-c", script)
		cmd.Env = []string{"PATH=/usr/bin:/bin", "out=" + out, "HOME=/homeless-shelter"}
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		code := 0
		if err := cmd.Run(); err != nil {
			ee, ok := err.(*exec.ExitError)
			if !ok {
				t.Fatal(err)
			}
			code = ee.ExitCode()
		}
		after, _ := testtree.Hash(site)
		changed := "unchanged"
		if after != before {
			changed = "changed"
		}
		return stdout.String(), stderr.String(), code, changed + " " + site
	}

	stdout, stderr, code, state := run("openai-packages")
	if code != 0 || !strings.HasPrefix(stdout, "nixpkgs-own-postInstall\n") || !strings.HasPrefix(state, "changed") {
		t.Fatalf("the build step: exit %d, tree %s\nstdout:\n%s\nstderr:\n%s", code, state, stdout, stderr)
	}
	site := strings.TrimPrefix(state, "changed ")
	st := exec.Command(exe, "status", "--json", "--vllm-dir", site)
	raw, err := st.Output()
	if err != nil {
		t.Fatalf("status after the build step: %v\n%s", err, raw)
	}
	var status map[string]any
	if err := json.Unmarshal(raw, &status); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), `"patched"`) {
		t.Errorf("status after the build step does not say patched:\n%s", raw)
	}
	if py, err := exec.LookPath("python3"); err == nil {
		f := filepath.Join(site, "vllm", "entrypoints", "openai", "chat_completion", "serving.py")
		if out, err := exec.Command(py, "-m", "py_compile", f).CombinedOutput(); err != nil {
			t.Errorf("the patched serving.py does not compile: %v\n%s", err, out)
		}
	}

	// A vLLM that no patch set fits: the build must fail, not give a vllm
	// without timings.
	out := filepath.Join(t.TempDir(), "out")
	vllm := filepath.Join(out, "lib", "python3.12", "site-packages", "vllm")
	if err := os.MkdirAll(vllm, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(vllm, "__init__.py"), []byte("__version__ = '99.0'\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	before, _ := testtree.Hash(out)
	cmd := exec.Command(bash, "-euo", "pipefail", "-c", script)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "out=" + out}
	msg, err := cmd.CombinedOutput()
	after, _ := testtree.Hash(out)
	if err == nil || before != after {
		t.Errorf("a vLLM no patch set fits: err=%v, tree changed=%v\n%s", err, before != after, msg)
	}
	t.Logf("the failing build step says:\n%s", msg)
}
