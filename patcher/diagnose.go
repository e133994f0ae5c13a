package patcher

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/vllm-timings/vllm-timings/patcher/spec"
)

// Diagnosis is what the doctor found: every set's plan, the one apply
// would use if any, and otherwise the closest ones. It reads the anchor
// results planSet recorded; it plans nothing itself.
type Diagnosis struct {
	Part    string // spec.DefaultPart (chat), or the other part it is about
	Install *Install
	Sets    []*SetPlan
	Chosen  *SetPlan   // the set apply uses, or nil
	Why     string     // why it was chosen
	Closest []*SetPlan // when none fits: the sets with the fewest problems

	lib       *Library
	notServed bool
	elsewhere map[*FilePlan][]string // for a missing file of a closest set: package files that define the classes its anchors name
}

// Diagnose reports on the session's plans for chat/completions. It writes
// nothing.
func (s *Session) Diagnose() *Diagnosis {
	return s.diagnose(s.Sel.PartChoice)
}

// DiagnoseParts reports on each other part's plans, as Diagnose does.
func (s *Session) DiagnoseParts() []*Diagnosis {
	var out []*Diagnosis
	for _, c := range s.Sel.Parts {
		d := s.diagnose(c)
		d.notServed = !c.Served()
		out = append(out, d)
	}
	return out
}

// NotServed reports whether the diagnosis is of a part this vLLM does not
// serve (none of its sets finds the files it edits); then there is nothing
// to adapt.
func (d *Diagnosis) NotServed() bool { return d.notServed }

func (s *Session) diagnose(part *PartChoice) *Diagnosis {
	d := &Diagnosis{Part: part.Part, Install: s.Install, Sets: part.Candidates, Chosen: part.Chosen, Why: part.Why, lib: s.Library}
	if d.Chosen != nil {
		return d
	}
	best := -1
	for _, c := range d.Sets {
		switch p := c.problems(); {
		case best < 0 || p < best:
			best, d.Closest = p, []*SetPlan{c}
		case p == best:
			d.Closest = append(d.Closest, c)
		}
	}
	d.elsewhere = map[*FilePlan][]string{}
	for _, c := range d.Closest {
		for i := range c.Files {
			if c.Files[i].problem == problemNoFile {
				d.elsewhere[&c.Files[i]] = s.elsewhere(c.Set.Files[i])
			}
		}
	}
	return d
}

// elsewhere looks through the package for the classes a missing file's
// anchors name ("in" starts with them), to say where the code moved.
func (s *Session) elsewhere(f spec.File) []string {
	var classes []string
	seen := map[string]bool{}
	for _, e := range f.Edits {
		if name, _, _ := strings.Cut(e.Anchor.Scope, "."); name != "" && !seen[name] {
			seen[name] = true
			classes = append(classes, regexp.QuoteMeta(name))
		}
	}
	for _, q := range f.Requires {
		if name, _, _ := strings.Cut(q.Anchor.Scope, "."); name != "" && !seen[name] {
			seen[name] = true
			classes = append(classes, regexp.QuoteMeta(name))
		}
	}
	if len(classes) == 0 {
		return nil
	}
	re := regexp.MustCompile(`(?m)^class (` + strings.Join(classes, "|") + `)\b`)
	var found []string
	_ = filepath.WalkDir(s.Install.Dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || len(found) >= 5 {
			return filepath.SkipDir
		}
		if d.IsDir() && d.Name() == "__pycache__" {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".py") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err == nil && re.Match(b) {
			rel, _ := filepath.Rel(s.Install.Root, p)
			found = append(found, filepath.ToSlash(rel))
		}
		return nil
	})
	sort.Strings(found)
	return found
}

// WriteReport prints the diagnosis for people: the set apply would use, or
// per anchor of the closest sets what matched, what did not, and the
// closest statements.
func (d *Diagnosis) WriteReport(w io.Writer) {
	if d.Part == spec.DefaultPart {
		fmt.Fprintf(w, "vLLM %s at %s (found via %s)\n\n", d.Install.Version, d.Install.Dir, d.Install.Via)
	} else {
		fmt.Fprintf(w, "\n%s: ", PartLabel(d.Part))
	}
	switch {
	case d.Chosen != nil:
		fmt.Fprintf(w, "%s.\nNothing to adapt: \"vllm-timings apply\" uses this set.\n", d.Why)
		return
	case d.notServed:
		fmt.Fprintf(w, "%s; nothing to adapt.\n", d.Why)
		return
	}
	names := make([]string, len(d.Closest))
	for i, c := range d.Closest {
		names[i] = fmt.Sprintf("%q (%d of %d anchors match)", c.Set.Name, c.matched(), c.total())
	}
	if d.Part == spec.DefaultPart {
		fmt.Fprintf(w, "No patch set fits this vLLM. Closest: %s.\n", strings.Join(names, ", "))
	} else {
		fmt.Fprintf(w, "no patch set fits this vLLM. Closest: %s.\n", strings.Join(names, ", "))
	}
	for _, c := range d.Closest {
		fmt.Fprintln(w)
		d.writeSet(w, c)
	}
	var others []string
	for _, c := range d.Sets {
		if !contains(d.Closest, c) {
			others = append(others, fmt.Sprintf("  %s: %d of %d anchors match", c.Set.Name, c.matched(), c.total()))
		}
	}
	if len(others) > 0 {
		fmt.Fprintf(w, "\nThe other sets are further off:\n%s\n", strings.Join(others, "\n"))
	}
}

func contains(ps []*SetPlan, p *SetPlan) bool {
	for _, x := range ps {
		if x == p {
			return true
		}
	}
	return false
}

func (d *Diagnosis) writeSet(w io.Writer, c *SetPlan) {
	fmt.Fprintf(w, "%s (%s)\n", c.Set.Name, c.Set.Source)
	for i := range c.Files {
		f := &c.Files[i]
		switch {
		case f.Create && f.problem != "":
			fmt.Fprintf(w, "  %s: %s\n", f.Path, f.detail)
			continue
		case f.Create:
			fmt.Fprintf(w, "  %s: created by the set\n", f.Path)
			continue
		case f.problem == problemNoFile:
			fmt.Fprintf(w, "  %s: does not exist in this vLLM", f.Path)
			if where := d.elsewhere[f]; len(where) > 0 {
				fmt.Fprintf(w, "; the classes its anchors name are in %s", strings.Join(where, ", "))
			}
			fmt.Fprintln(w)
			continue
		case f.problem == problemFile:
			fmt.Fprintf(w, "  %s: %s\n", f.Path, f.detail)
			continue
		}
		fmt.Fprintf(w, "  %s\n", f.Path)
		for _, a := range f.anchors {
			kind := "edit"
			if a.Require {
				kind = "require"
			}
			if a.Problem == "" {
				where := fmt.Sprintf("line %d", a.Line)
				if a.Line == 0 {
					where = a.Detail
				}
				fmt.Fprintf(w, "    ok         %s %q: %s\n", kind, a.Name, where)
				continue
			}
			fmt.Fprintf(w, "    %-10s %s %q (%s line %d)\n", a.Problem, kind, a.Name, a.Declared.Filename, a.Declared.Start.Line)
			fmt.Fprintf(w, "               wanted: %s\n", a.Anchor)
			if a.Problem != problemMissing || a.ScopeMissing {
				fmt.Fprintf(w, "               found:  %s\n", a.Detail)
			}
			if len(a.Candidates) > 0 {
				fmt.Fprintf(w, "               closest:\n")
				for _, cand := range a.Candidates {
					in := ""
					if cand.In != "" {
						in = "   (in " + cand.In + ")"
					}
					fmt.Fprintf(w, "                 %5d  %s%s\n", cand.Line, cand.Text, in)
				}
			}
		}
	}
}
