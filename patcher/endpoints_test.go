package patcher

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vllm-timings/vllm-timings/patcher/exit"
	"github.com/vllm-timings/vllm-timings/patcher/find"
	"github.com/vllm-timings/vllm-timings/patcher/spec"
	"github.com/vllm-timings/vllm-timings/patcher/testtree"
)

const (
	responsesModule  = "vllm/entrypoints/openai/serving_responses.py"
	servingEngineMod = "vllm/entrypoints/openai/serving_engine.py"
	responsesServing = "vllm/entrypoints/openai/responses/serving.py"
	engineServing    = "vllm/entrypoints/openai/engine/serving.py"
	messagesModule   = "vllm/entrypoints/anthropic/serving_messages.py"
	messagesServing  = "vllm/entrypoints/anthropic/serving.py"
)

// endpointFixture is one endpoints-* fixture in testdata/trees (a chat
// fixture with Responses and Messages code over it), the set each part must
// choose ("" for a part the fixture does not serve), and the files apply
// writes, in its order.
type endpointFixture struct {
	name, chat, responses, messages string
	writes                          []string
	stream                          bool // its Responses API streams (v0.10.1 on)
	incomplete                      bool // a stream cut short ends with response.incomplete (0.33 on)
}

var endpointFixtures = []endpointFixture{
	{
		name: "endpoints-v0.10.0", chat: "openai-modules-v0.10", responses: "responses-v0.10.0",
		writes: []string{chatModule, cmplModule, outputProcessor, responsesModule},
	},
	{
		name: "endpoints-v0.10-no-stream", chat: "openai-modules-v0.10", responses: "responses-modules-no-stream",
		writes: []string{chatModule, cmplModule, outputProcessor, servingEngineMod, responsesModule},
	},
	{
		name: "endpoints-v0.10.2", chat: "openai-modules-v0.10", responses: "responses-modules", stream: true,
		writes: []string{chatModule, cmplModule, outputProcessor, servingEngineMod, responsesModule},
	},
	{
		name: "endpoints-v0.10-stream-events", chat: "openai-modules-v0.10", responses: "responses-modules-stream-events", stream: true,
		writes: []string{chatModule, cmplModule, outputProcessor, servingEngineMod, responsesModule},
	},
	{
		name: "endpoints-modules", chat: "openai-modules", responses: "responses-modules", messages: "messages-module", stream: true,
		writes: []string{chatModule, cmplModule, outputProcessor, servingEngineMod, responsesModule, messagesModule},
	},
	{
		name: "endpoints-engine", chat: "openai-packages", responses: "responses-engine", messages: "messages-package", stream: true,
		writes: []string{chatServing, cmplServing, outputProcessor, engineServing, responsesServing, messagesServing},
	},
	{
		name: "endpoints-packages", chat: "openai-packages-raw-stream", responses: "responses-packages", messages: "messages-package", stream: true, incomplete: true,
		writes: []string{chatServing, cmplServing, outputProcessor, responsesServing, messagesServing},
	},
}

// part returns the session's choice for a part other than chat.
func part(t *testing.T, s *Session, name string) *PartChoice {
	t.Helper()
	for _, c := range s.Sel.Parts {
		if c.Part == name {
			return c
		}
	}
	t.Fatalf("no part %q in %+v", name, s.Sel.Parts)
	return nil
}

// TestEndpointSelection: on every endpoints fixture each part gets the set
// of its shape, by shape alone, and a part the fixture lacks is not served.
func TestEndpointSelection(t *testing.T) {
	for _, fx := range endpointFixtures {
		t.Run(fx.name, func(t *testing.T) {
			s := open(t, fixture(t, fx.name))
			if s.Sel.Chosen == nil || s.Sel.Chosen.Set.Name != fx.chat {
				t.Fatalf("chat: %+v, want %s", s.Sel.Chosen, fx.chat)
			}
			for _, want := range []struct{ part, set string }{{"responses", fx.responses}, {"messages", fx.messages}} {
				c := part(t, s, want.part)
				got := ""
				if c.Chosen != nil {
					got = c.Chosen.Set.Name
				}
				if got != want.set {
					t.Errorf("%s: chose %q, want %q (%s)", want.part, got, want.set, c.Why)
				}
				if want.set == "" && (c.Served() || !strings.HasPrefix(c.Why, "not served")) {
					t.Errorf("%s: served=%v, why %q; want not served", want.part, c.Served(), c.Why)
				}
			}
			if len(s.Sel.Unfit()) != 0 {
				t.Errorf("unfit parts: %v", s.Sel.Unfit())
			}
		})
	}
	// The chat fixtures serve neither endpoint: apply patches chat alone.
	s := open(t, fixture(t, "openai-packages"))
	for _, c := range s.Sel.Parts {
		if c.Served() || c.Chosen != nil {
			t.Errorf("openai-packages: part %s served=%v chosen=%v", c.Part, c.Served(), c.Chosen)
		}
	}
}

// TestEndpointApplyRevert applies every part to every endpoints fixture:
// the files it writes compile, pyflakes finds nothing new, the inserted
// code reads only names bound before it (scripts/compat-names.py, which
// follows closures), a second apply writes nothing, status says patched,
// and revert restores every byte.
func TestEndpointApplyRevert(t *testing.T) {
	py := requireTool(t, "python3")
	for _, fx := range endpointFixtures {
		t.Run(fx.name, func(t *testing.T) {
			t.Parallel()
			site := fixture(t, fx.name)
			before := hash(t, site)
			orig := map[string]string{}
			for _, f := range fx.writes {
				orig[f] = readFile(t, filepath.Join(site, f))
			}
			done, err := open(t, site).Apply()
			if err != nil {
				t.Fatal(err)
			}
			want := []string{"created " + module}
			var paths []string
			for _, f := range fx.writes {
				want = append(want, "patched "+f)
				paths = append(paths, filepath.Join(site, f))
			}
			if diff := cmp.Diff(want, done); diff != "" {
				t.Errorf("apply (-want +got):\n%s", diff)
			}
			// The manifest records the chosen set of every part, each
			// with its own files (the module under each that creates it).
			m, err := readManifest(filepath.Join(site, "vllm"))
			if err != nil || m == nil {
				t.Fatalf("manifest: %v, %v", m, err)
			}
			wantSets := []string{fx.chat, fx.responses}
			if fx.messages != "" {
				wantSets = append(wantSets, fx.messages)
			}
			var gotSets []string
			recorded := map[string]bool{}
			for _, ms := range m.Sets {
				gotSets = append(gotSets, ms.Name)
				for _, f := range ms.Files {
					recorded[f.Path] = true
				}
			}
			if diff := cmp.Diff(wantSets, gotSets); diff != "" {
				t.Errorf("manifest sets (-want +got):\n%s", diff)
			}
			for _, f := range append([]string{module}, fx.writes...) {
				if !recorded[f] {
					t.Errorf("manifest does not record %s", f)
				}
			}
			pyCompile(t, append(paths, filepath.Join(site, module))...)
			noNewPyflakesIn(t, site, orig)
			names := exec.Command(py, append([]string{filepath.Join("..", "scripts", "compat-names.py")}, paths...)...)
			if out, err := names.CombinedOutput(); err != nil {
				t.Errorf("compat-names.py: %v\n%s", err, out)
			}
			again := open(t, site)
			if done, err := again.Apply(); err != nil || len(done) != 0 {
				t.Fatalf("second apply wrote %v (err %v)", done, err)
			}
			st := again.Status()
			written := 0
			for _, f := range st.Files {
				if f.State != Checked {
					written++
				}
			}
			if st.State != Patched || written != len(fx.writes)+1 {
				t.Errorf("status: %s with %d files written, want patched with %d", st.State, written, len(fx.writes)+1)
			}
			if _, err := again.Revert(false); err != nil {
				t.Fatal(err)
			}
			if after := hash(t, site); after != before {
				t.Fatalf("revert: tree hash %s, want %s", after, before)
			}
		})
	}
}

// TestEndpointDiffGolden keeps the Responses and Messages edits of each
// shape under review (the chat files and the module have their goldens in
// the chat fixtures' diffs).
func TestEndpointDiffGolden(t *testing.T) {
	for _, fx := range endpointFixtures {
		t.Run(fx.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := open(t, fixture(t, fx.name)).Diff(&b); err != nil {
				t.Fatal(err)
			}
			golden(t, fx.name+".diff", endpointSections(b.String()))
		})
	}
}

// endpointSections keeps the sections of a diff for files no chat set writes.
func endpointSections(diff string) string {
	chat := map[string]bool{module: true, chatModule: true, cmplModule: true, outputProcessor: true, chatServing: true, cmplServing: true}
	var out strings.Builder
	for _, sec := range strings.SplitAfter(diff, "\ndiff --git ") {
		sec = strings.TrimPrefix(sec, "diff --git ")
		path, _, _ := strings.Cut(strings.TrimPrefix(sec, "a/"), " ")
		if !chat[path] {
			out.WriteString("diff --git " + strings.TrimSuffix(sec, "diff --git "))
		}
	}
	return out.String()
}

// TestEndpointServing runs each fixture's Responses and Messages code,
// patched and not, with the same fake engine output
// (testdata/python/drive_endpoints.py): timings sit exactly on the body
// llama-swap reads (the response; a stream's terminal event, beside type
// and response; the message; the message_delta event) and nowhere else,
// have the driver's exact values, agree with the endpoint's usage in its
// meaning, come from the request's clock without stats (absent where the
// driver runs no output processor) and are absent for a tool loop's several engine
// requests, and the bodies are otherwise unchanged.
func TestEndpointServing(t *testing.T) {
	py := requireTool(t, "python3")
	testtree.RequirePythonModule(t, py, "pydantic")
	for _, fx := range endpointFixtures {
		t.Run(fx.name, func(t *testing.T) {
			t.Parallel()
			before := driveEndpoints(t, py, fixture(t, fx.name))
			var after map[string][]map[string]any
			if err := json.Unmarshal(drivePatchedEndpoints(t, py, fx), &after); err != nil {
				t.Fatal(err)
			}
			checkEndpointBodies(t, fx, before, after)
		})
	}
}

// The driver's engine: 10 prompt tokens, 4 cached, 3 generated; scheduled
// at 100.0, first token at 100.25, then one every 50 ms.
var endpointWant = map[string]float64{
	"prompt_n": 6, "prompt_ms": 250, "prompt_per_token_ms": 250.0 / 6, "prompt_per_second": 24,
	"predicted_n": 3, "predicted_ms": 100, "predicted_per_token_ms": 100.0 / 3, "predicted_per_second": 30, "cache_n": 4,
}

func checkEndpointBodies(t *testing.T, fx endpointFixture, before, after map[string][]map[string]any) {
	t.Helper()
	drv := after["_driver"][0]
	if drv["responses"] != true || drv["responses_stream"] != fx.stream || drv["messages"] != (fx.messages != "") {
		t.Fatalf("driver found %v; fixture says stream=%v messages=%q", drv, fx.stream, fx.messages)
	}
	delete(before, "_driver")
	delete(after, "_driver")
	if len(after) != len(before) || len(after) == 0 {
		t.Fatalf("%d scenarios patched, %d unpatched", len(after), len(before))
	}
	for name, bodies := range after {
		// Which body must carry timings: -1 for none.
		at := -1
		switch {
		case strings.Contains(name, "no_stats") && drv["processor"] != true, strings.Contains(name, "tool_loop"):
			// Without stats the timings come from the request's clock,
			// which the patched output processor keeps: none where the
			// driver does not run one.
		case strings.HasPrefix(name, "responses_stream"):
			at = len(bodies) - 1
			wantType := "response.completed"
			if fx.incomplete && strings.HasSuffix(name, "incomplete") {
				wantType = "response.incomplete"
			}
			if bodies[at]["type"] != wantType {
				t.Errorf("%s: the stream ends with %v, want %s", name, bodies[at]["type"], wantType)
			}
		case strings.HasPrefix(name, "messages_stream"):
			for i, b := range bodies {
				if b["type"] == "message_delta" {
					at = i
				}
			}
		default: // full responses and messages
			at = 0
		}
		got := -1
		for i, b := range bodies {
			// A Responses stream's terminal event carries the same timings
			// inside its response (for the openai SDK's stream helper) as
			// at its top level (for llama-swap); no other event has them.
			resp, _ := b["response"].(map[string]any)
			inner, innerOK := resp["timings"]
			delete(resp, "timings")
			tm, ok := b["timings"].(map[string]any)
			if innerOK && (!ok || !strings.HasPrefix(name, "responses_stream") || !cmp.Equal(inner, any(tm))) {
				t.Errorf("%s: event %d carries timings %v inside its response, %v at its top level", name, i, inner, b["timings"])
			}
			if ok && strings.HasPrefix(name, "responses_stream") && !innerOK {
				t.Errorf("%s: event %d carries timings at its top level but not inside its response", name, i)
			}
			if !ok {
				continue
			}
			if got >= 0 {
				t.Errorf("%s: timings on bodies %d and %d", name, got, i)
			}
			got = i
			for k, v := range endpointWant {
				if x, ok := tm[k].(float64); !ok || math.Abs(x-v) > 1e-6 {
					t.Errorf("%s: timings[%s] = %v, want %v", name, k, tm[k], v)
				}
			}
			if len(tm) != len(endpointWant) {
				t.Errorf("%s: timings has %d fields: %v", name, len(tm), tm)
			}
			checkEndpointUsage(t, name, tm, b)
			delete(b, "timings")
		}
		if got != at {
			t.Errorf("%s: timings on body %d, want %d", name, got, at)
		}
		if diff := cmp.Diff(before[name], bodies); diff != "" {
			t.Errorf("%s: patched bodies differ beyond timings (-unpatched +patched):\n%s", name, diff)
		}
	}
}

// checkEndpointUsage: Responses' input_tokens counts the cached tokens,
// Messages' usage here (vLLM before v0.24's) too; v0.10.0 reports
// chat-style usage.
func checkEndpointUsage(t *testing.T, name string, tm, body map[string]any) {
	t.Helper()
	u, _ := body["usage"].(map[string]any)
	if r, ok := body["response"].(map[string]any); ok {
		u, _ = r["usage"].(map[string]any)
	}
	in, out := u["input_tokens"], u["output_tokens"]
	if in == nil {
		in, out = u["prompt_tokens"], u["completion_tokens"]
	}
	if tm["prompt_n"].(float64)+tm["cache_n"].(float64) != in || tm["predicted_n"] != out {
		t.Errorf("%s: timings %v disagree with usage %v", name, tm, u)
	}
	if d, ok := u["input_tokens_details"].(map[string]any); ok && d["cached_tokens"] != tm["cache_n"] {
		t.Errorf("%s: cache_n %v, usage's cached_tokens %v", name, tm["cache_n"], d["cached_tokens"])
	}
}

func driveEndpoints(t *testing.T, py, site string) map[string][]map[string]any {
	t.Helper()
	out := driveEndpointsRaw(t, py, site)
	var res map[string][]map[string]any
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	return res
}

var drivenEndpoints sync.Map // fixture name → drive_endpoints.py's output on it, patched

// drivePatchedEndpoints is drive_endpoints.py's output on a freshly
// patched copy of fx, once per test process.
func drivePatchedEndpoints(t *testing.T, py string, fx endpointFixture) []byte {
	t.Helper()
	if out, ok := drivenEndpoints.Load(fx.name); ok {
		return out.([]byte)
	}
	site := fixture(t, fx.name)
	if _, err := open(t, site).Apply(); err != nil {
		t.Fatal(err)
	}
	out := driveEndpointsRaw(t, py, site)
	drivenEndpoints.Store(fx.name, out)
	return out
}

func driveEndpointsRaw(t *testing.T, py, site string) []byte {
	t.Helper()
	cmd := exec.Command(py, filepath.Join("testdata", "python", "drive_endpoints.py"), site)
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("drive_endpoints.py %s: %v\n%s", site, err, ee.Stderr)
		}
		t.Fatal(err)
	}
	return out
}

// TestResponsesNeedTheChatPartBeforeV0_11_1 shows why chat is the part that
// must fit: on v0.10's shape the Responses timings come from the chat
// part's output-processor edit; without it there are none.
func TestResponsesNeedTheChatPartBeforeV0_11_1(t *testing.T) {
	py := requireTool(t, "python3")
	testtree.RequirePythonModule(t, py, "pydantic")
	site := fixture(t, "endpoints-v0.10.2")
	if _, err := open(t, site).Apply(); err != nil {
		t.Fatal(err)
	}
	replaceIn(t, filepath.Join(site, outputProcessor), "_llamacpp_timings.link_metrics(request_output, req_state.stats)", "pass")
	replaceIn(t, filepath.Join(site, outputProcessor), "_llamacpp_timings.link_clock(request_output, req_state._llamacpp_clock)", "pass")
	for name, bodies := range driveEndpoints(t, py, site) {
		for i, b := range bodies {
			if _, ok := b["timings"]; ok {
				t.Errorf("%s: body %d has timings without the chat part's output-processor edit", name, i)
			}
		}
	}
}

// TestPartialFit: a vLLM whose Responses code moved while chat and
// Messages fit. With Options.AllParts nothing is planned or written and
// the error is ExitPartial, naming the part; by default the other parts
// are applied, each file whole, and Responses is left alone; status
// reports the part.
func TestPartialFit(t *testing.T) {
	site := fixture(t, "endpoints-packages")
	replaceIn(t, filepath.Join(site, responsesServing), "_increment_sequence_number_and_return", "_bump")
	before := hash(t, site)
	unpatchedResponses := readFile(t, filepath.Join(site, responsesServing))

	strict, err := Open(Options{Find: find.Options{Dir: filepath.Join(site, "vllm")}, AllParts: true})
	if err != nil {
		t.Fatal(err)
	}
	if c := part(t, strict, "responses"); c.Chosen != nil || !c.Served() || !strings.Contains(c.Why, `the closest, "responses-packages", matches 3 of 4 anchors`) {
		t.Fatalf("responses: chosen %v, served %v, why %q", c.Chosen, c.Served(), c.Why)
	}
	_, err = strict.Apply()
	var xe *exit.Error
	if !errors.As(err, &xe) || xe.Code != ExitPartial {
		t.Fatalf("apply: %v, want exit %d", err, ExitPartial)
	}
	// The data the command words (cmd's parts.txtar holds the words).
	var pe *PartialError
	if !errors.As(err, &pe) || len(pe.Parts) != 1 || pe.Parts[0].Part != "responses" || pe.Parts[0].Closest.Name != "responses-packages" {
		t.Fatalf("apply: %#v, want a PartialError naming responses and its closest set", err)
	}
	if d := pe.Parts[0].Diagnostics.Error(); !strings.Contains(d, `"stream-terminal-event"`) {
		t.Errorf("the closest set's failures lack \"stream-terminal-event\": %s", d)
	}
	if !strings.Contains(err.Error(), "nothing was changed") {
		t.Errorf("error lacks %q:\n%s", "nothing was changed", err)
	}
	if err := strict.Diff(&bytes.Buffer{}); !errors.As(err, &xe) || xe.Code != ExitPartial {
		t.Errorf("diff: %v, want exit %d", err, ExitPartial)
	}
	strict.Close()
	if after := hash(t, site); after != before {
		t.Fatal("a refused apply changed the tree")
	}

	s := open(t, site)
	var diff bytes.Buffer
	if err := s.Diff(&diff); err != nil || !strings.Contains(diff.String(), messagesServing) || strings.Contains(diff.String(), responsesServing) {
		t.Errorf("default diff (err %v) should hold the parts that fit and not %s:\n%s", err, responsesServing, diff.String())
	}
	done, err := s.Apply()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"created " + module, "patched " + chatServing, "patched " + cmplServing, "patched " + outputProcessor, "patched " + messagesServing}
	if diff := cmp.Diff(want, done); diff != "" {
		t.Errorf("partial apply (-want +got):\n%s", diff)
	}
	if got := readFile(t, filepath.Join(site, responsesServing)); got != unpatchedResponses {
		t.Error("the part that does not fit was changed")
	}
	st := open(t, site).Status()
	if st.State != Patched || len(st.Parts) != 2 || st.Parts[0].State != PartUnfit || st.Parts[1].State != PartFits {
		t.Errorf("status: %s, parts %+v", st.State, st.Parts)
	}
}

// TestPartsMustNotShareFiles: a user's set for another part that edits a
// file the chat set edits is refused before anything is planned to disk.
func TestPartsMustNotShareFiles(t *testing.T) {
	site := fixture(t, "endpoints-packages")
	hcl := filepath.Join(t.TempDir(), "clash.hcl")
	writeFile(t, hcl, `patchset "clash" {
  part = "responses"
  file "`+chatServing+`" {
    edit "x" {
      at   = "after_imports"
      code = "CLASH = 1"
    }
  }
}
`)
	s := open(t, site, hcl)
	before := hash(t, site)
	_, err := s.Apply()
	var xe *exit.Error
	if !errors.As(err, &xe) || xe.Code != ExitDisagree || !strings.Contains(err.Error(), chatServing) {
		t.Fatalf("apply: %v, want exit %d naming %s", err, ExitDisagree, chatServing)
	}
	if after := hash(t, site); after != before {
		t.Errorf("apply that refused changed the tree: hash %s, want %s", after, before)
	}
}

// TestUserSetForOnePart: a user's set of one part is tried before the
// embedded ones of that part only; the other parts keep their embedded sets.
func TestUserSetForOnePart(t *testing.T) {
	site := fixture(t, "endpoints-packages")
	src, ok := mustLibrary(t).Source("responses-packages")
	if !ok {
		t.Fatal("no source for responses-packages")
	}
	start := bytes.Index(src, []byte(`patchset "responses-packages"`))
	hcl := filepath.Join(t.TempDir(), "mine.hcl")
	writeFile(t, hcl, strings.Replace(string(src[start:]), `"responses-packages"`, `"mine"`, 1))
	s := open(t, site, hcl)
	if s.Sel.Chosen.Set.Name != "openai-packages-raw-stream" || part(t, s, "responses").Chosen.Set.Name != "mine" ||
		part(t, s, "messages").Chosen.Set.Name != "messages-package" {
		t.Errorf("chosen: chat %s, responses %s, messages %s", s.Sel.Chosen.Set.Name,
			part(t, s, "responses").Chosen.Set.Name, part(t, s, "messages").Chosen.Set.Name)
	}
	if p := part(t, s, "responses").Chosen.Set.Part; p != "responses" {
		t.Errorf("the copied set's part is %q", p)
	}
	if spec.DefaultPart != s.Sel.Chosen.Set.Part {
		t.Errorf("chat set's part %q", s.Sel.Chosen.Set.Part)
	}
}

func mustLibrary(t *testing.T) *Library {
	t.Helper()
	lib, err := LoadLibrary(nil, "")
	if err != nil {
		t.Fatal(err)
	}
	return lib
}
