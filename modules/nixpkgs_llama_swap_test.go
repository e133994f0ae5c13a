package modules

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vllm-timings/vllm-timings/nixgen/nixtest"
	"github.com/vllm-timings/vllm-timings/patcher/testtree"
)

// nixpkgsLlamaSwap returns nixpkgs' own llama-swap module, pinned in
// ../shared/nixpkgs-llama-swap beside the repository. Without it the test
// is skipped, and under CI=true it fails.
func nixpkgsLlamaSwap(t *testing.T) string {
	t.Helper()
	file := filepath.Join(nixtest.RepoRoot(), "..", "shared", "nixpkgs-llama-swap", "llama-swap.nix")
	if _, err := os.Stat(file); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is missing, and CI=true requires nixpkgs' llama-swap module", file)
		}
		testtree.Skipf(t, "nixpkgs' llama-swap module in ../shared/nixpkgs-llama-swap", "SKIPPED: %s is missing, so the module was not evaluated beside nixpkgs' llama-swap module (with CI=true this fails)", file)
	}
	abs, err := filepath.Abs(file)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// besideNixpkgs is what tests/nixpkgs-llama-swap.nix gives.
type besideNixpkgs struct {
	Unit struct {
		ExecStart               string   `json:"ExecStart"`
		DynamicUser             bool     `json:"DynamicUser"`
		PrivateUsers            bool     `json:"PrivateUsers"`
		SupplementaryGroups     []string `json:"SupplementaryGroups"`
		RestrictAddressFamilies []string `json:"RestrictAddressFamilies"`
		WantedBy                []string `json:"wantedBy"`
	} `json:"unit"`
	ConfigFile           string `json:"configFile"`
	ConfigFileIsSettings bool   `json:"configFileIsSettings"`
	Settings             struct {
		Models map[string]any `json:"models"`
	} `json:"settings"`
	Warnings    []string            `json:"warnings"`
	WarningsFor map[string][]string `json:"warningsFor"`
}

// TestModuleBesideNixpkgsLlamaSwap evaluates the README's configuration
// (eval.nix's sample: enable, dockerGroup = "docker", the README's model
// entries) with nixpkgs' own services.llama-swap module instead of eval.nix's
// stubs, and checks the unit llama-swap gets, the settings its config.yaml
// holds and the warnings, with and without the mistakes they are for.
func TestModuleBesideNixpkgsLlamaSwap(t *testing.T) {
	module := nixpkgsLlamaSwap(t)
	var got besideNixpkgs
	evalJSON(t, `{ libPath }: import ./tests/nixpkgs-llama-swap.nix {
  lib = import (/. + libPath);
  llamaSwapModule = `+nixtest.String(module)+`;
}`, &got)

	u := got.Unit
	// The group reaches nixpkgs' unit, which runs with DynamicUser and
	// PrivateUsers (the VM test, vm.nix, checks that the socket opens there).
	if diff := cmp.Diff([]string{"docker"}, u.SupplementaryGroups); diff != "" {
		t.Errorf("SupplementaryGroups of nixpkgs' llama-swap unit (-want +got):\n%s", diff)
	}
	if !u.DynamicUser || !u.PrivateUsers {
		t.Errorf("nixpkgs' unit no longer has DynamicUser and PrivateUsers (%v, %v): the VM test and dockerGroup's description assume both", u.DynamicUser, u.PrivateUsers)
	}
	if !strings.HasSuffix(u.ExecStart, " --config "+got.ConfigFile) || !got.ConfigFileIsSettings {
		t.Errorf("ExecStart %q does not run the config.yaml written from services.llama-swap.settings (%s)", u.ExecStart, got.ConfigFile)
	}

	// config.yaml holds the module's strings unchanged: the same models as
	// eval.nix's evaluation with stubs, pinned in expected.json.
	data, err := os.ReadFile(filepath.Join("tests", "expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	var expected struct {
		Sample struct {
			Models map[string]any `json:"models"`
		} `json:"sample"`
	}
	if err := json.Unmarshal(data, &expected); err != nil {
		t.Fatal(err)
	}
	if len(expected.Sample.Models) == 0 {
		t.Fatal("expected.json has no sample models")
	}
	if diff := cmp.Diff(expected.Sample.Models, got.Settings.Models); diff != "" {
		t.Errorf("the models in llama-swap's config.yaml differ from expected.json's sample (-expected.json +config.yaml):\n%s", diff)
	}

	if len(got.Warnings) != 0 {
		t.Errorf("the README's configuration warns: %q", got.Warnings)
	}
	want := map[string][]string{
		"groupNotDeclared":    {"users.groups has no group of that name"},
		"serviceNameOfNoUnit": {"no module defines systemd.services.my-llama-swap", "and not to nixpkgs' llama-swap unit"},
	}
	for name, texts := range want {
		ws := got.WarningsFor[name]
		if len(ws) != len(texts) {
			t.Errorf("%s: want %d warnings, got %q", name, len(texts), ws)
			continue
		}
		for i, text := range texts {
			if !strings.Contains(ws[i], text) {
				t.Errorf("%s: warning %d is %q, want it to say %q", name, i, ws[i], text)
			}
		}
	}
}

// TestVMNodeEvaluates evaluates the VM test's machine (tests/vm-node.nix)
// as TestModuleBesideNixpkgsLlamaSwap does the README's configuration: the
// VM test itself (vm.nix) needs nixpkgs and KVM, and runs in `nix flake
// check`. What the node asks of NixOS beyond the stand-ins is taken as it
// is, so only the module's and nixpkgs' llama-swap options are checked.
func TestVMNodeEvaluates(t *testing.T) {
	module := nixpkgsLlamaSwap(t)
	var got struct {
		besideNixpkgs
		Services map[string]struct {
			ServiceConfig map[string]any `json:"serviceConfig"`
			Requires      []string       `json:"requires"`
		} `json:"services"`
	}
	evalJSON(t, `{ libPath }: import ./tests/nixpkgs-llama-swap.nix {
  lib = import (/. + libPath);
  llamaSwapModule = `+nixtest.String(module)+`;
  configuration = ./tests/vm-node.nix;
  morePkgs = [ "python3" "util-linux" "coreutils" "gnugrep" "bash" "curl" ];
}`, &got)
	if len(got.Warnings) != 0 {
		t.Errorf("the VM node warns: %q", got.Warnings)
	}
	if diff := cmp.Diff([]string{"docker"}, got.Unit.SupplementaryGroups); diff != "" {
		t.Errorf("SupplementaryGroups (-want +got):\n%s", diff)
	}
	if !got.Unit.DynamicUser || !got.Unit.PrivateUsers {
		t.Error("the VM node's llama-swap unit lacks DynamicUser or PrivateUsers")
	}
	model, _ := got.Settings.Models["vllm"].(map[string]any)
	cmd, _ := model["cmd"].(string)
	for _, want := range []string{
		"-docker-standin/bin/docker run",
		"-v /nix/store/00000000000000000000000000000000-vllm-timings-0.1.0/bin/vllm-timings:/patches/vllm-timings:ro",
		"if touch /patches/vllm-timings 2>/dev/null; then",
		"exec /patches/vllm-timings exec --on-failure warn -- vllm serve \\\"$@\\\" || exec vllm serve \\\"$@\\\"",
	} {
		if !strings.Contains(cmd, want) {
			t.Errorf("the VM node's model cmd lacks %q:\n%s", want, cmd)
		}
	}
	daemon, ok := got.Services["docker-standin"]
	exec, _ := daemon.ServiceConfig["ExecStart"].(string)
	if !ok || !strings.Contains(exec, "daemon --socket /run/docker.sock --group docker") {
		t.Errorf("the VM node runs no docker stand-in on /run/docker.sock for the docker group: %q", exec)
	}
	if !slicesContains(got.Services["llama-swap"].Requires, "docker-standin.service") {
		t.Error("llama-swap does not require the docker stand-in")
	}
}

func slicesContains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
