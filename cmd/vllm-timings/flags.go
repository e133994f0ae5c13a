package main

import (
	"errors"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/vllm-timings/vllm-timings/patcher"
)

// vllmFlags are the flags every command that touches vLLM shares.
type vllmFlags struct {
	vllmDir   string
	vllmBin   string
	vllmBinIs string // what vllmBin is when not the flag (exec's COMMAND)
	patchsets []string
	lockWait  time.Duration
}

func (f *vllmFlags) register(cmd *cobra.Command) {
	cmd.Flags().Var(&nonEmpty{&f.vllmDir, "pass the vllm package directory, or leave the flag out to search for vLLM"}, "vllm-dir",
		"the vllm package directory, or the site-packages directory holding it (default: $VLLM_DIR, then a search)")
	cmd.Flags().Var(&nonEmpty{&f.vllmBin, "pass the vllm program the server runs, or leave the flag out to use the vllm on $PATH"}, "vllm-bin",
		"the vllm program the server runs (for example /opt/venv/bin/vllm): vLLM is looked for where its interpreter "+
			"keeps its packages (default: the vllm on $PATH)")
	cmd.Flags().StringArrayVar(&f.patchsets, "patchset", nil, "an extra patch set (.hcl), tried before the embedded ones; repeatable")
}

// allPartsUsage is --all-parts, on the commands that plan what apply writes.
const allPartsUsage = "write nothing (exit 29) unless every part this vLLM serves fits a patch set; without it a /v1/responses or " +
	"/v1/messages that fits none is left without timings, named in a warning, and the parts that fit are applied"

// registerLock adds --lock-wait to commands that write.
func (f *vllmFlags) registerLock(cmd *cobra.Command) {
	cmd.Flags().DurationVar(&f.lockWait, "lock-wait", patcher.DefaultLockWait, "how long to wait for another vllm-timings run on the same tree to finish (exit 30 after that)")
}

func (f *vllmFlags) options() patcher.Options {
	return patcher.Options{
		Find:       patcher.FindOptions{Dir: f.vllmDir, DirIs: "--vllm-dir", Bin: f.vllmBin, BinIs: f.binIs()},
		PatchSets:  f.patchsets,
		PatchSetIs: "--patchset",
		OverlayIs:  "--overlay",
		LockWait:   f.lockWait,
		Version:    version,
	}
}

// binIs is what the messages call the vllm program: the flag, or exec's
// command.
func (f *vllmFlags) binIs() string {
	if f.vllmBinIs != "" {
		return f.vllmBinIs
	}
	return "--vllm-bin"
}

// nonEmpty is a path flag that refuses an empty or blank value when it is
// parsed (exit 2): that is almost always an unset variable, and taken as
// "not given" it would silently search the system instead.
type nonEmpty struct {
	p    *string
	hint string // what to pass instead
}

func (f *nonEmpty) String() string {
	if f.p == nil {
		return ""
	}
	return *f.p
}

func (f *nonEmpty) Type() string { return "string" }

func (f *nonEmpty) Set(s string) error {
	if strings.TrimSpace(s) == "" {
		return errors.New("empty (an unset variable in the command line?); " + f.hint)
	}
	*f.p = s
	return nil
}

// onFailure is --on-failure, what to do when patching fails: abort or
// warn. The value is checked when the flag is parsed, so a bad one is a
// usage error (exit 2) in every command that has the flag.
type onFailure string

func (f *onFailure) String() string { return string(*f) }
func (f *onFailure) Type() string   { return "string" }

func (f *onFailure) Set(s string) error {
	if s != "abort" && s != "warn" {
		return errors.New("use abort or warn")
	}
	*f = onFailure(s)
	return nil
}
