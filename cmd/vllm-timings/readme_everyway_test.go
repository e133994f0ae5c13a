package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rogpeppe/go-internal/txtar"

	"github.com/vllm-timings/vllm-timings/patcher/testtree"
)

// TestReadmeImageBuild keeps the Dockerfiles docs/running.md shows under
// "Image build" identical to the ones imagebuild.txtar runs, in order, and
// the diff command it shows to the one the script runs.
func TestReadmeImageBuild(t *testing.T) {
	const heading = "\n## Image build (Dockerfile)\n"
	page := testtree.PageWith(t, heading)
	_, section, _ := strings.Cut(page.Text, heading)
	section, _, _ = strings.Cut(section, "\n## ")
	var shown []string
	for _, b := range strings.Split(section, "```dockerfile\n")[1:] {
		b, _, _ = strings.Cut(b, "```\n")
		shown = append(shown, b)
	}
	a, err := txtar.ParseFile(filepath.Join("testdata", "script", "imagebuild.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for _, f := range a.Files {
		files[f.Name] = string(f.Data)
	}
	want := []string{files["Dockerfile"], files["Dockerfile.series"]}
	if diff := cmp.Diff(want, shown); diff != "" {
		t.Errorf("%s's Dockerfiles differ from testdata/script/imagebuild.txtar's (-tested +page):\n%s", page.Path, diff)
	}
	const gen = `vllm-timings diff --relative-to package --vllm-dir "$SP" > patches/90-vllm-timings.patch`
	if !strings.Contains(section, "```sh\n"+gen+"\n```") {
		t.Errorf("%s's image build section does not show %q", page.Path, gen)
	}
	if !strings.Contains(string(a.Comment), "vllm-timings diff --relative-to package --vllm-dir $SP\ncp stdout patches/90-vllm-timings.patch\n") {
		t.Errorf("imagebuild.txtar no longer runs the diff command %s shows", page.Path)
	}
}
