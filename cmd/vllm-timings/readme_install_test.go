package main

import (
	"debug/elf"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/vllm-timings/vllm-timings/patcher/testtree"
)

// readmeSection is the text of README.md's "## heading" section, up to the
// next "## " heading; the test fails when the README has no such section.
func readmeSection(t *testing.T, heading string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(testtree.RepoRoot(), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(raw), "\n## "+heading+"\n")
	if !ok {
		t.Fatalf("README.md has no %q section", "## "+heading)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	return section
}

// installBlocks are the fenced blocks of README.md's "## Install" section,
// in order: Nix, the release download, COPY --from, Kubernetes, go install.
func installBlocks(t *testing.T) (section string, blocks []string) {
	t.Helper()
	section = readmeSection(t, "Install")
	for _, m := range regexp.MustCompile("(?s)```[a-z]+\n(.*?)```\n").FindAllStringSubmatch(section, -1) {
		blocks = append(blocks, m[1])
	}
	if len(blocks) != 5 {
		t.Fatalf("README.md's Install section has %d blocks, want 5 (Nix, release download, COPY --from, Kubernetes, go install)", len(blocks))
	}
	return section, blocks
}

// repoFacts: what the blocks must agree with, read from where it is
// decided: package.nix's version (the release workflow refuses a tag that
// is not it), go.mod's module path.
func repoFacts(t *testing.T) (version, module string) {
	t.Helper()
	root := testtree.RepoRoot()
	nix, err := os.ReadFile(filepath.Join(root, "modules", "package.nix"))
	if errors.Is(err, fs.ErrNotExist) {
		// nix build's source leaves out package.nix and the flake's files.
		t.Skip("SKIPPED: no modules/package.nix (running inside nix build's checkPhase)")
	}
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^  version = "([^"]+)";$`).FindSubmatch(nix)
	if m == nil {
		t.Fatal(`modules/package.nix has no line   version = "...";`)
	}
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	mm := regexp.MustCompile(`(?m)^module (\S+)$`).FindSubmatch(mod)
	if mm == nil {
		t.Fatal("go.mod has no module line")
	}
	return string(m[1]), string(mm[1])
}

// TestReadmeInstall keeps the README's install paths true. Each block is
// held to what runs it elsewhere:
//   - every version it names is modules/package.nix's (a release is tagged
//     v that, and the image tagged that), and every address is the one
//     repository go.mod, the flake and the release workflow name;
//   - the release download's file names are those scripts/release writes;
//     scripts/release-check runs the block itself on the files it built,
//     served from a directory laid out like the release's URLs;
//   - the COPY --from line and the Kubernetes lines are, word for word,
//     in docs/kubernetes.md's blocks that scripts/real-vllm --level kube
//     builds and runs with podman;
//   - go install runs here on this module (the version suffix dropped: the
//     module is not fetched), and gives a static binary that runs;
//     TestVersionFromModule shows that @vX.Y.Z's build says X.Y.Z;
//   - the Nix block names the flake the NixOS section imports, whose
//     packages TestImageEval and scripts/nix-build-here evaluate and build.
func TestReadmeInstall(t *testing.T) {
	root := testtree.RepoRoot()
	section, blocks := installBlocks(t)
	version, module := repoFacts(t)
	nixBlock, download, copyFrom, kube, goInstall := blocks[0], blocks[1], blocks[2], blocks[3], blocks[4]
	repo := strings.TrimPrefix(module, "github.com/") // owner/name

	// Versions and addresses.
	for _, v := range regexp.MustCompile(`(?:/download/v|vllm-timings:|@v)([0-9][^\s/]*)`).FindAllStringSubmatch(section, -1) {
		if v[1] != version {
			t.Errorf("README.md's Install section names version %s (in %q); modules/package.nix builds %s", v[1], v[0], version)
		}
	}
	for _, want := range []struct{ block, text string }{
		{nixBlock, "github:" + repo + "\n"},
		{download, "base=https://github.com/" + repo + "/releases/download/v" + version + " "},
		{copyFrom, "--from=ghcr.io/" + repo + ":" + version + " "},
		{kube, "image: ghcr.io/" + repo + ":" + version + "\n"},
		{goInstall, " " + module + "/cmd/vllm-timings@v" + version + "\n"},
	} {
		if !strings.Contains(want.block, want.text) {
			t.Errorf("README.md's block\n%s\ndoes not hold %q", want.block, want.text)
		}
	}
	raw, _ := os.ReadFile(filepath.Join(root, "README.md"))
	if !strings.Contains(string(raw), `url = "github:`+repo+`";`) {
		t.Errorf("README.md's NixOS section does not import the flake github:%s", repo)
	}
	workflow, _ := os.ReadFile(filepath.Join(root, ".github", "workflows", "release.yml"))
	if !strings.Contains(string(workflow), "ghcr.io/${{ github.repository }}:${{ needs.binaries.outputs.version }}") {
		t.Error(".github/workflows/release.yml no longer pushes ghcr.io/OWNER/REPO:VERSION, the image the README names")
	}

	// The release files.
	release, _ := os.ReadFile(filepath.Join(root, "scripts", "release"))
	for _, f := range []string{`"$out/vllm-timings-linux-$arch"`, `>SHA256SUMS`, `for arch in amd64 arm64; do`} {
		if !strings.Contains(string(release), f) {
			t.Errorf("scripts/release no longer has %s: the README's download names its files", f)
		}
	}
	for _, f := range []string{"$base/vllm-timings-linux-$arch ", "$base/SHA256SUMS\n", "sha256sum -c --ignore-missing SHA256SUMS"} {
		if !strings.Contains(download, f) {
			t.Errorf("README.md's download block does not hold %q", f)
		}
	}

	// COPY --from and Kubernetes, as docs/kubernetes.md has them (which the
	// kube level runs).
	page, err := os.ReadFile(filepath.Join(root, "docs", "kubernetes.md"))
	if err != nil {
		t.Fatal(err)
	}
	kubeBlock := func(marker string) string {
		_, rest, ok := strings.Cut(string(page), "<!-- kube: "+marker+" -->\n```")
		if !ok {
			t.Fatalf("docs/kubernetes.md has no block marked %q", marker)
		}
		_, rest, _ = strings.Cut(rest, "\n")
		rest, _, _ = strings.Cut(rest, "```\n")
		var kept []string
		for _, l := range strings.SplitAfter(rest, "\n") {
			if !strings.HasPrefix(strings.TrimSpace(l), "#") {
				kept = append(kept, l)
			}
		}
		return strings.Join(kept, "")
	}
	if !strings.Contains(kubeBlock("dockerfile"), copyFrom) {
		t.Errorf("README.md's COPY --from line is not in docs/kubernetes.md's Dockerfile (which the kube level builds):\n%s", copyFrom)
	}
	for _, marker := range []string{"pod", "pod-readonly"} {
		if !strings.Contains(kubeBlock(marker), kube) {
			t.Errorf("README.md's Kubernetes lines are not in docs/kubernetes.md's %s block (which the kube level runs):\n%s", marker, kube)
		}
	}

	// go install, on this module.
	if _, err := exec.LookPath("go"); err != nil {
		testtree.Skipf(t, "go on PATH", "SKIPPED: no go on PATH")
	}
	bash := testtree.RequireTool(t, "bash")
	gobin := t.TempDir()
	local := strings.Replace(goInstall, "@v"+version, "", 1)
	cmd := exec.Command(bash, "-e", "-c", local)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOBIN="+gobin)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("README.md's go install, on this module (%s): %v\n%s", strings.TrimSpace(local), err, out)
	}
	bin := filepath.Join(gobin, "vllm-timings")
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("go install gave a dynamic binary (%v): is CGO_ENABLED=0 gone from the README's block?", p.Type)
		}
	}
	f.Close()
	if out, err := exec.Command(bin, "--version").CombinedOutput(); err != nil || !strings.HasPrefix(string(out), "vllm-timings version ") {
		t.Errorf("the installed vllm-timings --version: %v\n%s", err, out)
	}
}
