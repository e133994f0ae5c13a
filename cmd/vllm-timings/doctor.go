package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/vllm-timings/vllm-timings/patcher"
	"github.com/vllm-timings/vllm-timings/patcher/exit"
)

// --- doctor ---

type doctorOptions struct {
	vllmFlags
	skeleton string
	out      io.Writer
}

func newCmdDoctor(out io.Writer) *cobra.Command {
	o := &doctorOptions{out: out}
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Explain why no patch set fits this vLLM, and write one to adapt",
		Long: `Check every patch set against the installed vLLM, anchor by anchor, and
report. When a set fits, doctor says which and that apply will use it. When
none fits, it shows for each edit of the closest set(s) whether its anchor
matched, and for each one that did not: what it wanted, what is there, and
the closest statements in the file with the def or class that holds them.

It then prints a patch set to adapt (or writes it to --skeleton FILE): the
closest set's HCL, renamed for this vLLM, with a comment at every anchor
that missed. Change those anchors, check with
"vllm-timings apply --dry-run --patchset FILE" and pass the file to apply
with --patchset. Until adapted, the skeleton fails exactly as the set it
came from, so it never patches a vLLM by accident.

doctor writes nothing to vLLM. It exits 0 when it could check the tree,
whether or not a set fits; "apply --dry-run" tells a script whether one
does.`,
		Example: `  vllm-timings doctor --vllm-dir /usr/local/lib/python3.12/dist-packages/vllm
  vllm-timings doctor --skeleton my-nightly.hcl && $EDITOR my-nightly.hcl
  vllm-timings apply --dry-run --patchset my-nightly.hcl`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error { return doctorRun(o) },
	}
	o.register(cmd)
	cmd.Flags().StringVar(&o.skeleton, "skeleton", "", "write the patch set to adapt to this file instead of printing it")
	return cmd
}

func doctorRun(o *doctorOptions) error {
	s, err := patcher.Open(o.options())
	if err != nil {
		return err
	}
	// chat/completions first, then every other part: one report each, and a
	// skeleton for each that this vLLM serves but no set fits.
	var skels [][]byte
	var from []string
	for _, d := range append([]*patcher.Diagnosis{s.Diagnose()}, s.DiagnoseParts()...) {
		d.WriteReport(o.out)
		if d.Chosen != nil || d.NotServed() || len(d.Closest) == 0 {
			continue
		}
		skel, err := d.Skeleton(d.Closest[0])
		if err != nil {
			return err
		}
		skels = append(skels, skel)
		from = append(from, fmt.Sprintf("%q", d.Closest[0].Set.Name))
	}
	if len(skels) == 0 {
		return nil
	}
	what := "a patch set"
	if len(skels) > 1 {
		what = "patch sets"
	}
	all := bytes.Join(skels, []byte("\n"))
	if o.skeleton != "" {
		if err := os.WriteFile(o.skeleton, all, 0o644); err != nil {
			return &exit.Error{Code: patcher.ExitFS, Msg: fmt.Sprintf("cannot write the skeleton: %v", err), Err: err}
		}
		fmt.Fprintf(o.out, "\nWrote %s to adapt, from %s, to %s.\n", what, strings.Join(from, " and "), o.skeleton)
		fmt.Fprintf(o.out, "Change the anchors its comments point at, then: vllm-timings apply --dry-run --patchset %s\n", o.skeleton)
		return nil
	}
	fmt.Fprintf(o.out, "\n%s to adapt, from %s (save it, change the anchors its comments point at, then pass it with --patchset):\n\n", strings.ToUpper(what[:1])+what[1:], strings.Join(from, " and "))
	_, err = o.out.Write(all)
	return err
}
