package main

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/vllm-timings/vllm-timings/patcher"
)

// vllmFlags are the flags every command that touches vLLM shares.
type vllmFlags struct {
	vllmDir   string
	vllmBin   string
	vllmBinIs string // what vllmBin is when not the flag (exec's COMMAND)
	patchsets []string
}

func (f *vllmFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.vllmDir, "vllm-dir", "", "the vllm package directory, or the site-packages directory holding it (default: $VLLM_DIR, then a search)")
	cmd.Flags().StringVar(&f.vllmBin, "vllm-bin", "", "the vllm program the server runs (for example /opt/venv/bin/vllm): vLLM is looked for where its interpreter keeps its packages (default: the vllm on $PATH)")
	cmd.Flags().StringArrayVar(&f.patchsets, "patchset", nil, "an extra patch set (.hcl), tried before the embedded ones; repeatable")
}

func (f *vllmFlags) options() patcher.Options {
	return patcher.Options{Find: patcher.FindOptions{Dir: f.vllmDir, Bin: f.vllmBin, BinIs: f.vllmBinIs}, PatchSets: f.patchsets}
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
