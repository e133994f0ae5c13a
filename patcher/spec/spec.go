// Package spec reads patch sets written in HCL.
//
// See the patcher package documentation for the language. Everything wrong
// in a patch set is reported as an hcl.Diagnostic with the range of the
// offending text, so a message points at the line of the .hcl file.
package spec

import (
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"

	"github.com/vllm-timings/vllm-timings/patcher/pysrc"
)

// DefaultPart is the part a patch set patches unless it says otherwise:
// /v1/chat/completions and /v1/completions.
const DefaultPart = "chat"

// PatchSet is one named, self-contained set of file edits.
type PatchSet struct {
	Name        string
	Part        string // the endpoints it patches: DefaultPart, "responses", "messages", ...
	Description string
	Covers      []string // vLLM versions or images the set was written and checked for
	Source      string   // where it came from: "embedded:NAME.hcl" or a file path
	Embedded    bool
	Files       []File
	Range       hcl.Range // the patchset block's header
}

// Origin is where the set came from as messages name it: "embedded", or
// the .hcl file it was loaded from.
func (p *PatchSet) Origin() string {
	if p.Embedded {
		return "embedded"
	}
	return p.Source
}

// File is one file a patch set creates or edits, relative to the directory
// that holds the vllm package (so it starts with "vllm/").
type File struct {
	Path     string
	Create   *string // full content of a file the patch set owns, or nil
	Edits    []Edit
	Requires []Require
	Range    hcl.Range
}

// Require is an anchor that must match exactly once for the set to fit,
// and inserts nothing. It tells versions apart whose edits would otherwise
// match alike (say, one where vLLM already passes a value the patch would
// add).
type Require struct {
	Name   string
	Anchor pysrc.Anchor
	Range  hcl.Range
}

// Edit inserts Code at the place its anchor names.
type Edit struct {
	Name      string
	Anchor    pysrc.Anchor
	Code      string // dedented, ends with a newline
	Optional  bool   // on_missing = "skip"
	Range     hcl.Range
	CodeRange hcl.Range
}

// Targets lists the relative paths of every file the set creates or edits.
func (p *PatchSet) Targets() []string {
	out := make([]string, len(p.Files))
	for i, f := range p.Files {
		out[i] = f.Path
	}
	return out
}

type rawFile struct {
	PatchSets []rawPatchSet `hcl:"patchset,block"`
}

type rawPatchSet struct {
	Name        string         `hcl:"name,label"`
	Part        string         `hcl:"part,optional"`
	Description string         `hcl:"description,optional"`
	Covers      []string       `hcl:"covers,optional"`
	Files       []rawFileBlock `hcl:"file,block"`
	DefRange    hcl.Range      `hcl:",def_range"`
}

type rawFileBlock struct {
	Path     string       `hcl:"path,label"`
	Create   *string      `hcl:"create,optional"`
	Edits    []rawEdit    `hcl:"edit,block"`
	Requires []rawRequire `hcl:"require,block"`
	DefRange hcl.Range    `hcl:",def_range"`
}

type rawRequire struct {
	Name     string    `hcl:"name,label"`
	In       string    `hcl:"in,optional"`
	After    string    `hcl:"after,optional"`
	Match    string    `hcl:"match,optional"`
	Regex    string    `hcl:"regex,optional"`
	Contains string    `hcl:"contains,optional"`
	Lacks    string    `hcl:"lacks,optional"`
	DefRange hcl.Range `hcl:",def_range"`
	Body     hcl.Body  `hcl:",body"`
}

type rawEdit struct {
	Name      string    `hcl:"name,label"`
	In        string    `hcl:"in,optional"`
	After     string    `hcl:"after,optional"`
	Match     string    `hcl:"match,optional"`
	Regex     string    `hcl:"regex,optional"`
	Contains  string    `hcl:"contains,optional"`
	Lacks     string    `hcl:"lacks,optional"`
	At        string    `hcl:"at"`
	Code      string    `hcl:"code"`
	OnMissing string    `hcl:"on_missing,optional"`
	DefRange  hcl.Range `hcl:",def_range"`
	Body      hcl.Body  `hcl:",body"`
}

// Assets are files a patch set can read with builtin("name") (the embedded
// assets of vllm-timings) and file("path") (relative to the .hcl file).
type Assets struct {
	Builtin fs.FS // builtin("x") reads x from here
	Local   fs.FS // file("x") reads x from here; nil disables file()
}

// Parse reads the patch sets in one HCL file. filename is used in
// diagnostics; src is its content.
func Parse(filename string, src []byte, assets Assets) ([]*PatchSet, hcl.Diagnostics) {
	f, diags := hclsyntax.ParseConfig(src, filename, hcl.InitialPos)
	if diags.HasErrors() {
		return nil, diags
	}
	ctx := &hcl.EvalContext{Functions: map[string]function.Function{
		"builtin": readFunc("builtin", assets.Builtin),
		"file":    readFunc("file", assets.Local),
	}}
	var raw rawFile
	if d := gohcl.DecodeBody(f.Body, ctx, &raw); d.HasErrors() {
		return nil, append(diags, d...)
	}
	if len(raw.PatchSets) == 0 {
		return nil, hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "No patch set",
			Detail:   "The file declares no patchset block. Start it with: patchset \"my-vllm\" { ... }",
			Subject:  &hcl.Range{Filename: filename, Start: hcl.InitialPos, End: hcl.InitialPos},
		}}
	}
	var sets []*PatchSet
	for _, r := range raw.PatchSets {
		ps, d := convert(r, filename)
		diags = append(diags, d...)
		sets = append(sets, ps)
	}
	if diags.HasErrors() {
		return nil, diags
	}
	return sets, diags
}

func readFunc(name string, fsys fs.FS) function.Function {
	return function.New(&function.Spec{
		Params: []function.Parameter{{Name: "path", Type: cty.String}},
		Type:   function.StaticReturnType(cty.String),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			p := args[0].AsString()
			if fsys == nil {
				return cty.NilVal, fmt.Errorf("%s() is not available here", name)
			}
			if !fs.ValidPath(p) {
				return cty.NilVal, fmt.Errorf("%s(%q): the path must be relative, with forward slashes and no \"..\"", name, p)
			}
			b, err := fs.ReadFile(fsys, p)
			if err != nil {
				return cty.NilVal, fmt.Errorf("%s(%q): %v", name, p, err)
			}
			return cty.StringVal(string(b)), nil
		},
	})
}

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`)

func convert(r rawPatchSet, filename string) (*PatchSet, hcl.Diagnostics) {
	b := newBlock(nil, r.DefRange)
	errAt := b.errAt
	ps := &PatchSet{Name: r.Name, Part: r.Part, Description: r.Description, Covers: r.Covers, Source: filename, Range: r.DefRange}
	if !nameRE.MatchString(r.Name) {
		errAt(r.DefRange, "Invalid patch set name", fmt.Sprintf("%q: use lower-case letters, digits, '.', '_' and '-', starting with a letter or digit.", r.Name))
	}
	if ps.Part == "" {
		ps.Part = DefaultPart
	} else if !nameRE.MatchString(ps.Part) {
		errAt(r.DefRange, "Invalid part", fmt.Sprintf("part = %q in patch set %q: a part is a lower-case name, for example \"responses\" (leave it out for "+
			"/v1/chat/completions and /v1/completions).", r.Part, r.Name))
	}
	if len(r.Files) == 0 {
		errAt(r.DefRange, "Empty patch set", "Add at least one file block: file \"vllm/...\" { edit \"name\" { ... } }.")
	}
	seenFile := map[string]bool{}
	for _, rf := range r.Files {
		f := File{Path: rf.Path, Create: rf.Create, Range: rf.DefRange}
		if p := path.Clean(rf.Path); p != rf.Path || !strings.HasPrefix(p, "vllm/") || strings.Contains(p, "..") || filepath.IsAbs(p) {
			errAt(rf.DefRange, "Invalid file path", fmt.Sprintf("%q: a target is a clean relative path inside the vllm package, starting with \"vllm/\", for example "+
				"\"vllm/entrypoints/openai/serving_chat.py\".", rf.Path))
		}
		if seenFile[rf.Path] {
			errAt(rf.DefRange, "Duplicate file block", fmt.Sprintf("%q appears twice in patch set %q; put all its edits in one file block.", rf.Path, r.Name))
		}
		seenFile[rf.Path] = true
		if rf.Create != nil && (len(rf.Edits) > 0 || len(rf.Requires) > 0) {
			errAt(rf.DefRange, "Create and edit together", "A file block either creates a file (create = ...) or edits an existing one (edit and require blocks), not both.")
		}
		if rf.Create == nil && len(rf.Edits) == 0 && len(rf.Requires) == 0 {
			errAt(rf.DefRange, "Nothing to do", "Give the file block a create attribute or at least one edit or require block.")
		}
		if rf.Create != nil && !strings.HasSuffix(*rf.Create, "\n") {
			c := *rf.Create + "\n"
			f.Create = &c
		}
		seenEdit := map[string]bool{}
		for _, re := range rf.Edits {
			e, d := convertEdit(re)
			b.diags = append(b.diags, d...)
			if seenEdit[re.Name] {
				errAt(re.DefRange, "Duplicate edit name", fmt.Sprintf("Edit %q appears twice in %s; names identify edits in markers and messages, so each must be unique in its file.", re.Name, rf.Path))
			}
			seenEdit[re.Name] = true
			f.Edits = append(f.Edits, e)
		}
		for _, rr := range rf.Requires {
			q, d := convertRequire(rr)
			b.diags = append(b.diags, d...)
			if seenEdit[rr.Name] {
				errAt(rr.DefRange, "Duplicate edit name", fmt.Sprintf("%q appears twice in %s; edit and require names identify anchors in messages, so each must be unique in its file.", rr.Name, rf.Path))
			}
			seenEdit[rr.Name] = true
			f.Requires = append(f.Requires, q)
		}
		ps.Files = append(ps.Files, f)
	}
	return ps, b.diags
}

// block collects the diagnostics of one HCL block and finds the range of
// an attribute in it, so a message points at the attribute's line and
// falls back to the block's header.
type block struct {
	attrs hcl.Attributes
	def   hcl.Range
	diags hcl.Diagnostics
}

func newBlock(body hcl.Body, def hcl.Range) *block {
	b := &block{def: def}
	if body != nil {
		b.attrs, _ = body.JustAttributes()
	}
	return b
}

func (b *block) rangeOf(name string) hcl.Range {
	if a, ok := b.attrs[name]; ok {
		return a.Range
	}
	return b.def
}

func (b *block) errAt(rng hcl.Range, summary, detail string) {
	b.diags = append(b.diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary, Detail: detail, Subject: &rng})
}

var editNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

func convertEdit(r rawEdit) (Edit, hcl.Diagnostics) {
	b := newBlock(r.Body, r.DefRange)
	rangeOf, errAt := b.rangeOf, b.errAt
	e := Edit{Name: r.Name, Range: r.DefRange, CodeRange: rangeOf("code")}
	if !editNameRE.MatchString(r.Name) {
		errAt(r.DefRange, "Invalid edit name", fmt.Sprintf("%q: use letters, digits, '.', '_' and '-'; the name is written into the marker comments.", r.Name))
	}
	at := pysrc.Position(r.At)
	valid := false
	for _, p := range pysrc.Positions {
		valid = valid || p == at
	}
	if !valid {
		names := make([]string, len(pysrc.Positions))
		for i, p := range pysrc.Positions {
			names[i] = string(p)
		}
		detail := fmt.Sprintf("at = %q is not a position. Use one of: %s.", r.At, strings.Join(names, ", "))
		if s := didYouMean(r.At, names); s != "" {
			detail = fmt.Sprintf("at = %q is not a position. Did you mean %q?", r.At, s)
		}
		errAt(rangeOf("at"), "Unknown position", detail)
	}
	e.Anchor = pysrc.Anchor{Scope: r.In, After: r.After, Match: r.Match, Contains: r.Contains, Lacks: r.Lacks, At: at}
	switch {
	case at == pysrc.AfterImports && (r.Match != "" || r.Regex != "" || r.After != "" || r.Contains != "" || r.Lacks != ""):
		errAt(r.DefRange, "Anchor takes no statement", "at = \"after_imports\" finds its place by itself; remove match, regex, after, contains and lacks.")
	case at != pysrc.AfterImports && valid && (r.Match == "") == (r.Regex == ""):
		errAt(r.DefRange, "Anchor needs one statement", "Give exactly one of match (a literal prefix of the statement's first line) or regex.")
	}
	e.Anchor.Regex = checkStatement(r.Match, r.Regex, b)
	switch r.OnMissing {
	case "", "fail":
	case "skip":
		e.Optional = true
	default:
		errAt(rangeOf("on_missing"), "Unknown on_missing", fmt.Sprintf("on_missing = %q: use \"fail\" (the default) or \"skip\".", r.OnMissing))
	}
	code := dedent(r.Code)
	if strings.TrimSpace(code) == "" {
		errAt(rangeOf("code"), "Empty code", "An edit must insert at least one line of Python.")
	}
	if strings.Contains(code, MarkerBegin) || strings.Contains(code, MarkerEnd) {
		errAt(rangeOf("code"), "Code contains a marker", "The inserted code must not contain vllm-timings' own marker comments.")
	}
	e.Code = code
	return e, b.diags
}

func convertRequire(r rawRequire) (Require, hcl.Diagnostics) {
	b := newBlock(r.Body, r.DefRange)
	errAt := b.errAt
	q := Require{Name: r.Name, Range: r.DefRange, Anchor: pysrc.Anchor{Scope: r.In, After: r.After, Match: r.Match, Contains: r.Contains, Lacks: r.Lacks}}
	if !editNameRE.MatchString(r.Name) {
		errAt(r.DefRange, "Invalid require name", fmt.Sprintf("%q: use letters, digits, '.', '_' and '-'.", r.Name))
	}
	if (r.Match == "") == (r.Regex == "") {
		errAt(r.DefRange, "Anchor needs one statement", "Give exactly one of match (a literal prefix of the statement's first line) or regex.")
	}
	q.Anchor.Regex = checkStatement(r.Match, r.Regex, b)
	return q, b.diags
}

// checkStatement validates match and regex and compiles the regex.
func checkStatement(match, regex string, b *block) *regexp.Regexp {
	if strings.TrimSpace(match) != match && match != "" {
		b.errAt(b.rangeOf("match"), "Match has surrounding whitespace", "match is compared with the statement's first line after its indentation; remove leading and trailing spaces.")
	}
	if regex == "" {
		return nil
	}
	re, err := regexp.Compile(regex)
	if err != nil {
		b.errAt(b.rangeOf("regex"), "Invalid regular expression", err.Error()+" (RE2 syntax: https://github.com/google/re2/wiki/Syntax).")
	}
	return re
}

// MarkerBegin and MarkerEnd open and close every block the patcher
// inserts; inserted code may not contain them.
const (
	MarkerBegin = "# >>> vllm-timings"
	MarkerEnd   = "# <<< vllm-timings"
)

// dedent removes the common leading whitespace of the non-blank lines and
// makes the text end in exactly one newline.
func dedent(s string) string {
	s = strings.Trim(s, "\n")
	lines := strings.Split(s, "\n")
	common := -1
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		n := len(l) - len(strings.TrimLeft(l, " \t"))
		if common < 0 || n < common {
			common = n
		}
	}
	for i, l := range lines {
		if strings.TrimSpace(l) == "" {
			lines[i] = ""
		} else {
			lines[i] = strings.TrimRight(l[common:], " \t")
		}
	}
	return strings.Join(lines, "\n") + "\n"
}
