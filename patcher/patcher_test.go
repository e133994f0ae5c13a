package patcher

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/vllm-timings/vllm-timings/patcher/find"
	"github.com/vllm-timings/vllm-timings/patcher/testtree"

	"github.com/google/go-cmp/cmp"
)

const (
	chatServing     = "vllm/entrypoints/openai/chat_completion/serving.py"
	cmplServing     = "vllm/entrypoints/openai/completion/serving.py"
	chatModule      = "vllm/entrypoints/openai/serving_chat.py"
	cmplModule      = "vllm/entrypoints/openai/serving_completion.py"
	outputProcessor = "vllm/v1/engine/output_processor.py"
	module          = "vllm/_llamacpp_timings.py"
)

// fixtureTree is one fixture in testdata/trees, the embedded set that must
// fit it, and what its driver (testdata/python/drive_serving.py) shows.
type fixtureTree struct {
	name, set    string
	edits        []string // the files the set edits, in apply's order
	drafts       bool     // outputs carry spec_decode_metrics (0.29 on)
	ownMetrics   bool     // responses carry vLLM's own per-request metrics (0.25 on)
	processor    bool     // the fixture has a v1 output processor the driver runs
	linksMetrics bool     // the set makes the processor pass metrics (v0.10 to v0.11.0)
}

// fixtures covers every layout family the embedded sets know.
var fixtures = []fixtureTree{
	{name: "openai-modules-v0.10", set: "openai-modules-v0.10", edits: []string{chatModule, cmplModule, outputProcessor}, processor: true, linksMetrics: true},
	{name: "openai-modules", set: "openai-modules", edits: []string{chatModule, cmplModule, outputProcessor}, processor: true},
	{name: "openai-packages", set: "openai-packages", edits: []string{chatServing, cmplServing, outputProcessor}},
	{name: "openai-packages-late", set: "openai-packages", edits: []string{chatServing, cmplServing, outputProcessor}, drafts: true, ownMetrics: true},
	{name: "openai-packages-raw-stream", set: "openai-packages-raw-stream", edits: []string{chatServing, cmplServing, outputProcessor}, drafts: true, ownMetrics: true},
}

func TestPythonTimingsModule(t *testing.T) {
	py := requireTool(t, "python3")
	cmd := exec.Command(py, "-m", "unittest", "discover", "-v", "-s", filepath.Join("testdata", "python"), "-p", "test_*.py")
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1", "LLAMACPP_TIMINGS="+filepath.Join("patchsets", "llamacpp_timings.py"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("python unit tests failed: %v\n%s", err, out)
	}
	if !bytes.Contains(out, []byte("OK")) {
		t.Fatalf("unexpected unittest output:\n%s", out)
	}
}

// TestApplyRevertFixture applies the embedded sets to every fixture: the
// set meant for its shape is chosen, the result compiles with no new
// pyflakes findings, a second apply writes nothing, and revert restores
// every byte.
func TestApplyRevertFixture(t *testing.T) {
	// Each fixture's original and patched files, kept for one py_compile
	// and one pyflakes over every fixture once all are done.
	keep := t.TempDir()
	var mu sync.Mutex
	var done []fixtureTree
	t.Run("fixtures", func(t *testing.T) {
		for _, fx := range fixtures {
			t.Run(fx.name, func(t *testing.T) {
				t.Parallel()
				site := fixture(t, fx.name)
				before := hash(t, site)
				orig := map[string]string{}
				for _, f := range fx.edits {
					orig[f] = readFile(t, filepath.Join(site, f))
				}

				s := open(t, site)
				if s.Sel.Chosen == nil || s.Sel.Chosen.Set.Name != fx.set {
					t.Fatalf("chosen set: %+v, want %s", s.Sel, fx.set)
				}
				applied, err := s.Apply()
				if err != nil {
					t.Fatal(err)
				}
				want := []string{"created " + module}
				for _, f := range fx.edits {
					want = append(want, "patched "+f)
				}
				if diff := cmp.Diff(want, applied); diff != "" {
					t.Errorf("apply (-want +got):\n%s", diff)
				}
				for _, rel := range append([]string{module}, fx.edits...) {
					if content, ok := orig[rel]; ok {
						mkFile(t, filepath.Join(keep, fx.name, "orig", rel), content)
					}
					mkFile(t, filepath.Join(keep, fx.name, "patched", rel), readFile(t, filepath.Join(site, rel)))
				}
				mu.Lock()
				done = append(done, fx)
				mu.Unlock()

				again := open(t, site)
				if applied, err := again.Apply(); err != nil || len(applied) != 0 {
					t.Fatalf("second apply wrote %v (err %v); want nothing", applied, err)
				}
				if st := again.Status(); st.State != Patched {
					t.Errorf("status after apply = %s, want patched", st.State)
				}
				if _, err := again.Revert(false); err != nil {
					t.Fatal(err)
				}
				if after := hash(t, site); after != before {
					t.Fatalf("revert: tree hash %s, want original %s", after, before)
				}
				for rel, content := range orig {
					if got := readFile(t, filepath.Join(site, rel)); got != content {
						t.Errorf("revert: %s differs from the original", rel)
					}
				}
				if _, err := os.Stat(filepath.Join(site, module)); !os.IsNotExist(err) {
					t.Errorf("revert left %s behind", module)
				}
			})
		}
	})
	noNewPyflakes(t, keep, done)
}

func mkFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, path, content)
}

func pyCompile(t *testing.T, paths ...string) {
	t.Helper()
	py := requireTool(t, "python3")
	cmd := exec.Command(py, append([]string{"-m", "py_compile"}, paths...)...)
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("py_compile %v: %v\n%s", paths, err, out)
	}
}

var pyflakesLine = regexp.MustCompile(`^[^:]+:\d+:(\d+:)? `)

// pyflakesFindings runs pyflakes once on the given files and returns each
// file's messages without line numbers, so findings can be compared across
// versions.
func pyflakesFindings(t *testing.T, paths ...string) map[string][]string {
	t.Helper()
	// Debian calls it pyflakes3; pip and nixpkgs, pyflakes.
	name := "pyflakes3"
	if _, err := exec.LookPath(name); err != nil {
		if _, err := exec.LookPath("pyflakes"); err == nil {
			name = "pyflakes"
		}
	}
	bin := requireTool(t, name)
	out, _ := exec.Command(bin, paths...).CombinedOutput() // exit 1 means findings
	msgs := map[string][]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if l == "" {
			continue
		}
		file := l
		if i := strings.Index(l, ":"); i >= 0 {
			file = l[:i]
		}
		msgs[file] = append(msgs[file], pyflakesLine.ReplaceAllString(l, ""))
	}
	for _, m := range msgs {
		sort.Strings(m)
	}
	return msgs
}

// noNewPyflakes checks what TestApplyRevertFixture kept of each fixture
// (KEEP/FIXTURE/orig and .../patched): the patched files and the module
// compile, pyflakes finds in no patched file anything it did not find in
// the original, and nothing in the module. One py_compile and one pyflakes
// run cover every fixture.
func noNewPyflakes(t *testing.T, keep string, done []fixtureTree) {
	t.Helper()
	var compiled, flakes []string
	for _, fx := range done {
		compiled = append(compiled, filepath.Join(keep, fx.name, "patched", module))
		for _, rel := range fx.edits {
			compiled = append(compiled, filepath.Join(keep, fx.name, "patched", rel))
			flakes = append(flakes, filepath.Join(keep, fx.name, "orig", rel))
		}
	}
	if len(compiled) == 0 {
		return
	}
	pyCompile(t, compiled...)
	found := pyflakesFindings(t, append(flakes, compiled...)...)
	for _, fx := range done {
		for _, rel := range fx.edits {
			was, is := found[filepath.Join(keep, fx.name, "orig", rel)], found[filepath.Join(keep, fx.name, "patched", rel)]
			if diff := cmp.Diff(was, is); diff != "" {
				t.Errorf("%s: pyflakes findings on %s changed (-before +after):\n%s", fx.name, rel, diff)
			}
		}
		if f := found[filepath.Join(keep, fx.name, "patched", module)]; len(f) > 0 {
			t.Errorf("%s: pyflakes on %s: %v", fx.name, module, f)
		}
	}
}

// TestDiffGolden keeps the patch for each fixture under review: any change
// to the embedded sets or the insertion format shows up here.
func TestDiffGolden(t *testing.T) {
	for _, fx := range fixtures {
		t.Run(fx.name, func(t *testing.T) {
			site := fixture(t, fx.name)
			var b bytes.Buffer
			if err := open(t, site).Diff(&b); err != nil {
				t.Fatal(err)
			}
			golden(t, fx.name+".diff", b.String())
		})
	}
}

// TestDiffMatchesApply shows that git apply of the diff gives the same
// files as apply.
func TestDiffMatchesApply(t *testing.T) {
	git := requireTool(t, "git")
	for _, fx := range fixtures {
		t.Run(fx.name, func(t *testing.T) {
			t.Parallel()
			viaApply, viaGit := fixture(t, fx.name), fixture(t, fx.name)
			var patch bytes.Buffer
			if err := open(t, viaGit).Diff(&patch); err != nil {
				t.Fatal(err)
			}
			if _, err := open(t, viaApply).Apply(); err != nil {
				t.Fatal(err)
			}
			patchFile := filepath.Join(t.TempDir(), "timings.patch")
			writeFile(t, patchFile, patch.String())
			cmd := exec.Command(git, "apply", "--check", patchFile)
			cmd.Dir = viaGit
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("git apply --check: %v\n%s", err, out)
			}
			cmd = exec.Command(git, "apply", patchFile)
			cmd.Dir = viaGit
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("git apply: %v\n%s", err, out)
			}
			// The diff carries the patch, not apply's record of it.
			for _, ours := range []string{ManifestName, LockName} {
				os.Remove(filepath.Join(viaApply, "vllm", ours))
			}
			if a, g := hash(t, viaApply), hash(t, viaGit); a != g {
				for _, f := range append([]string{module}, fx.edits...) {
					if diff := cmp.Diff(readFile(t, filepath.Join(viaApply, f)), readFile(t, filepath.Join(viaGit, f))); diff != "" {
						t.Errorf("%s (-apply +git apply):\n%s", f, diff)
					}
				}
				t.Fatalf("trees differ: apply %s, git apply %s", a, g)
			}
			var again bytes.Buffer
			if err := open(t, viaGit).Diff(&again); err != nil || again.Len() != 0 {
				t.Errorf("diff of a patched tree = %q (err %v), want empty", again.String(), err)
			}
		})
	}
}

// TestPatchedServing runs each fixture's serving generators, patched and
// not, with the same fake engine output, with vLLM's per-request metrics off
// and (where the fixture's vLLM has them) on: the patched bodies must equal
// the original ones except for timings and, on a body that carries both,
// the two fields of vLLM's metrics llama-swap would recompute speeds from;
// timings must sit exactly on the bodies llama-swap reads, agree with usage,
// and carry draft counts exactly where the version reports them.
func TestPatchedServing(t *testing.T) {
	py := requireTool(t, "python3")
	testtree.RequirePythonModule(t, py, "pydantic")
	var jobs []driveJob
	for _, fx := range fixtures {
		jobs = append(jobs, jobsOf(fx, true)...)
	}
	driveAll(t, py, jobs...)
	for _, fx := range fixtures {
		for _, perRequest := range perRequestModes(fx) {
			t.Run(fx.name+modeName(perRequest), func(t *testing.T) {
				t.Parallel()
				before := decodeDriven(t, drive(t, py, fx, false, perRequest))
				after := decodeDriven(t, drive(t, py, fx, true, perRequest))
				checkDriver(t, fx, before["_driver"][0], after["_driver"][0])
				checkPatchedBodies(t, fx, perRequest, before, after)
			})
		}
	}
}

// perRequestModes lists the runs of a fixture: per-request metrics off, and
// on where its vLLM has them.
func perRequestModes(fx fixtureTree) []bool {
	if fx.ownMetrics {
		return []bool{false, true}
	}
	return []bool{false}
}

func modeName(perRequest bool) string {
	if perRequest {
		return "/per-request-metrics"
	}
	return ""
}

// Which body (index, -1 for none) must carry timings, per scenario.
var wantTimingsAt = map[string]int{
	"chat_full": 0, "chat_full_no_stats": -1, "chat_full_spec": 0,
	"chat_stream_usage": 4, "chat_stream_no_usage": 3, "chat_stream_n2": 7,
	"chat_stream_no_stats": -1, "chat_stream_one_token": 1, "chat_stream_n2_spec": 8, "chat_stream_n2_cached": 7,
	"completion_full_2_prompts": 0, "completion_full_no_stats": -1, "completion_full_spec": 0,
	"completion_full": 0, "completion_stream_usage": 6, "completion_stream_usage_1_prompt": 2,
	"completion_stream_no_usage": 5, "completion_stream_spec": 5, "completion_stream_n2_merged": 3,
}

// Where a fixture's output processor runs (processor), the patched one
// gives requests without stats a RequestClock, and the no-stats scenarios
// get timings on the same bodies as the others.
var wantClockTimingsAt = map[string]int{
	"chat_full_no_stats": 0, "chat_stream_no_stats": 4, "completion_full_no_stats": 0,
}

// The scenarios whose response vLLM gives its own metrics with
// --enable-per-request-metrics: one request (not n>1, not two prompts),
// with stats, and in a stream only on the include_usage chunk.
var wantOwnMetrics = map[string]bool{
	"chat_full": true, "chat_full_spec": true, "chat_stream_usage": true,
	"completion_full": true, "completion_stream_usage_1_prompt": true,
}

func checkPatchedBodies(t *testing.T, fx fixtureTree, perRequest bool, before, after map[string][]map[string]any) {
	t.Helper()
	truths := map[string]engineTruth{}
	if b, err := json.Marshal(after["_truth"][0]); err != nil || json.Unmarshal(b, &truths) != nil {
		t.Fatalf("the driver's _truth: %v", after["_truth"])
	}
	delete(before, "_driver")
	delete(after, "_driver")
	delete(before, "_truth")
	delete(after, "_truth")
	// Draft counts from the driver's spec_decode_metrics: 4 of 8 per
	// choice, summed over choices and prompts.
	wantDrafts := map[string][2]float64{"chat_full_spec": {8, 4}, "chat_stream_n2_spec": {16, 8}, "completion_full_spec": {16, 8}, "completion_stream_spec": {16, 8}}
	if len(after) != len(wantTimingsAt) {
		t.Fatalf("driver ran %d scenarios, test knows %d", len(after), len(wantTimingsAt))
	}
	for name, bodies := range after {
		at, withMetrics := -1, 0
		for i, b := range bodies {
			if _, ok := b["error"]; ok {
				t.Errorf("%s: body %d is an error: %v", name, i, b)
			}
			m, hasMetrics := b["metrics"].(map[string]any)
			if hasMetrics {
				withMetrics++
			}
			tm, ok := b["timings"].(map[string]any)
			if !ok {
				continue
			}
			if at >= 0 {
				t.Errorf("%s: timings on bodies %d and %d, want one", name, at, i)
			}
			at = i
			drafts, spec := wantDrafts[name]
			checkTimings(t, name, tm, b["usage"], fx.drafts && spec)
			if tr, ok := truths[name]; !ok {
				t.Errorf("%s: timings, but the driver's truth has no stats", name)
			} else {
				for k, v := range tr.expectedTimings() {
					if got, _ := tm[k].(float64); !near(got, v) && math.Abs(got-v) > 1e-9 {
						t.Errorf("%s: timings[%s] = %v, want %v from the engine's timestamps", name, k, tm[k], v)
					}
				}
			}
			if fx.drafts && spec && (tm["draft_n"] != drafts[0] || tm["draft_n_accepted"] != drafts[1]) {
				t.Errorf("%s: draft_n, draft_n_accepted = %v, %v; want %v", name, tm["draft_n"], tm["draft_n_accepted"], drafts)
			}
			if hasMetrics {
				checkClearedMetrics(t, name, tm, m, before[name][i]["metrics"])
			}
			delete(b, "timings")
		}
		want := wantTimingsAt[name]
		if w, ok := wantClockTimingsAt[name]; ok && fx.processor {
			want = w
		}
		if at != want {
			t.Errorf("%s: timings on body %d, want %d", name, at, want)
		}
		if want := perRequest && wantOwnMetrics[name]; (withMetrics == 1) != want || withMetrics > 1 {
			t.Errorf("%s: %d bodies carry vLLM's own metrics; want them on one: %v", name, withMetrics, want)
		}
		if diff := cmp.Diff(before[name], bodies); diff != "" {
			t.Errorf("%s: patched bodies differ beyond timings (-unpatched +patched):\n%s", name, diff)
		}
	}
}

// checkClearedMetrics checks a body that carries both timings and vLLM's
// metrics: the patch has cleared time_to_first_token_ms and mean_itl_ms
// (null in a full body, absent from a stream chunk, as vLLM writes None)
// and nothing else, and what they held is still in the response: the
// unpatched values equal prompt_ms and generation_time_ms / (tokens - 1).
// The patched metrics are then set to the unpatched ones, for the
// comparison of everything else.
func checkClearedMetrics(t *testing.T, name string, tm, patched map[string]any, unpatched any) {
	t.Helper()
	orig, ok := unpatched.(map[string]any)
	if !ok {
		t.Errorf("%s: the unpatched body has no metrics", name)
		return
	}
	for k, v := range orig {
		switch k {
		case "time_to_first_token_ms", "mean_itl_ms":
			if got, present := patched[k]; present && got != nil {
				t.Errorf("%s: metrics.%s = %v, want it cleared", name, k, got)
			}
		default:
			if !cmp.Equal(patched[k], v) {
				t.Errorf("%s: metrics.%s = %v, want %v as vLLM sent it", name, k, patched[k], v)
			}
		}
	}
	if ttft, _ := orig["time_to_first_token_ms"].(float64); math.Abs(ttft-tm["prompt_ms"].(float64)) > 1e-6 {
		t.Errorf("%s: vLLM's time_to_first_token_ms %v != prompt_ms %v", name, ttft, tm["prompt_ms"])
	}
	if itl, ok := orig["mean_itl_ms"].(float64); ok {
		if want := orig["generation_time_ms"].(float64) / (tm["predicted_n"].(float64) - 1); math.Abs(itl-want) > 1e-6 {
			t.Errorf("%s: vLLM's mean_itl_ms %v != generation_time_ms/(predicted_n-1) = %v", name, itl, want)
		}
	}
	for k := range patched {
		delete(patched, k)
	}
	for k, v := range orig {
		patched[k] = v
	}
}

// TestOutputProcessorEditIsNeeded shows that on v0.10's shape the serving
// edits alone give no timings: without the output-processor edit,
// RequestOutput.metrics stays None.
func TestOutputProcessorEditIsNeeded(t *testing.T) {
	py := requireTool(t, "python3")
	testtree.RequirePythonModule(t, py, "pydantic")
	site := fixture(t, "openai-modules-v0.10")
	if _, err := open(t, site).Apply(); err != nil {
		t.Fatal(err)
	}
	replaceIn(t, filepath.Join(site, outputProcessor), "_llamacpp_timings.link_metrics(request_output, req_state.stats)", "pass")
	for name, bodies := range driveServing(t, py, site, false) {
		if strings.Contains(name, "no_stats") {
			continue // no stats to pass on: their timings come from the request's clock
		}
		for i, b := range bodies {
			if _, ok := b["timings"]; ok {
				t.Errorf("%s: body %d has timings without the output-processor edit", name, i)
			}
		}
	}
}

func driveServing(t *testing.T, py, site string, perRequestMetrics bool) map[string][]map[string]any {
	t.Helper()
	return decodeDriven(t, driveRaw(t, py, site, perRequestMetrics))
}

func decodeDriven(t *testing.T, out []byte) map[string][]map[string]any {
	t.Helper()
	var res map[string][]map[string]any
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	return res
}

// driveRaw runs testdata/python/drive_serving.py on a fixture tree and
// returns its JSON.
func driveRaw(t *testing.T, py, site string, perRequestMetrics bool) []byte {
	t.Helper()
	args := []string{filepath.Join("testdata", "python", "drive_serving.py"), site}
	if perRequestMetrics {
		args = append(args, "--per-request-metrics")
	}
	out, err := exec.Command(py, args...).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("drive_serving.py %s: %v\n%s", site, err, ee.Stderr)
		}
		t.Fatal(err)
	}
	return out
}

// checkDriver checks what the driver found in the fixture: whether it has
// an output processor and what it does with metrics, before and after the
// patch, and whether it reports draft counts.
func checkDriver(t *testing.T, fx fixtureTree, before, after map[string]any) {
	t.Helper()
	if after["drafts"] != fx.drafts {
		t.Errorf("driver: drafts = %v, fixture says %v", after["drafts"], fx.drafts)
	}
	proc, _ := after["processor"].(map[string]any)
	if (proc != nil) != fx.processor {
		t.Fatalf("driver: processor = %v, fixture says %v", after["processor"], fx.processor)
	}
	if proc == nil {
		return
	}
	if proc["metrics_is_stats"] != true || proc["pooling_has_metrics"] != false {
		t.Errorf("patched processor: %v; want RequestOutput.metrics to be the request's stats, pooling outputs untouched", proc)
	}
	wasLinked := before["processor"].(map[string]any)["metrics_is_stats"]
	if wasLinked == fx.linksMetrics {
		t.Errorf("unpatched processor passes metrics: %v; the fixture's set says %v", wasLinked, !fx.linksMetrics)
	}
}

var timingFields = []string{
	"prompt_n", "prompt_ms", "prompt_per_token_ms", "prompt_per_second",
	"predicted_n", "predicted_ms", "predicted_per_token_ms", "predicted_per_second", "cache_n",
}

func checkTimings(t *testing.T, name string, tm map[string]any, usage any, drafts bool) {
	t.Helper()
	v := map[string]float64{}
	fields := timingFields
	if drafts {
		fields = append(append([]string(nil), timingFields...), "draft_n", "draft_n_accepted")
	}
	for _, f := range fields {
		x, ok := tm[f].(float64)
		if !ok || math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
			t.Errorf("%s: timings.%s = %v", name, f, tm[f])
		}
		v[f] = x
	}
	if len(tm) != len(fields) {
		t.Errorf("%s: timings has %d fields, want %d: %v", name, len(tm), len(fields), tm)
	}
	for _, k := range []string{"prompt", "predicted"} {
		n, ms := v[k+"_n"], v[k+"_ms"]
		if ms > 0 && n > 0 {
			if math.Abs(v[k+"_per_second"]-n*1000/ms) > 1e-6 || math.Abs(v[k+"_per_token_ms"]-ms/n) > 1e-6 {
				t.Errorf("%s: %s rates inconsistent: %v", name, k, tm)
			}
		}
	}
	if u, ok := usage.(map[string]any); ok {
		if v["prompt_n"]+v["cache_n"] != u["prompt_tokens"].(float64) || v["predicted_n"] != u["completion_tokens"].(float64) {
			t.Errorf("%s: timings %v disagree with usage %v", name, tm, u)
		}
	}
}

// BenchmarkOpenFixture measures a whole planning pass (find, load the
// embedded sets, read, plan, choose) on the fixture tree.
func BenchmarkOpenFixture(b *testing.B) {
	site := fixture(b, "openai-packages")
	for b.Loop() {
		if _, err := Open(Options{Find: find.Options{Dir: filepath.Join(site, "vllm")}}); err != nil {
			b.Fatal(err)
		}
	}
}

// noNewPyflakesIn checks one patched site: pyflakes finds on each file of
// orig (rel → original content, written to a temporary directory) what it
// found before, and nothing on the module; two pyflakes runs.
func noNewPyflakesIn(t *testing.T, site string, orig map[string]string) {
	t.Helper()
	tmp := t.TempDir()
	var before, after []string
	for rel, content := range orig {
		p := filepath.Join(tmp, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, p, content)
		before = append(before, p)
		after = append(after, filepath.Join(site, rel))
	}
	was := pyflakesFindings(t, before...)
	is := pyflakesFindings(t, append(after, filepath.Join(site, module))...)
	for rel := range orig {
		if diff := cmp.Diff(was[filepath.Join(tmp, filepath.FromSlash(rel))], is[filepath.Join(site, rel)]); diff != "" {
			t.Errorf("pyflakes findings on %s changed (-before +after):\n%s", rel, diff)
		}
	}
	if f := is[filepath.Join(site, module)]; len(f) > 0 {
		t.Errorf("pyflakes on %s: %v", module, f)
	}
}
