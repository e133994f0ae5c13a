package patcher

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestRequireBlocks: a require counts as an anchor when it matches, inserts
// nothing, and keeps its set from fitting when it does not.
func TestRequireBlocks(t *testing.T) {
	site := fixture(t, "openai-packages")
	dir := t.TempDir()
	set := func(name, filter string) string {
		p := filepath.Join(dir, name+".hcl")
		writeFile(t, p, `patchset "`+name+`" {
  file "vllm/entrypoints/openai/chat_completion/serving.py" {
    require "shape" {
      in    = "OpenAIServingChat.chat_completion_full_generator"
      match = "response = ChatCompletionResponse("
      `+filter+`
    }
    edit "mark" {
      in    = "OpenAIServingChat"
      match = "def __init__("
      at    = "body_start"
      code  = "self.marked = 1"
    }
  }
}
`)
		return p
	}

	s := open(t, site, set("fits", `contains = "system_fingerprint=self.system_fingerprint"`))
	if s.Sel.Chosen == nil || s.Sel.Chosen.Set.Name != "fits" || s.Sel.Chosen.Anchors != 2 {
		t.Fatalf("chosen %+v, want set fits with 2 anchors", s.Sel.Chosen)
	}
	if n := s.Sel.Chosen.Files[0].Edits; n != 1 {
		t.Errorf("%d insertions, want 1 (a require inserts nothing)", n)
	}

	s = open(t, site, set("nofit", `lacks = "usage=usage"`))
	var c *SetPlan
	for _, p := range s.Sel.Candidates {
		if p.Set.Name == "nofit" {
			c = p
		}
	}
	if c == nil || c.fits() || len(c.Failures) != 1 || c.Code != ExitMissing {
		t.Fatalf("candidate %+v, want one ExitMissing failure", c)
	}
	d := c.Failures[0]
	for _, m := range []string{`Require "shape" of patch set "nofit"`, `no statement starting "response = ChatCompletionResponse(" without "usage=usage" in OpenAIServingChat.chat_completion_full_generator`} {
		if !strings.Contains(d.Detail, m) {
			t.Errorf("detail lacks %q: %s", m, d.Detail)
		}
	}
	if d.Summary != "Required statement not found" || d.Subject.Start.Line != 3 {
		t.Errorf("diagnostic %q at line %d", d.Summary, d.Subject.Start.Line)
	}
}
