package patcher

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vllm-timings/vllm-timings/patcher/exit"
	"github.com/vllm-timings/vllm-timings/patcher/patchsets"
	"github.com/vllm-timings/vllm-timings/patcher/spec"
	"github.com/vllm-timings/vllm-timings/patcher/testtree"
)

// newNightly is the raw-stream fixture as a vLLM nobody has seen: the
// engine loop and the usage chunk were renamed.
func newNightly(t *testing.T) string {
	t.Helper()
	site := fixture(t, "openai-packages-raw-stream")
	p := filepath.Join(site, chatServing)
	replaceIn(t, p, "            async for res in result_generator:\n", "            async for res in self._results(result_generator):\n")
	replaceIn(t, p, "                final_usage_chunk = ChatCompletionStreamResponse(", "                usage_chunk = ChatCompletionStreamResponse(")
	replaceIn(t, p, "                yield final_usage_chunk\n", "                yield usage_chunk\n")
	replaceIn(t, p, "    async def chat_completion_full_generator(", `    async def _results(self, result_generator):
        async for res in result_generator:
            yield res

    async def chat_completion_full_generator(`)
	writeFile(t, filepath.Join(site, "vllm", "_version.py"), "__version__ = version = '0.40.0.dev7+g1234abc'\n")
	return site
}

func TestDoctorReport(t *testing.T) {
	site := newNightly(t)
	before := hash(t, site)
	s := open(t, site)
	d := s.Diagnose()
	if d.Chosen != nil || len(d.Closest) != 1 || d.Closest[0].Set.Name != "openai-packages-raw-stream" {
		t.Fatalf("chosen %v, closest %v", d.Chosen, d.Closest)
	}
	c := d.Closest[0]
	if c.matched() != 14 || c.total() != 16 || c.problems() != 2 {
		t.Errorf("matched %d of %d, %d problems; want 14 of 16, 2", c.matched(), c.total(), c.problems())
	}
	var report bytes.Buffer
	d.WriteReport(&report)
	out := report.String()
	for _, m := range []string{
		"vLLM 0.40.0.dev7+g1234abc at ",
		`No patch set fits this vLLM. Closest: "openai-packages-raw-stream" (14 of 16 anchors match).`,
		`MISSING    edit "stream-tracker" (embedded:openai-packages.hcl line `,
		`wanted: before the statement starting "async for res in result_generator:" in OpenAIServingChat.chat_completion_stream_generator_raw`,
		"async for res in self._results(result_generator):   (in OpenAIServingChat.chat_completion_stream_generator_raw)",
		"usage_chunk = ChatCompletionStreamResponse(   (in OpenAIServingChat.chat_completion_stream_generator_raw)",
		`ok         edit "full-response": line `,
		"openai-packages: 12 of 16 anchors match",
	} {
		if !strings.Contains(out, m) {
			t.Errorf("report lacks %q:\n%s", m, out)
		}
	}
	if after := hash(t, site); after != before {
		t.Errorf("doctor changed the tree")
	}
}

// TestDoctorSkeleton: the skeleton parses, fails on the tree as the set it
// came from does (so an unread one patches nothing), and once its anchors
// are changed to the candidates it names, fits and gives timings.
func TestDoctorSkeleton(t *testing.T) {
	site := newNightly(t)
	s := open(t, site)
	d := s.Diagnose()
	skel, err := d.Skeleton(d.Closest[0])
	if err != nil {
		t.Fatal(err)
	}
	sets, diags := spec.Parse("skeleton.hcl", skel, spec.Assets{Builtin: patchsets.FS})
	if diags.HasErrors() {
		t.Fatalf("skeleton does not parse: %s\n%s", diags.Error(), skel)
	}
	if len(sets) != 1 || sets[0].Name != "my-vllm-0.40.0.dev7-g1234abc" || len(sets[0].Covers) != 1 || sets[0].Covers[0] != "vllm 0.40.0.dev7+g1234abc" {
		t.Errorf("skeleton set %+v", sets[0])
	}
	for _, m := range []string{
		"# vllm-timings doctor: MISSING in vLLM 0.40.0.dev7+g1234abc: no statement starting \"async for res in result_generator:\"",
		"#   60: async for res in self._results(result_generator):  [in OpenAIServingChat.chat_completion_stream_generator_raw]",
		"# Streaming: one tracker per response. With one choice it is shown only", // the set's own comments stay
	} {
		if !bytes.Contains(skel, []byte(m)) {
			t.Errorf("skeleton lacks %q:\n%s", m, skel)
		}
	}

	path := filepath.Join(t.TempDir(), "mine.hcl")
	writeFile(t, path, string(skel))
	as := open(t, site, path)
	if as.Sel.Chosen != nil {
		t.Fatalf("the unadapted skeleton fits (%s)", as.Sel.Chosen.Set.Name)
	}
	if _, err := as.Apply(); err == nil || !strings.Contains(err.Error(), "my-vllm-0.40.0.dev7-g1234abc") {
		t.Errorf("apply with the unadapted skeleton: %v", err)
	}

	// What the user does: point the anchors at the candidates.
	adapted := strings.ReplaceAll(string(skel), `match = "async for res in result_generator:"`, `match = "async for res in self._results(result_generator):"`)
	adapted = strings.ReplaceAll(adapted, `match = "final_usage_chunk = ChatCompletionStreamResponse("`, `match = "usage_chunk = ChatCompletionStreamResponse("`)
	adapted = strings.Replace(adapted, `code  = "_llamacpp_tracker.attach(final_usage_chunk)"`, `code  = "_llamacpp_tracker.attach(usage_chunk)"`, 1) // the chat one comes first
	writeFile(t, path, adapted)
	as = open(t, site, path)
	if as.Sel.Chosen == nil || as.Sel.Chosen.Set.Name != "my-vllm-0.40.0.dev7-g1234abc" {
		t.Fatalf("adapted skeleton does not fit: %+v", as.Sel)
	}
	if _, err := as.Apply(); err != nil {
		t.Fatal(err)
	}
	py := requireTool(t, "python3")
	testtree.RequirePythonModule(t, py, "pydantic")
	res := driveServing(t, py, site, false)
	for _, name := range []string{"chat_stream_usage", "chat_stream_no_usage", "chat_full"} {
		found := false
		for _, b := range res[name] {
			_, ok := b["timings"]
			found = found || ok
		}
		if !found {
			t.Errorf("%s: no timings with the adapted skeleton", name)
		}
	}
}

// TestDoctorMovedFile: when a target file is gone, the report and the
// skeleton say where the classes its anchors name are now.
func TestDoctorMovedFile(t *testing.T) {
	site := fixture(t, "openai-packages")
	if err := os.Rename(filepath.Join(site, chatServing), filepath.Join(site, "vllm/entrypoints/openai/chat_completion/api.py")); err != nil {
		t.Fatal(err)
	}
	s := open(t, site)
	d := s.Diagnose()
	if d.Chosen != nil || len(d.Closest) == 0 {
		t.Fatalf("chosen %v closest %v", d.Chosen, d.Closest)
	}
	var report bytes.Buffer
	d.WriteReport(&report)
	if !strings.Contains(report.String(), chatServing+": does not exist in this vLLM; the classes its anchors name are in vllm/entrypoints/openai/chat_completion/api.py") {
		t.Errorf("report:\n%s", report.String())
	}
	skel, err := d.Skeleton(d.Closest[0])
	if err != nil {
		t.Fatal(err)
	}
	if _, diags := spec.Parse("skeleton.hcl", skel, spec.Assets{Builtin: patchsets.FS}); diags.HasErrors() {
		t.Fatalf("skeleton does not parse: %s", diags.Error())
	}
	if !bytes.Contains(skel, []byte("# The classes its anchors name are now in: vllm/entrypoints/openai/chat_completion/api.py")) {
		t.Errorf("skeleton:\n%s", skel)
	}
}

// TestDoctorWhenASetFits says so and offers no skeleton.
func TestDoctorWhenASetFits(t *testing.T) {
	for _, fx := range fixtures {
		s := open(t, fixture(t, fx.name))
		d := s.Diagnose()
		if d.Chosen == nil || d.Chosen.Set.Name != fx.set || d.Chosen.problems() != 0 || d.Chosen.matched() != d.Chosen.total() {
			t.Errorf("%s: chosen %+v", fx.name, d.Chosen)
		}
		var report bytes.Buffer
		d.WriteReport(&report)
		if !strings.Contains(report.String(), "Nothing to adapt: \"vllm-timings apply\" uses this set.") {
			t.Errorf("%s: report:\n%s", fx.name, report.String())
		}
	}
}

// TestDoctorEveryAnchorOutcome covers ambiguous anchors and broken files.
func TestDoctorEveryAnchorOutcome(t *testing.T) {
	site := fixture(t, "openai-packages")
	replaceIn(t, filepath.Join(site, chatServing), "        return response\n", "        response = ChatCompletionResponse(**response.model_dump())\n        return response\n")
	writeFile(t, filepath.Join(site, module), "# someone else's\n")
	s := open(t, site)
	d := s.Diagnose()
	var report bytes.Buffer
	d.WriteReport(&report)
	out := report.String()
	for _, m := range []string{`AMBIGUOUS  edit "full-response"`, "matches 2 statements", "vllm/_llamacpp_timings.py: exists and was not written by vllm-timings"} {
		if !strings.Contains(out, m) {
			t.Errorf("report lacks %q:\n%s", m, out)
		}
	}
	skel, err := d.Skeleton(d.Closest[0])
	if err != nil {
		t.Fatal(err)
	}
	if _, diags := spec.Parse("skeleton.hcl", skel, spec.Assets{Builtin: patchsets.FS}); diags.HasErrors() {
		t.Fatalf("skeleton does not parse: %s", diags.Error())
	}
	var pe *exit.Error
	if _, err := s.Apply(); !errors.As(err, &pe) {
		t.Errorf("apply: %v", err)
	}
}

func TestSkeletonName(t *testing.T) {
	for in, want := range map[string]string{"0.19.2rc1.dev205+g07351e088": "my-vllm-0.19.2rc1.dev205-g07351e088", "unknown": "my-vllm-unknown", "V1 Beta!": "my-vllm-v1-beta"} {
		if got := skeletonName(in); got != want {
			t.Errorf("skeletonName(%q) = %q, want %q", in, got, want)
		}
	}
}
