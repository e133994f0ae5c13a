package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"github.com/vllm-timings/vllm-timings/patcher"
	"github.com/vllm-timings/vllm-timings/patcher/codes"
	"github.com/vllm-timings/vllm-timings/patcher/exit"
	"github.com/vllm-timings/vllm-timings/patcher/spec"
)

// This file is where vllm-timings words what the packages return as data:
// the program's name on its lines, the advice that names its flags and
// commands, and patch set diagnostics with their source lines. The
// packages' errors say what happened; only here do they learn the
// program's vocabulary.

// program is the name every line of the command's own starts with.
const program = "vllm-timings"

// logf prints one line of the command's: "vllm-timings: ...".
func logf(w io.Writer, format string, args ...any) {
	fmt.Fprintf(w, program+": "+format+"\n", args...)
}

// advice words each remedy a package names (exit.Error.Advice) with the
// command's flags; it takes the place of the error's own Hint.
var advice = map[exit.Advice]string{
	codes.AdviceOverlay: "The vllm package is read-only here. Pass --overlay DIR (apply --overlay or exec --overlay, DIR a writable " +
		"directory) to leave vLLM's files alone and write patched copies there, run vllm-timings where the package is " +
		"writable (inside the container, before exec vllm serve, as the image's user), or use --on-failure warn to " +
		"start without timings. Nothing was changed.",
	codes.AdviceLockWait:       "A held flock means a live process (the lock dies with its holder): wait for it to finish, or raise --lock-wait. Nothing was changed.",
	codes.AdviceTakeOverApply:  takeOver("apply", "applies"),
	codes.AdviceTakeOverRevert: takeOver("revert", "reverts"),
	codes.AdviceTakeOverInPlace: "An overlay cannot take their edits over: run \"vllm-timings apply --take-over\" where the package is writable " +
		"(in the image build, for example), or use an image without them. Nothing was changed.",
	codes.AdviceOneUserSet:    "Pass only one of them with --patchset, or make one's anchors specific to the version it was written for.",
	codes.AdviceSeparateParts: "Sets of different parts must edit different files; move the edits of one part into its own file, or remove the set you passed with --patchset. Nothing was changed.",
	codes.AdviceFindVLLM: "Pass --vllm-bin PROGRAM (the vllm the server runs, for example /opt/venv/bin/vllm), " +
		"--vllm-dir DIR (the vllm package directory, or the site-packages directory that holds it), or set VLLM_DIR.",
	codes.AdviceVLLMBin:      "Pass the vllm program the server runs (for example /opt/venv/bin/vllm) with --vllm-bin, or the package with --vllm-dir.",
	codes.AdviceVLLMScript:   "Pass the vllm console script the server runs with --vllm-bin, or the package with --vllm-dir.",
	codes.AdvicePatchSetPath: "Check the --patchset path (inside a container, it must be mounted).",
	codes.AdviceOverlayHook:  "rerun apply --overlay",
	codes.AdviceOverlayRerun: "Rerun apply --overlay, or revert --overlay to remove it.",
	codes.AdviceAnchorMissing: "This vLLM differs from the one the patch set was written for: run \"vllm-timings patchsets\" to see what each set covers, " +
		"or adapt the anchor and pass your patch set with --patchset.",
	codes.AdviceRequireMissing: "The set is for vLLMs that have this statement; this one does not, so another set (or your own, --patchset) has to fit it.",
	codes.AdviceManifest: "vllm-timings writes it atomically, so something else changed it. Remove it and run the command again: the " +
		"markers in the files still tell revert what is ours (only files a --patchset created need that --patchset " +
		"again).",
}

func takeOver(verb, does string) string {
	return fmt.Sprintf("Patching beside them would run both, and theirs would overwrite these timings. Run \"vllm-timings %s "+
		"--take-over\": it removes their edits exactly (giving vLLM's own files back) and then %s. Stop running the "+
		"old script before vllm serve. Nothing was changed.", verb, does)
}

// errorText is err as the command prints it: a patch set error's
// diagnostics with their source lines and the lines that sum them up, an
// error with advice with the command's wording of it, any other error's
// own text. reportError puts the program's name in front.
func errorText(err error) string {
	var (
		invalid *patcher.SpecError
		noFit   *patcher.NoFitError
		partial *patcher.PartialError
		e       *exit.Error
	)
	switch {
	case errors.As(err, &invalid):
		return renderDiagnostics(invalid.Diagnostics, invalid.Files) + program + `: the patch set above is invalid; fix the lines shown. "vllm-timings patchsets --help" describes the ` +
			`language, and "vllm-timings patchsets --print openai-packages" prints a set that works.`
	case errors.As(err, &noFit) && noFit.Closest == nil:
		var need []string
		for _, n := range noFit.Needs {
			need = append(need, fmt.Sprintf("  %s needs %s", n.Set, strings.Join(n.Files, ", ")))
		}
		return fmt.Sprintf("vLLM %s at %s has a layout no patch set knows:\n%s\nIf this is a new vLLM, write a patch set for it and pass "+
			"it with --patchset (see \"vllm-timings patchsets\" and \"vllm-timings doctor\").",
			noFit.Install.Version, noFit.Install.Dir, strings.Join(need, "\n"))
	case errors.As(err, &noFit):
		return renderDiagnostics(noFit.Diagnostics, noFit.Files) + fmt.Sprintf(program+`: no patch set fits vLLM %s at %s; the closest, %q, fails as shown above (%s). Nothing was changed. Run `+
			`"vllm-timings doctor" for the closest lines and a patch set to adapt.`,
			noFit.Install.Version, noFit.Install.Dir, noFit.Closest.Name, patcher.Plural(len(noFit.Diagnostics), "problem"))
	case errors.As(err, &partial):
		var b strings.Builder
		for _, p := range partial.Parts {
			b.WriteString(renderDiagnostics(p.Diagnostics, partial.Files))
			fmt.Fprintf(&b, program+": no patch set fits %s on vLLM %s; the closest, %q, fails as shown above (%s).\n",
				patcher.PartLabel(p.Part), partial.Install.Version, p.Closest.Name, patcher.Plural(len(p.Diagnostics), "problem"))
		}
		verb := "does"
		if len(partial.Parts) > 1 {
			verb = "do"
		}
		which := partial.Labels()
		fmt.Fprintf(&b, program+": %s fit, %s %s not, and --all-parts asks for every part: nothing was changed. ", patcher.PartLabel(spec.DefaultPart), which, verb)
		fmt.Fprintf(&b, `Without --all-parts the parts that fit are applied (%s then gets no timings); run "vllm-timings doctor" for the closest lines and a patch set to adapt.`, which)
		return b.String()
	case errors.As(err, &e) && e.Advice != "":
		if text, ok := advice[e.Advice]; ok {
			worded := *e
			worded.Hint = text
			return worded.Error()
		}
	}
	return err.Error()
}

// maxDiagnostics is how many diagnostics render shows; the rest are
// counted.
const maxDiagnostics = 20

// maxLineWidth caps each rendered source line, so a line of megabytes is
// not echoed whole (prose lines get four times as much).
const maxLineWidth = 240

var snippetLine = regexp.MustCompile(`^ *\d+: `)

// renderDiagnostics prints diagnostics with the HCL source lines they
// point at: the first 20, then how many more there are, each line at
// most 240 bytes.
func renderDiagnostics(diags hcl.Diagnostics, files map[string]*hcl.File) string {
	diags = distinct(diags)
	shown := diags
	if len(shown) > maxDiagnostics {
		shown = shown[:maxDiagnostics]
	}
	var b bytes.Buffer
	for _, d := range shown {
		if a, ok := d.Extra.(patcher.DiagnosticAdvice); ok && advice[a.Advice] != "" {
			worded := *d
			worded.Detail = a.Fact + " " + advice[a.Advice]
			d = &worded
		}
		// hcl's writer scans the whole file for every diagnostic; give it
		// only the lines it shows (behind blank lines, so the numbers
		// stay), which keeps a large file's diagnostics linear.
		d, win := window(d, files)
		w := hcl.NewDiagnosticTextWriter(&b, win, 0, false)
		_ = w.WriteDiagnostic(d)
	}
	out := strings.TrimLeft(b.String(), "\n")
	lines := strings.SplitAfter(out, "\n")
	for i, line := range lines {
		max := 4 * maxLineWidth // prose
		if snippetLine.MatchString(line) {
			max = maxLineWidth
		}
		if len(line) > max {
			lines[i] = line[:max] + fmt.Sprintf("... (%d bytes more)\n", len(line)-max)
		}
	}
	out = strings.Join(lines, "")
	if more := len(diags) - len(shown); more > 0 {
		out += fmt.Sprintf("... and %d more (%d in all); fix the first ones and run again.\n\n", more, len(diags))
	}
	return out
}

// distinct drops a diagnostic that would render as one already kept: the
// same problem on the same line (two curly quotes on a line are two
// "Invalid character" errors whose text differs only in the column, which
// the rendering does not show).
func distinct(diags hcl.Diagnostics) hcl.Diagnostics {
	type key struct {
		file            string
		line            int
		summary, detail string
		severity        hcl.DiagnosticSeverity
	}
	seen := map[key]bool{}
	var out hcl.Diagnostics
	for _, d := range diags {
		k := key{summary: d.Summary, detail: d.Detail, severity: d.Severity}
		if d.Subject != nil {
			k.file, k.line = d.Subject.Filename, d.Subject.Start.Line
		}
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, d)
	}
	return out
}

// window returns d with its ranges moved into a copy of its source that
// holds only the lines it shows, preceded by as many empty lines as came
// before them.
func window(d *hcl.Diagnostic, files map[string]*hcl.File) (*hcl.Diagnostic, map[string]*hcl.File) {
	if d.Subject == nil || files[d.Subject.Filename] == nil {
		return d, files
	}
	src := files[d.Subject.Filename].Bytes
	rng := *d.Subject
	if d.Context != nil {
		rng = hcl.RangeOver(rng, *d.Context)
	}
	if rng.Start.Byte < 0 || rng.End.Byte > len(src) || rng.Start.Byte > rng.End.Byte {
		return d, files
	}
	from := bytes.LastIndexByte(src[:rng.Start.Byte], '\n') + 1
	to := len(src)
	if i := bytes.IndexByte(src[rng.End.Byte:], '\n'); i >= 0 {
		to = rng.End.Byte + i + 1
	}
	pad := rng.Start.Line - 1
	win := make([]byte, 0, pad+to-from)
	win = append(win, bytes.Repeat([]byte("\n"), pad)...)
	win = append(win, src[from:to]...)
	shift := func(r *hcl.Range) *hcl.Range {
		if r == nil {
			return nil
		}
		c := *r
		c.Start.Byte += pad - from
		c.End.Byte += pad - from
		return &c
	}
	c := *d
	c.Subject, c.Context = shift(d.Subject), shift(d.Context)
	return &c, map[string]*hcl.File{d.Subject.Filename: {Bytes: win}}
}
