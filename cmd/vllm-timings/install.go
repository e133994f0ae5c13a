package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/vllm-timings/vllm-timings/patcher/install"
)

func newCmdInstall(errw io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "install DIR",
		Short: "Copy this binary into DIR (for init containers, which have no cp)",
		Long: `Copy this vllm-timings binary into DIR as DIR/vllm-timings, mode 0755.

Made for a Kubernetes init container: it runs the vllm-timings image, whose
only file is the binary (no shell, no cp), and puts the binary into an
emptyDir volume that vLLM's container then mounts and starts through
(vllm-timings exec -- vllm serve ...). See docs/kubernetes.md.

The copy is atomic: a temporary file in DIR, synced, then renamed over
DIR/vllm-timings, so a reader sees the old file or the whole new one. It is
idempotent: when DIR/vllm-timings already has these bytes and mode,
nothing is written. A different file there (an older version) or a link is
replaced. DIR must exist; install creates no directories. Every refusal
leaves DIR as it was. Messages go to stderr.

Exit codes:
` + install.ExitCodes.Text(),
		Example: `  # An init container's command (the image's entrypoint is /vllm-timings):
  args: ["install", "/opt/vllm-timings"]

  # By hand:
  vllm-timings install /usr/local/bin`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErrorf("install takes one directory, got %d arguments: vllm-timings install DIR", len(args))
			}
			if args[0] == "" {
				return usageErrorf("install: DIR is empty (an unset variable in the command line?); vllm-timings install DIR")
			}
			return nil
		},
		RunE: func(_ *cobra.Command, args []string) error { return installRun(errw, args[0]) },
	}
}

func installRun(errw io.Writer, dir string) error {
	self, err := install.Self()
	if err != nil {
		return err
	}
	step, err := install.Plan(self, dir)
	if err != nil {
		return err
	}
	if err := step.Do(); err != nil {
		return err
	}
	what := fmt.Sprintf("%s (version %s, %d bytes, sha256 %s)", step.Path, version, step.Size(), step.SHA256()[:16])
	switch step.Action {
	case install.Unchanged:
		logf(errw, "%s is already this binary; nothing written", what)
	case install.Create:
		logf(errw, "installed %s", what)
	case install.Replace:
		logf(errw, "replaced %s: %s", what, step.Why)
	}
	return nil
}
