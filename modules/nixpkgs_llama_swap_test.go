package modules

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vllm-timings/vllm-timings/nixgen/nixtest"
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
		t.Skipf("SKIPPED: %s is missing, so the module was not evaluated beside nixpkgs' llama-swap module (with CI=true this fails)", file)
	}
	abs, err := filepath.Abs(file)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// besideNixpkgs is what nixos/tests/nixpkgs-llama-swap.nix gives.
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
	evalJSON(t, `{ libPath }: import ./nixos/tests/nixpkgs-llama-swap.nix {
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
	data, err := os.ReadFile(filepath.Join("nixos", "tests", "expected.json"))
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
