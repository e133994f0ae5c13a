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
	"testing"

	"github.com/google/go-cmp/cmp"
)

const (
	chatServing = "vllm/entrypoints/openai/chat_completion/serving.py"
	cmplServing = "vllm/entrypoints/openai/completion/serving.py"
	module      = "vllm/_llamacpp_timings.py"
)

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

// TestApplyRevertFixture applies the embedded set to the fixture, checks
// the result compiles with no new pyflakes findings, that a second apply
// writes nothing, and that revert restores every byte.
func TestApplyRevertFixture(t *testing.T) {
	site := fixture(t, "openai-packages")
	before := hash(t, site)
	orig := map[string]string{chatServing: readFile(t, filepath.Join(site, chatServing)), cmplServing: readFile(t, filepath.Join(site, cmplServing))}

	s := open(t, site)
	if s.Sel.Chosen == nil || s.Sel.Chosen.Set.Name != "openai-packages" {
		t.Fatalf("chosen set: %+v", s.Sel)
	}
	done, err := s.Apply()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"created " + module, "patched " + chatServing, "patched " + cmplServing}
	if diff := cmp.Diff(want, done); diff != "" {
		t.Errorf("apply (-want +got):\n%s", diff)
	}
	for _, f := range []string{module, chatServing, cmplServing} {
		pyCompile(t, filepath.Join(site, f))
	}
	noNewPyflakes(t, site, orig)

	again := open(t, site)
	if done, err := again.Apply(); err != nil || len(done) != 0 {
		t.Fatalf("second apply wrote %v (err %v); want nothing", done, err)
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
}

func pyCompile(t *testing.T, path string) {
	t.Helper()
	py := requireTool(t, "python3")
	if out, err := exec.Command(py, "-m", "py_compile", path).CombinedOutput(); err != nil {
		t.Errorf("py_compile %s: %v\n%s", path, err, out)
	}
}

var pyflakesLine = regexp.MustCompile(`^[^:]+:\d+:(\d+:)? `)

// pyflakesFindings runs pyflakes on one file and returns its messages
// without line numbers, so findings can be compared across versions.
func pyflakesFindings(t *testing.T, path string) []string {
	t.Helper()
	bin := requireTool(t, "pyflakes3")
	out, _ := exec.Command(bin, path).CombinedOutput() // exit 1 means findings
	var msgs []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if l != "" {
			msgs = append(msgs, pyflakesLine.ReplaceAllString(l, ""))
		}
	}
	sort.Strings(msgs)
	return msgs
}

func noNewPyflakes(t *testing.T, site string, orig map[string]string) {
	t.Helper()
	for rel, content := range orig {
		tmp := filepath.Join(t.TempDir(), filepath.Base(rel))
		writeFile(t, tmp, content)
		if diff := cmp.Diff(pyflakesFindings(t, tmp), pyflakesFindings(t, filepath.Join(site, rel))); diff != "" {
			t.Errorf("pyflakes findings on %s changed (-before +after):\n%s", rel, diff)
		}
	}
	if f := pyflakesFindings(t, filepath.Join(site, module)); len(f) > 0 {
		t.Errorf("pyflakes on %s: %v", module, f)
	}
}

// TestDiffGolden keeps the patch for the fixture under review: any change
// to the embedded set or the insertion format shows up here.
func TestDiffGolden(t *testing.T) {
	site := fixture(t, "openai-packages")
	var b bytes.Buffer
	if err := open(t, site).Diff(&b); err != nil {
		t.Fatal(err)
	}
	golden(t, "openai-packages.diff", b.String())
}

// TestDiffMatchesApply shows that git apply of the diff gives the same
// files as apply.
func TestDiffMatchesApply(t *testing.T) {
	git := requireTool(t, "git")
	viaApply, viaGit := fixture(t, "openai-packages"), fixture(t, "openai-packages")
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
	if a, g := hash(t, viaApply), hash(t, viaGit); a != g {
		for _, f := range []string{module, chatServing, cmplServing} {
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
}

// TestPatchedServing runs the fixture's serving generators, patched and
// not, with the same fake engine output: the patched bodies must equal the
// original ones except for timings, timings must sit exactly on the bodies
// llama-swap reads, and agree with usage.
func TestPatchedServing(t *testing.T) {
	py := requireTool(t, "python3")
	if err := exec.Command(py, "-c", "import pydantic").Run(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("pydantic is required in CI; .ci/run should install it")
		}
		t.Skip("pydantic not installed")
	}
	orig, patched := fixture(t, "openai-packages"), fixture(t, "openai-packages")
	if _, err := open(t, patched).Apply(); err != nil {
		t.Fatal(err)
	}
	run := func(site string) map[string][]map[string]any {
		out, err := exec.Command(py, filepath.Join("testdata", "python", "drive_serving.py"), site).Output()
		if err != nil {
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				t.Fatalf("drive_serving.py %s: %v\n%s", site, err, ee.Stderr)
			}
			t.Fatal(err)
		}
		var res map[string][]map[string]any
		if err := json.Unmarshal(out, &res); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		return res
	}
	before, after := run(orig), run(patched)

	// Which body (index, -1 for none) must carry timings, per scenario.
	wantAt := map[string]int{
		"chat_full": 0, "chat_full_no_stats": -1,
		"chat_stream_usage": 4, "chat_stream_no_usage": 3, "chat_stream_n2": 7,
		"chat_stream_no_stats": -1, "chat_stream_one_token": 1,
		"completion_full_2_prompts": 0, "completion_full_no_stats": -1,
		"completion_stream_usage": 6, "completion_stream_no_usage": 5,
	}
	if len(after) != len(wantAt) {
		t.Fatalf("driver ran %d scenarios, test knows %d", len(after), len(wantAt))
	}
	for name, bodies := range after {
		at := -1
		for i, b := range bodies {
			if _, ok := b["error"]; ok {
				t.Errorf("%s: body %d is an error: %v", name, i, b)
			}
			tm, ok := b["timings"].(map[string]any)
			if !ok {
				continue
			}
			if at >= 0 {
				t.Errorf("%s: timings on bodies %d and %d, want one", name, at, i)
			}
			at = i
			checkTimings(t, name, tm, b["usage"])
			delete(b, "timings")
		}
		if at != wantAt[name] {
			t.Errorf("%s: timings on body %d, want %d", name, at, wantAt[name])
		}
		if diff := cmp.Diff(before[name], bodies); diff != "" {
			t.Errorf("%s: patched bodies differ beyond timings (-unpatched +patched):\n%s", name, diff)
		}
	}

	// Exact values for one request, from the driver's stats: scheduled at
	// 100.0, first token at 100.25, 3 tokens 50 ms apart; 4 of 10 cached.
	tm := run(patched)["chat_full"][0]["timings"].(map[string]any)
	want := map[string]float64{"prompt_n": 6, "prompt_ms": 250, "prompt_per_token_ms": 250.0 / 6, "prompt_per_second": 24,
		"predicted_n": 3, "predicted_ms": 100, "predicted_per_token_ms": 100.0 / 3, "predicted_per_second": 30, "cache_n": 4}
	for k, v := range want {
		if got := tm[k].(float64); math.Abs(got-v) > 1e-6 {
			t.Errorf("chat_full timings[%s] = %v, want %v", k, got, v)
		}
	}
}

var timingFields = []string{"prompt_n", "prompt_ms", "prompt_per_token_ms", "prompt_per_second",
	"predicted_n", "predicted_ms", "predicted_per_token_ms", "predicted_per_second", "cache_n"}

func checkTimings(t *testing.T, name string, tm map[string]any, usage any) {
	t.Helper()
	v := map[string]float64{}
	for _, f := range timingFields {
		x, ok := tm[f].(float64)
		if !ok || math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
			t.Errorf("%s: timings.%s = %v", name, f, tm[f])
		}
		v[f] = x
	}
	if len(tm) != len(timingFields) {
		t.Errorf("%s: timings has %d fields, want %d: %v", name, len(tm), len(timingFields), tm)
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
		if _, err := Open(Options{Find: FindOptions{Dir: filepath.Join(site, "vllm")}}); err != nil {
			b.Fatal(err)
		}
	}
}
