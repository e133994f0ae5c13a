package main

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/vllm-timings/vllm-timings/patcher/exit"
)

// version is set at link time: -ldflags "-X main.version=1.2.3".
var version = "dev"

// newRootCmd builds the command tree. Each subcommand lives in its own file
// with a newCmdX constructor and is added here.
func newRootCmd(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "vllm-timings",
		Short:         "Add llama.cpp-style timings to vLLM's OpenAI responses",
		Version:       version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return &exit.Error{Code: exit.Usage, Msg: err.Error(), Err: err}
	})

	// Subcommands, one constructor per file. Keep one per line: branches
	// that add commands then merge without conflicts.
	root.AddCommand(
		// patcher commands
		newCmdApply(stdout, stderr),
		newCmdStatus(stdout),
		newCmdRevert(stdout),
		newCmdDiff(stdout),
		newCmdPatchsets(stdout),
		newCmdDoctor(stdout),
		// nixgen commands
		newCmdNix(nil),
		// verify commands
		newCmdVerify(),
	)
	return root
}

// run executes the command line and returns the process exit code.
func run(args []string, stdout, stderr io.Writer) int {
	root := newRootCmd(stdout, stderr)
	root.SetArgs(args)
	if err := root.Execute(); err != nil {
		return reportError(stderr, err)
	}
	return 0
}
