package spec

import (
	"strings"
	"testing"
	"testing/fstest"

	"github.com/vllm-timings/vllm-timings/patcher/pysrc"
)

const good = `
patchset "mine" {
  description = "test"
  covers      = ["0.1"]
  file "vllm/_mod.py" {
    create = builtin("mod.py")
  }
  file "vllm/a.py" {
    edit "one" {
      in    = "A.f"
      after = "x = 1"
      match = "y = f("
      at    = "after"
      code  = <<-PY
        if y:
            z = 2
      PY
    }
    edit "two" {
      regex      = "^return\\b"
      at         = "before"
      on_missing = "skip"
      code       = "pass"
    }
  }
}
`

func TestParseGood(t *testing.T) {
	sets, diags := Parse("mine.hcl", []byte(good), Assets{Builtin: fstest.MapFS{"mod.py": {Data: []byte("X = 1")}}})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	if len(sets) != 1 || len(sets[0].Files) != 2 {
		t.Fatalf("got %+v", sets)
	}
	s := sets[0]
	if s.Part != DefaultPart {
		t.Errorf("part = %q, want the default %q", s.Part, DefaultPart)
	}
	if c := s.Files[0].Create; c == nil || *c != "X = 1\n" {
		t.Errorf("create = %v", c)
	}
	e := s.Files[1].Edits[0]
	if e.Anchor.Scope != "A.f" || e.Anchor.After != "x = 1" || e.Anchor.Match != "y = f(" || e.Anchor.At != pysrc.After {
		t.Errorf("anchor = %+v", e.Anchor)
	}
	if e.Code != "if y:\n    z = 2\n" {
		t.Errorf("code = %q", e.Code)
	}
	if e.Range.Start.Line != 9 {
		t.Errorf("edit range starts at line %d, want 9", e.Range.Start.Line)
	}
	e2 := s.Files[1].Edits[1]
	if !e2.Optional || e2.Anchor.Regex == nil || !e2.Anchor.Regex.MatchString("return x") {
		t.Errorf("second edit = %+v", e2)
	}
}

func TestParseRequire(t *testing.T) {
	src := `
patchset "guarded" {
  file "vllm/v1/engine/output_processor.py" {
    require "old-shape" {
      in    = "RequestState._new_request_output"
      match = "return RequestOutput("
      lacks = "metrics="
    }
    edit "e" {
      match    = "x = f("
      contains = "y=1"
      at       = "after"
      code     = "pass"
    }
  }
  file "vllm/a.py" {
    require "only" {
      regex    = "^def f\\("
      contains = "self"
    }
  }
}
`
	sets, diags := Parse("g.hcl", []byte(src), Assets{})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	f := sets[0].Files[0]
	if len(f.Requires) != 1 || len(f.Edits) != 1 {
		t.Fatalf("file = %+v", f)
	}
	q := f.Requires[0]
	if q.Name != "old-shape" || q.Anchor.Scope != "RequestState._new_request_output" || q.Anchor.Match != "return RequestOutput(" || q.Anchor.Lacks != "metrics=" || q.Range.Start.Line != 4 {
		t.Errorf("require = %+v", q)
	}
	if f.Edits[0].Anchor.Contains != "y=1" {
		t.Errorf("edit anchor = %+v", f.Edits[0].Anchor)
	}
	only := sets[0].Files[1].Requires[0]
	if only.Anchor.Regex == nil || !only.Anchor.Regex.MatchString("def f(self):") || only.Anchor.Contains != "self" {
		t.Errorf("regex require = %+v", only)
	}
	if got := sets[0].Targets(); len(got) != 2 {
		t.Errorf("targets = %v", got)
	}
}

// TestParseErrors: every mistake is a diagnostic at the right line, with a
// summary and a detail that says what to do.
func TestParsePart(t *testing.T) {
	src := "patchset \"r\" {\n  part = \"responses\"\n  file \"vllm/a.py\" {\n    create = \"x\"\n  }\n}\n"
	sets, diags := Parse("r.hcl", []byte(src), Assets{Builtin: fstest.MapFS{}})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	if sets[0].Part != "responses" {
		t.Errorf("part = %q, want responses", sets[0].Part)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, src, summary, detail string
		line                       int
	}{
		{"syntax", "patchset \"x\" {\n  file = \n}\n", "Invalid expression", "", 2},
		{"no patchset", "# empty\n", "No patch set", "patchset \"my-vllm\"", 1},
		{"unknown attribute", "patchset \"x\" {\n  file \"vllm/a.py\" {\n    edit \"e\" {\n      mach = \"y\"\n      at = \"after\"\n      code = \"x\"\n    }\n  }\n}\n", "Unsupported argument", "mach", 4},
		{"unknown position", "patchset \"x\" {\n  file \"vllm/a.py\" {\n    edit \"e\" {\n      match = \"y\"\n      at = \"aftr\"\n      code = \"x\"\n    }\n  }\n}\n", "Unknown position", `Did you mean "after"?`, 5},
		{"no match", "patchset \"x\" {\n  file \"vllm/a.py\" {\n    edit \"e\" {\n      at = \"after\"\n      code = \"x\"\n    }\n  }\n}\n", "Anchor needs one statement", "exactly one of match", 3},
		{"bad path", "patchset \"x\" {\n  file \"../etc/passwd\" {\n    edit \"e\" {\n      match = \"y\"\n      at = \"after\"\n      code = \"x\"\n    }\n  }\n}\n", "Invalid file path", "starting with \"vllm/\"", 2},
		{"bad regex", "patchset \"x\" {\n  file \"vllm/a.py\" {\n    edit \"e\" {\n      regex = \"(\"\n      at = \"after\"\n      code = \"x\"\n    }\n  }\n}\n", "Invalid regular expression", "missing closing )", 4},
		{"empty code", "patchset \"x\" {\n  file \"vllm/a.py\" {\n    edit \"e\" {\n      match = \"y\"\n      at = \"after\"\n      code = \"  \"\n    }\n  }\n}\n", "Empty code", "at least one line", 6},
		{"bad on_missing", "patchset \"x\" {\n  file \"vllm/a.py\" {\n    edit \"e\" {\n      match = \"y\"\n      at = \"after\"\n      code = \"x\"\n      on_missing = \"ignore\"\n    }\n  }\n}\n", "Unknown on_missing", "\"skip\"", 7},
		{"duplicate edit", "patchset \"x\" {\n  file \"vllm/a.py\" {\n    edit \"e\" {\n      match = \"y\"\n      at = \"after\"\n      code = \"x\"\n    }\n    edit \"e\" {\n      match = \"z\"\n      at = \"after\"\n      code = \"x\"\n    }\n  }\n}\n", "Duplicate edit name", "unique", 8},
		{"missing builtin", "patchset \"x\" {\n  file \"vllm/m.py\" {\n    create = builtin(\"nope.py\")\n  }\n}\n", "Error in function call", "nope.py", 3},
		{"empty set", "patchset \"x\" {\n}\n", "Empty patch set", "file block", 1},
		{"require without statement", "patchset \"x\" {\n  file \"vllm/a.py\" {\n    require \"r\" {\n      lacks = \"y\"\n    }\n  }\n}\n", "Anchor needs one statement", "exactly one of match", 3},
		{"require with code", "patchset \"x\" {\n  file \"vllm/a.py\" {\n    require \"r\" {\n      match = \"y\"\n      code = \"x\"\n    }\n  }\n}\n", "Unsupported argument", "code", 5},
		{"require and create", "patchset \"x\" {\n  file \"vllm/a.py\" {\n    create = \"x\"\n    require \"r\" {\n      match = \"y\"\n    }\n  }\n}\n", "Create and edit together", "not both", 2},
		{"require name clash", "patchset \"x\" {\n  file \"vllm/a.py\" {\n    edit \"e\" {\n      match = \"y\"\n      at = \"after\"\n      code = \"x\"\n    }\n    require \"e\" {\n      match = \"z\"\n    }\n  }\n}\n", "Duplicate edit name", "unique", 8},
		{"bad part", "patchset \"x\" {\n  part = \"Responses API\"\n  file \"vllm/a.py\" {\n    create = \"x\"\n  }\n}\n", "Invalid part", "lower-case name", 1},
		{"filter on after_imports", "patchset \"x\" {\n  file \"vllm/a.py\" {\n    edit \"e\" {\n      lacks = \"y\"\n      at = \"after_imports\"\n      code = \"x\"\n    }\n  }\n}\n", "Anchor takes no statement", "lacks", 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, diags := Parse("bad.hcl", []byte(tt.src), Assets{Builtin: fstest.MapFS{}})
			if !diags.HasErrors() {
				t.Fatal("no error")
			}
			d := diags[0]
			if d.Summary != tt.summary || !strings.Contains(d.Detail, tt.detail) {
				t.Errorf("got %q / %q, want %q / containing %q", d.Summary, d.Detail, tt.summary, tt.detail)
			}
			if d.Subject == nil || d.Subject.Filename != "bad.hcl" || d.Subject.Start.Line != tt.line {
				t.Errorf("subject %v, want bad.hcl line %d", d.Subject, tt.line)
			}
		})
	}
}

func TestDedent(t *testing.T) {
	got := dedent("\n    a\n\n      b\n    c  \n")
	if got != "a\n\n  b\nc\n" {
		t.Errorf("dedent = %q", got)
	}
}
