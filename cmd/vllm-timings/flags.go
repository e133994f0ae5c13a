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
	vllmDir   dirFlag
	patchsets []string
	lockWait  time.Duration
}

func (f *vllmFlags) register(cmd *cobra.Command) {
	cmd.Flags().Var(&f.vllmDir, "vllm-dir", "the vllm package directory, or the site-packages directory holding it (default: $VLLM_DIR, then a search)")
	cmd.Flags().StringArrayVar(&f.patchsets, "patchset", nil, "an extra patch set (.hcl), tried before the embedded ones; repeatable")
}

// registerLock adds --lock-wait to commands that write.
func (f *vllmFlags) registerLock(cmd *cobra.Command) {
	cmd.Flags().DurationVar(&f.lockWait, "lock-wait", patcher.DefaultLockWait, "how long to wait for another vllm-timings run on the same tree to finish (exit 30 after that)")
}

func (f *vllmFlags) options() patcher.Options {
	return patcher.Options{Find: patcher.FindOptions{Dir: string(f.vllmDir)}, PatchSets: f.patchsets, LockWait: f.lockWait}
}

// dirFlag is --vllm-dir. An empty or blank value is refused when the flag
// is parsed (exit 2): it is almost always an unset variable, and taken as
// "not given" it would silently search the system instead.
type dirFlag string

func (f *dirFlag) String() string { return string(*f) }
func (f *dirFlag) Type() string   { return "string" }

func (f *dirFlag) Set(s string) error {
	if strings.TrimSpace(s) == "" {
		return errors.New("empty (an unset variable in the command line?); pass the vllm package directory, or leave the flag out to search for vLLM")
	}
	*f = dirFlag(s)
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
