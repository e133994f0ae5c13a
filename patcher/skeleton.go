package patcher

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/vllm-timings/vllm-timings/patcher/edit"
	"github.com/vllm-timings/vllm-timings/patcher/exit"
	"github.com/vllm-timings/vllm-timings/patcher/spec"
)

// Skeleton is a patch set for the user to adapt: the HCL text of c, one of
// the closest sets, renamed for this vLLM, with a comment above every
// anchor that did not match saying what was wanted and which statements
// come closest. It parses as it is, and fails on this vLLM exactly as the
// original does until the user changes those anchors, so an unread
// skeleton never patches anything.
func (d *Diagnosis) Skeleton(c *SetPlan) ([]byte, error) {
	src, ok := d.lib.source(c.Set.Source)
	if !ok {
		return nil, errorf(exit.Internal, "no source for patch set %q", c.Set.Name)
	}
	f, diags := hclsyntax.ParseConfig(src, c.Set.Source, hcl.InitialPos)
	if diags.HasErrors() {
		return nil, errorf(exit.Internal, "re-reading %s: %s", c.Set.Source, diags.Error())
	}
	var blk *hclsyntax.Block
	for _, b := range f.Body.(*hclsyntax.Body).Blocks {
		if b.Type == "patchset" && len(b.Labels) == 1 && b.Labels[0] == c.Set.Name {
			blk = b
		}
	}
	if blk == nil {
		return nil, errorf(exit.Internal, "patch set %q not found in %s", c.Set.Name, c.Set.Source)
	}
	version := d.Install.Version
	r := &hclRewriter{src: src, base: blk.Range().Start.Byte}
	name := skeletonName(version)
	if c.Set.Part != spec.DefaultPart {
		name += "-" + c.Set.Part // one skeleton per part can share a file
	}
	r.replace(blk.LabelRanges[0], fmt.Sprintf("%q", name))
	desc := fmt.Sprintf("adapted from %q for vLLM %s (vllm-timings doctor)", c.Set.Name, version)
	covers := fmt.Sprintf("[%q]", "vllm "+version)
	attrs := blk.Body.Attributes
	if a, ok := attrs["description"]; ok {
		r.replace(a.Expr.Range(), fmt.Sprintf("%q", desc))
	} else {
		r.afterOpen(blk, fmt.Sprintf("description = %q", desc))
	}
	if a, ok := attrs["covers"]; ok {
		r.replace(a.Expr.Range(), covers)
	} else {
		r.afterOpen(blk, "covers = "+covers)
	}
	files := map[string]*FilePlan{}
	for i := range c.Files {
		files[c.Files[i].Path] = &c.Files[i]
	}
	for _, fb := range blk.Body.Blocks {
		if fb.Type != "file" || len(fb.Labels) != 1 {
			continue
		}
		fp := files[fb.Labels[0]]
		if fp == nil {
			continue
		}
		switch fp.problem {
		case problemNoFile:
			note := []string{"vllm-timings doctor: this file does not exist in vLLM " + version + "."}
			if where := d.elsewhere[fp]; len(where) > 0 {
				note = append(note, "The classes its anchors name are now in: "+strings.Join(where, ", "), "Change the path above to the one that holds this code, and check every anchor there.")
			} else {
				note = append(note, "Find where this code lives now (grep -rn \"class \" in the vllm package) and change the path above.")
			}
			r.afterOpen(fb, note...)
		case problemFile:
			r.afterOpen(fb, "vllm-timings doctor: "+fp.detail)
		}
		anchors := map[string]anchorResult{}
		for _, a := range fp.anchors {
			anchors[a.Name] = a
		}
		for _, eb := range fb.Body.Blocks {
			if (eb.Type != "edit" && eb.Type != "require") || len(eb.Labels) != 1 {
				continue
			}
			a, ok := anchors[eb.Labels[0]]
			if !ok || a.Problem == "" || a.Problem == problemNoFile {
				continue
			}
			note := []string{fmt.Sprintf("vllm-timings doctor: %s in vLLM %s: %s.", a.Problem, version, a.Detail)}
			if len(a.Candidates) > 0 {
				what := "statements"
				if a.ScopeMissing {
					what = "defs and classes"
				}
				kind := "edit"
				if a.Require {
					kind = "require"
				}
				note = append(note, "Closest "+what+" (line: text [in]); pick the one this "+kind+" belongs at,", "read the code around it, and change in/after/match below to select it:")
				for _, cand := range a.Candidates {
					in := ""
					if cand.In != "" {
						in = "  [in " + cand.In + "]"
					}
					note = append(note, fmt.Sprintf("  %d: %s%s", cand.Line, cand.Text, in))
				}
			}
			r.afterOpen(eb, note...)
		}
	}
	body, err := edit.Apply(src[blk.Range().Start.Byte:blk.Range().End.Byte], r.edits)
	if err != nil {
		return nil, errorf(exit.Internal, "writing the skeleton of %q: %v", c.Set.Name, err)
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, `# A patch set to adapt for vLLM %s, written by "vllm-timings doctor"
# from the patch set %q (%s).
#
# Comments that start "vllm-timings doctor:" mark each anchor that does not
# match this vLLM, with the statements that come closest. Change those
# anchors (in, after, match) to select the right statement, read the vLLM
# code around it to be sure the inserted code still fits there (the names
# it uses must exist), then check and use the set:
#
#   vllm-timings apply --dry-run --patchset THIS_FILE
#   vllm-timings apply --patchset THIS_FILE
#
# As written, it fails on this vLLM exactly as the set it comes from
# does, so it patches nothing until it is adapted.
`, version, c.Set.Name, c.Set.Source)
	b.Write(body)
	b.WriteString("\n")
	return b.Bytes(), nil
}

// skeletonName is a valid patch set name for a version string.
func skeletonName(version string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(version) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-' {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	return "my-vllm-" + strings.Trim(b.String(), "-.")
}

// hclRewriter collects the edits that turn a patchset block of src, which
// starts at byte base, into a skeleton. Offsets in its edits are relative
// to base.
type hclRewriter struct {
	src   []byte
	base  int
	edits []edit.Edit
}

func (r *hclRewriter) replace(rng hcl.Range, text string) {
	r.edits = append(r.edits, edit.Edit{Start: rng.Start.Byte - r.base, End: rng.End.Byte - r.base, New: text})
}

// afterOpen inserts comment lines (or, for an attribute, that line) right
// after the line that opens a block, at the indentation of its body.
func (r *hclRewriter) afterOpen(b *hclsyntax.Block, lines ...string) {
	at := b.OpenBraceRange.End.Byte
	if i := bytes.IndexByte(r.src[at:], '\n'); i >= 0 {
		at += i + 1
	}
	lineStart := bytes.LastIndexByte(r.src[:b.TypeRange.Start.Byte], '\n') + 1
	indent := string(r.src[lineStart:b.TypeRange.Start.Byte]) + "  "
	var t strings.Builder
	for _, l := range lines {
		if strings.HasPrefix(l, "description =") || strings.HasPrefix(l, "covers =") {
			t.WriteString(indent + l + "\n")
			continue
		}
		t.WriteString(strings.TrimRight(indent+"# "+l, " ") + "\n")
	}
	r.edits = append(r.edits, edit.Edit{Start: at - r.base, End: at - r.base, New: t.String()})
}
