package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/vllm-timings/vllm-timings/patcher"
	"github.com/vllm-timings/vllm-timings/patcher/find"
	"github.com/vllm-timings/vllm-timings/patcher/spec"
	"github.com/vllm-timings/vllm-timings/patcher/write"
)

// warn prints the session's warnings.
func warn(w io.Writer, s *patcher.Session) {
	for _, u := range s.Unused {
		logf(w, "warning: %s. Run \"vllm-timings doctor --patchset ...\" to see why yours does not fit.", u)
	}
	for _, m := range s.Warnings {
		logf(w, "warning: %s", m)
	}
}

// --- apply ---

type applyOptions struct {
	vllmFlags
	onFailure onFailure
	allParts  bool
	dryRun    bool
	takeOver  bool
	overlay   string
	// out gets what a script reads (the PYTHONPATH line of --overlay), err
	// the progress lines and warnings: stderr in every command, so that
	// exec's COMMAND owns stdout.
	out, err io.Writer
	// fallback: exec will start vLLM with the fallback for the parts no
	// set fits (the messages say so); result is what the run found.
	fallback bool
	result   applied
}

func newCmdApply(out, errw io.Writer) *cobra.Command {
	o := &applyOptions{out: out, err: errw}
	cmd := &cobra.Command{
		Use:   "apply",
		Short: "Patch the installed vLLM so its responses carry timings",
		Long: `Patch the installed vLLM so that /v1/chat/completions, /v1/completions,
/v1/responses and /v1/messages responses carry a llama.cpp-style "timings"
object.

apply finds vLLM (--vllm-dir, $VLLM_DIR, --vllm-bin or the vllm program on
$PATH followed to its interpreter's site-packages, $VIRTUAL_ENV,
$CONDA_PREFIX, well-known install paths, then python3's
importlib.util.find_spec), picks for each part (chat/completions,
/v1/responses, /v1/messages) the patch set whose anchors all match the
installed files, plans every edit in memory and then writes all files or
none. Running it again on a patched tree writes nothing.

Chat/completions must fit. A part this vLLM does not serve is skipped. A
part it serves but no set fits (/v1/responses or /v1/messages moved in a
nightly) costs only that part: the parts that fit are applied, each file
whole, a warning names the part that gets no timings, and apply exits 0.
--all-parts refuses such a vLLM instead (exit 29, nothing written).

Progress and warnings go to stderr (in every command, so that exec's
COMMAND owns stdout). With --overlay, stdout gets one line, the
"export PYTHONPATH=..." to run, for eval.

Exit codes:
` + patcher.ExitCodes.Text(),
		Example: `  # In the container, before the server starts (with ";" or "|| true",
  # vLLM starts whatever apply says; "&&" would stop it on any failure):
  /patches/vllm-timings apply --on-failure warn || true; exec vllm serve ...

  # A tree the older patch_timings scripts edited: replace their edits.
  vllm-timings apply --take-over

  # See what would change, without writing:
  vllm-timings apply --dry-run --vllm-dir ./venv/lib/python3.12/site-packages/vllm

  # Use your own patch set for a vLLM no embedded set fits:
  vllm-timings apply --patchset ./my-nightly.hcl`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error { return applyRun(o) },
	}
	o.register(cmd)
	o.onFailure = "abort"
	cmd.Flags().Var(&o.onFailure, "on-failure", "abort: exit non-zero on any problem but a /v1/responses or /v1/messages that fits no set (see --all-parts); "+
		"warn: print it and exit 0 (with nothing changed when chat/completions fit no set, so vLLM starts without "+
		"timings; with the parts that fit applied when another part's sets disagree or its layouts cannot be told "+
		"apart)")
	cmd.Flags().BoolVar(&o.allParts, "all-parts", false, allPartsUsage)
	cmd.Flags().BoolVar(&o.dryRun, "dry-run", false, "plan and report, write nothing")
	cmd.Flags().BoolVar(&o.takeOver, "take-over", false, "remove the edits of the older patch_timings scripts exactly, then apply (revert then gives vLLM's own files)")
	o.registerLock(cmd)
	o.registerOverlay(cmd)
	return cmd
}

func (o *applyOptions) registerOverlay(cmd *cobra.Command) {
	cmd.Flags().StringVar(&o.overlay, "overlay", "", "leave vLLM's files alone and write patched copies and a sitecustomize.py import hook into this writable "+
		"directory, for a read-only or non-root install; Python uses them with the directory first on PYTHONPATH")
}

func applyRun(o *applyOptions) error {
	_, err := applyOrWarn(o)
	return err
}

// applyOrWarn is apply with --on-failure: under warn every failure, a
// crash included, is printed and not returned, since vLLM must start. It
// returns the overlay directory Python must see first on PYTHONPATH, or ""
// when none is needed.
func applyOrWarn(o *applyOptions) (overlay string, err error) {
	if o.onFailure == "warn" {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("internal error: %v", r)
			}
			if err != nil {
				fmt.Fprintf(o.err, "%s\n", strings.TrimRight(errorText(err), "\n"))
				if o.fallback {
					logf(o.err, "warning: %s; vLLM starts without the patch (--on-failure warn)", afterFailure(err))
				} else {
					logf(o.err, "warning: %s; vLLM starts without timings (--on-failure warn)", afterFailure(err))
				}
				overlay, err = "", nil
			}
		}()
	}
	return applyDo(o)
}

// afterFailure says what state a failed apply left.
func afterFailure(err error) string {
	if errors.Is(err, write.ErrInterrupted) {
		return "the run was interrupted and is recorded; the next run finishes it"
	}
	return "nothing was changed"
}

func applyDo(o *applyOptions) (overlay string, err error) {
	opts := o.options()
	// A part other than chat that fits no set costs that part's timings
	// only: the parts that fit are applied (unless --all-parts); under
	// warn, so does one whose sets disagree or whose layouts are mixed.
	opts.Partial, opts.AllParts = o.onFailure == "warn", o.allParts
	// The overlay leaves the tree alone: no lock file, no manifest in it.
	opts.Lock, opts.TakeOver = !o.dryRun && o.overlay == "", o.takeOver
	s, err := patcher.Open(opts)
	if err != nil {
		// vLLM may have been found before the tree was refused (a
		// symlink out of the package, the lock held, an unreadable
		// manifest): the fallback needs only where it is.
		if inst, ferr := find.Locate(opts.Find); ferr == nil {
			o.result.vllmDir = inst.Dir
		}
		return "", err
	}
	defer s.Close()
	defer warn(o.err, s)
	logf(o.err, "vLLM %s at %s (found via %s)", s.Install.Version, s.Install.Dir, s.Install.Via)
	o.result.vllmDir = s.Install.Dir
	p, err := s.Plan()
	if s.Sel != nil {
		o.result.known = true
		for _, c := range s.Sel.Unfit() {
			switch c.Part {
			case "responses":
				o.result.unfitParts.Responses = true
			case "messages":
				o.result.unfitParts.Messages = true
			}
		}
	}
	if err != nil {
		o.result.unfit = s.Sel != nil && s.Sel.Chosen == nil
		return "", err
	}
	logf(o.err, "%s", s.Sel.Why)
	var unfit []string
	for _, c := range s.Sel.Parts {
		if c.Unfit() {
			warnUnfit(o.err, c, o.fallback)
			unfit = append(unfit, patcher.PartLabel(c.Part))
			continue
		}
		logf(o.err, "%s: %s", patcher.PartLabel(c.Part), c.Why)
	}
	if len(unfit) > 0 && !o.fallback {
		logf(o.err, "%s", fallbackNote(s.Install.Dir, unfit))
	}
	// What the patch serves once this run succeeds.
	defer func() {
		if err == nil {
			o.result.patched = partsOf(s.Sel)
		}
	}()
	if o.overlay != "" {
		return applyOverlay(o, s, p)
	}
	if o.dryRun {
		changes := p.Changes()
		for _, f := range changes {
			if f.Exists {
				logf(o.err, "would patch %s (%s)", f.Path, patcher.Plural(f.Edits, "insertion"))
			} else {
				logf(o.err, "would create %s", f.Path)
			}
		}
		if len(changes) == 0 {
			logf(o.err, "already patched; nothing to do")
		} else {
			logf(o.err, "dry run: nothing written")
		}
		return "", nil
	}
	done, err := s.Apply()
	if err != nil {
		return "", err
	}
	for _, d := range done {
		logf(o.err, "%s", d)
	}
	if len(done) == 0 {
		logf(o.err, "already patched; nothing to do")
	}
	return "", nil
}

// warnUnfit names a part that gets no timings while the others are applied.
func warnUnfit(w io.Writer, c *patcher.PartChoice, fallback bool) {
	if fallback {
		logf(w, "warning: %s gets no patch: %s; the parts that fit are applied, and the fallback serves this one. Run \"vllm-timings doctor\" to see what moved", patcher.PartLabel(c.Part), c.Why)
		return
	}
	logf(w, "warning: %s gets no timings: %s; the parts that fit are applied. Run \"vllm-timings doctor\" to see what "+
		"moved; --all-parts writes nothing unless every part fits", patcher.PartLabel(c.Part), c.Why)
}

// applyOverlay is apply --overlay: the tree is read, never written.
func applyOverlay(o *applyOptions, s *patcher.Session, p *patcher.SetPlan) (string, error) {
	if o.dryRun {
		changes := p.Changes()
		for _, f := range changes {
			logf(o.err, "would write a patched copy of %s into the overlay %s", f.Path, o.overlay)
		}
		if len(changes) == 0 {
			logf(o.err, "already patched in place; no overlay needed")
		} else {
			logf(o.err, "dry run: nothing written")
		}
		return "", nil
	}
	res, err := s.ApplyOverlay(o.overlay)
	if err != nil {
		return "", err
	}
	for _, line := range res.Written {
		logf(o.err, "%s", line)
	}
	if !res.Needed {
		logf(o.err, "already patched in place; no overlay needed")
		return "", nil
	}
	if len(res.Written) == 0 {
		logf(o.err, "overlay %s is up to date; nothing written", res.Dir)
	}
	logf(o.err, "%s is unchanged; Python uses the overlay with this directory first on PYTHONPATH:", s.Install.Dir)
	fmt.Fprintln(o.out, res.PythonPath())
	return res.Dir, nil
}

// statusUnfit are the endpoints a status report says no set serves:
// chat/completions when none fits, and each part served but unfit.
func statusUnfit(r *patcher.StatusReport) []string {
	var out []string
	if r.NoFit {
		out = append(out, patcher.PartLabel(spec.DefaultPart))
	}
	for _, p := range r.Parts {
		if p.State == patcher.PartUnfit {
			out = append(out, p.Endpoints)
		}
	}
	return out
}

// --- status ---

type statusOptions struct {
	vllmFlags
	json    bool
	overlay string
	out     io.Writer
}

func newCmdStatus(out io.Writer) *cobra.Command {
	o := &statusOptions{out: out}
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Say whether each target file is unpatched, patched, outdated or modified",
		Long: `Report the installed vLLM, the patch set of each part (chat/completions,
/v1/responses, /v1/messages) and the state of each target file. A part none of
the given sets fits is reported from vllm/.vllm-timings.json when that records
the set apply used: its files are checked against the hashes recorded there,
so a --patchset used by apply is not needed again. Each file is one of:
  unpatched  no vllm-timings changes
  patched    exactly what the patch set writes
  outdated   vllm-timings changes from another version; apply updates them
  modified   changed in a way no patch set explains
  missing    the file does not exist
  checked    the patch set only checks its shape (a require) and never writes it`,
		Example: `  vllm-timings status --vllm-dir /usr/local/lib/python3.12/dist-packages/vllm
  vllm-timings status --json | jq -r .state`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error { return statusRun(o) },
	}
	o.register(cmd)
	cmd.Flags().BoolVar(&o.json, "json", false, "print a JSON object for scripts")
	cmd.Flags().StringVar(&o.overlay, "overlay", "", "report vLLM as Python sees it through this overlay directory (apply --overlay); default: the first overlay on $PYTHONPATH")
	return cmd
}

func statusRun(o *statusOptions) error {
	opts := o.options()
	opts.Overlay = o.overlay
	from := ""
	if opts.Overlay == "" {
		if opts.Overlay = patcher.FindOverlay(os.Getenv("PYTHONPATH")); opts.Overlay != "" {
			from = " (from $PYTHONPATH)"
		}
	}
	s, err := patcher.Open(opts)
	if err != nil {
		return err
	}
	defer s.Close()
	r := s.Status()
	if r.Problem != nil {
		r.Problems = errorText(r.Problem)
	}
	if v := r.Overlay; v != nil && advice[v.Advice] != "" {
		v.Problem = v.Fact + "; " + advice[v.Advice]
	}
	if o.json {
		enc := json.NewEncoder(o.out)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	fmt.Fprintf(o.out, "vLLM %s at %s (found via %s)\n", r.Version, r.VLLMDir, r.Via)
	// A vLLM no set fits, untouched: a few lines (what fits, what the
	// fallback serves, where to look); doctor has the anchors.
	short := r.NoFit && r.State != patcher.Modified && r.Overlay == nil
	if r.PatchSet != "" || short {
		if short {
			fmt.Fprintf(o.out, "%s: %s\n", patcher.PartLabel(spec.DefaultPart), r.Why)
		} else {
			fmt.Fprintf(o.out, "%s\n", r.Why)
		}
		for _, p := range r.Parts {
			fmt.Fprintf(o.out, "%s: %s\n", p.Endpoints, p.Why)
		}
	}
	if short {
		fmt.Fprintf(o.out, "state: %s (nothing of vllm-timings in the tree)\n", r.State)
		fmt.Fprintf(o.out, "%s\n", fallbackNote(r.VLLMDir, statusUnfit(r)))
		fmt.Fprintf(o.out, "\"vllm-timings doctor\" says which anchors moved and writes a patch set to adapt; \"vllm-timings status --json\" has every problem.\n")
		return nil
	}
	if unfit := statusUnfit(r); len(unfit) > 0 && r.PatchSet != "" {
		fmt.Fprintf(o.out, "%s\n", fallbackNote(r.VLLMDir, unfit))
	}
	if v := r.Overlay; v != nil {
		fmt.Fprintf(o.out, "overlay: %s%s\n", v.Dir, from)
		if v.Problem != "" {
			fmt.Fprintf(o.out, "  %s\n", v.Problem)
		}
		for _, f := range v.Files {
			if f.Served {
				fmt.Fprintf(o.out, "  %-10s %s\n", "served", f.Path)
			} else {
				fmt.Fprintf(o.out, "  %-10s %s: %s\n", "not served", f.Path, f.Why)
			}
		}
	}
	fmt.Fprintf(o.out, "state: %s\n", r.State)
	for _, f := range r.Files {
		fmt.Fprintf(o.out, "  %-10s %s\n", f.State, f.Path)
	}
	if len(r.Applied) > 0 {
		fmt.Fprintf(o.out, "applied: %s (recorded in vllm/%s)\n", strings.Join(r.Applied, ", "), patcher.ManifestName)
	}
	if r.InProgress {
		fmt.Fprintf(o.out, "in progress: another vllm-timings run holds %s\n", patcher.LockName)
	}
	if r.Interrupted != "" {
		fmt.Fprintf(o.out, "interrupted: %s\n", r.Interrupted)
	}
	for _, l := range r.Leftovers {
		fmt.Fprintf(o.out, "  leftover   %s (apply and revert remove it)\n", l)
	}
	for _, l := range r.Legacy {
		fmt.Fprintf(o.out, "  legacy     %s (edited by the older patch_timings scripts)\n", l)
	}
	for _, l := range r.Stale {
		fmt.Fprintf(o.out, "  stale      %s (another vLLM layout's file, not used)\n", l)
	}
	if r.Problems != "" {
		fmt.Fprintf(o.out, "\n%s\n", strings.TrimRight(r.Problems, "\n"))
	}
	return nil
}

// --- revert ---

type revertOptions struct {
	vllmFlags
	dryRun   bool
	takeOver bool
	overlay  string
	err      io.Writer // progress lines and warnings, as apply's
}

func newCmdRevert(errw io.Writer) *cobra.Command {
	o := &revertOptions{err: errw}
	cmd := &cobra.Command{
		Use:   "revert",
		Short: "Restore the original vLLM files, byte for byte",
		Long: `Remove every change vllm-timings made: the marked blocks in vLLM's files and
the files it created, those of every set it knows and those vllm/.vllm-timings.json
records (so a --patchset used by apply is not needed again). It works whichever
version of vllm-timings patched the tree, finishes an interrupted run, and writes
all files or none. With --take-over it also removes the edits of the older
patch_timings scripts.`,
		Example: `  vllm-timings revert --vllm-dir ./venv/lib/python3.12/site-packages`,
		Args:    cobra.NoArgs,
		RunE:    func(*cobra.Command, []string) error { return revertRun(o) },
	}
	o.register(cmd)
	cmd.Flags().BoolVar(&o.dryRun, "dry-run", false, "report, write nothing")
	cmd.Flags().BoolVar(&o.takeOver, "take-over", false, "also remove the edits of the older patch_timings scripts")
	o.registerLock(cmd)
	cmd.Flags().StringVar(&o.overlay, "overlay", "", "remove the overlay apply --overlay wrote into this directory (vLLM's own files are not touched)")
	return cmd
}

func revertRun(o *revertOptions) error {
	opts := o.options()
	opts.Lock, opts.TakeOver = !o.dryRun && o.overlay == "", o.takeOver
	s, err := patcher.Open(opts)
	if err != nil {
		return err
	}
	defer s.Close()
	defer warn(o.err, s)
	logf(o.err, "vLLM %s at %s (found via %s)", s.Install.Version, s.Install.Dir, s.Install.Via)
	if o.overlay != "" {
		done, err := s.RevertOverlay(o.overlay, o.dryRun)
		for _, d := range done {
			logf(o.err, "%s", d)
		}
		if err == nil && len(done) == 0 {
			logf(o.err, "no overlay in %s; nothing to do", o.overlay)
		}
		return err
	}
	done, err := s.Revert(o.dryRun)
	if err != nil {
		return err
	}
	prefix := ""
	if o.dryRun {
		prefix = "would have "
	}
	for _, d := range done {
		logf(o.err, "%s%s", prefix, d)
	}
	if len(done) == 0 {
		logf(o.err, "not patched; nothing to do")
	}
	return nil
}

// --- diff ---

type diffOptions struct {
	vllmFlags
	relativeTo string
	allParts   bool
	out, err   io.Writer
}

func newCmdDiff(out, errw io.Writer) *cobra.Command {
	o := &diffOptions{out: out, err: errw}
	cmd := &cobra.Command{
		Use:   "diff",
		Short: "Print what apply would do, as a patch for git apply or patch -p1",
		Long: `Print the changes apply would make as a unified diff. Prints nothing when the
tree is already patched. As apply, a /v1/responses or /v1/messages that fits
no set is left out with a warning on stderr (--all-parts: exit 29, no diff).

--relative-to says which directory the paths start from:
  site     a/vllm/..., for "patch -p1 -d SITE_PACKAGES" or "git apply" there
           (the default)
  package  a/entrypoints/..., for "patch -p1 -d SITE_PACKAGES/vllm", as an
           image build's own patch series applies to the vllm package`,
		Example: `  vllm-timings diff --vllm-dir ./site-packages > timings.patch
  cd ./site-packages && git apply ../timings.patch

  # One more patch in an image's series (patch -p1 -d "$SP" < "$p", SP the vllm package):
  vllm-timings diff --relative-to package > patches/90-vllm-timings.patch`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			base := patcher.DiffBase(o.relativeTo)
			if base != patcher.DiffSite && base != patcher.DiffPackage {
				return usageErrorf("--relative-to %q: use package or site", o.relativeTo)
			}
			opts := o.options()
			opts.AllParts = o.allParts
			s, err := patcher.Open(opts)
			if err != nil {
				return err
			}
			defer s.Close()
			if err := s.DiffRelativeTo(o.out, base); err != nil {
				return err
			}
			for _, c := range s.Sel.Unfit() {
				warnUnfit(o.err, c, false)
			}
			return nil
		},
	}
	o.register(cmd)
	cmd.Flags().BoolVar(&o.allParts, "all-parts", false, allPartsUsage)
	cmd.Flags().StringVar(&o.relativeTo, "relative-to", "site", "where the patch's paths start: site (a/vllm/..., patch -p1 -d SITE_PACKAGES) or package (a/entrypoints/..., "+
		"patch -p1 -d the vllm directory)")
	return cmd
}

// --- patchsets ---

type patchsetsOptions struct {
	patchsets []string
	print     string
	out       io.Writer
}

func newCmdPatchsets(out io.Writer) *cobra.Command {
	o := &patchsetsOptions{out: out}
	cmd := &cobra.Command{
		Use:   "patchsets",
		Short: "List the patch sets, the vLLM versions each covers, and the files each touches",
		Long:  patchsetsLong(),
		Example: `  vllm-timings patchsets
  vllm-timings patchsets --print openai-packages > my-nightly.hcl   # a starting point for your own`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return patchsetsRun(o) },
	}
	cmd.Flags().StringArrayVar(&o.patchsets, "patchset", nil, "also list this patch set file; repeatable")
	cmd.Flags().StringVar(&o.print, "print", "", "print the HCL source of the named patch set")
	return cmd
}

func patchsetsRun(o *patchsetsOptions) error {
	lib, err := patcher.LoadLibrary(o.patchsets, "--patchset")
	if err != nil {
		return err
	}
	if o.print != "" {
		src, ok := lib.Source(o.print)
		if !ok {
			return usageErrorf("no patch set named %q; run vllm-timings patchsets to list them", o.print)
		}
		_, err := o.out.Write(src)
		return err
	}
	for i, s := range lib.All() {
		if i > 0 {
			fmt.Fprintln(o.out)
		}
		fmt.Fprintf(o.out, "%s (%s)\n", s.Name, s.Origin())
		if s.Part != spec.DefaultPart {
			fmt.Fprintf(o.out, "  part: %s (%s)\n", s.Part, patcher.PartLabel(s.Part))
		}
		if s.Description != "" {
			fmt.Fprintf(o.out, "  %s\n", s.Description)
		}
		if len(s.Covers) > 0 {
			fmt.Fprintf(o.out, "  covers: %s\n", strings.Join(s.Covers, ", "))
		}
		for _, f := range s.Files {
			switch {
			case f.Create != nil:
				fmt.Fprintf(o.out, "  creates %s\n", f.Path)
			case len(f.Edits) == 0:
				fmt.Fprintf(o.out, "  checks  %s (%s)\n", f.Path, patcher.Plural(len(f.Requires), "require"))
			case len(f.Requires) > 0:
				fmt.Fprintf(o.out, "  edits   %s (%s, %s)\n", f.Path, patcher.Plural(len(f.Edits), "insertion"), patcher.Plural(len(f.Requires), "require"))
			default:
				fmt.Fprintf(o.out, "  edits   %s (%s)\n", f.Path, patcher.Plural(len(f.Edits), "insertion"))
			}
		}
	}
	return nil
}
