package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
)

// newRootCmd builds the command tree: a newCmdX constructor for each
// command, in the file of its group (patcher_cmds.go, doctor.go, nix.go,
// verify.go).
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
	root.SetFlagErrorFunc(flagError)

	// Keep one command per line: branches that add commands then merge
	// without conflicts.
	root.AddCommand(
		// patcher commands
		newCmdApply(stdout, stderr),
		newCmdStatus(stdout),
		newCmdRevert(stderr),
		newCmdDiff(stdout, stderr),
		newCmdPatchsets(stdout),
		newCmdDoctor(stdout),
		newCmdExec(stderr),
		// nixgen commands
		newCmdNix(nil),
		// verify commands
		newCmdVerify(),
		// distribution commands
		newCmdInstall(stderr),
	)
	// Cobra would add these in Execute; added now, markRunErrors sees them.
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	markRunErrors(root)
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

// flagError is every command's flag error (subcommands inherit it): an
// unknown flag says where the flags are listed.
func flagError(cmd *cobra.Command, err error) error {
	if strings.HasPrefix(err.Error(), "unknown flag") || strings.HasPrefix(err.Error(), "unknown shorthand flag") {
		return fmt.Errorf("%w; %q lists the flags", err, cmd.CommandPath()+" --help")
	}
	return err
}
