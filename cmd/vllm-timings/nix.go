package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/vllm-timings/vllm-timings/nixgen"
)

// nixOptions are the flags shared by nix fragments and nix model.
type nixOptions struct {
	nixgen.Options
	Format string // "nix" or "json"
	Out    io.Writer
}

// nixModelOptions are nix model's flags and arguments.
type nixModelOptions struct {
	*nixOptions
	Model  nixgen.ModelOptions
	Env    []string // NAME=VALUE
	Macros []string // NAME=VALUE
}

// newCmdNix builds "vllm-timings nix" and its subcommands. modelRun is a
// parameter so that TestNixFlags can check flag parsing alone; nil means
// the real one.
func newCmdNix(modelRun func(*nixModelOptions) error) *cobra.Command {
	if modelRun == nil {
		modelRun = nixModelRun
	}
	opts := &nixOptions{}
	cmd := &cobra.Command{
		Use:   "nix",
		Short: "Print the llama-swap config.nix text that runs vllm-timings before vLLM",
		Long: `Print the text a llama-swap config.nix needs to run vllm-timings in a vLLM
Docker container, quoted for all three layers it passes through: the Nix
string, llama-swap's macro substitution and word splitting, and bash -c.

"nix fragments" prints the two strings to splice into an existing model:
dockerArgs for the docker run line and cmdPrefix for the -c "..." string,
before exec vllm serve. "nix model" prints a whole model entry.

Input that cannot pass through every layer unchanged is refused with an
error saying what to change, and its own exit code.

Exit codes:
` + nixgen.ExitCodes.Text(),
		Args: cobra.NoArgs,
	}
	f := cmd.PersistentFlags()
	f.StringVar(&opts.Binary, "binary", "", "host `path` of the vllm-timings binary, e.g. a /nix/store path (required)")
	f.StringVar(&opts.Mount, "mount", nixgen.DefaultMount, "container `path` to mount the binary at")
	opts.OnFailure = "warn"
	f.Var((*onFailure)(&opts.OnFailure), "on-failure", "what apply does when patching fails: warn (vLLM starts without timings) or abort")
	f.StringArrayVar(&opts.Patchsets, "patchset", nil, "host `path` of an extra patch set; mounted read-only and passed to apply (repeatable)")
	f.StringVar(&opts.Format, "format", "nix", "output format: nix or json")

	common := func(c *cobra.Command, _ []string) error {
		opts.Out = c.OutOrStdout()
		if opts.Format != "nix" && opts.Format != "json" {
			return usageErrorf("--format %q: use nix or json", opts.Format)
		}
		if opts.Binary == "" {
			return usageErrorf("--binary is required: give the host path of the vllm-timings binary, for example --binary \"$(readlink -f result/bin/vllm-timings)\"")
		}
		return nil
	}

	fragments := &cobra.Command{
		Use:   "fragments",
		Short: "Print the docker run mount and the command prefix for an existing model",
		Example: `  vllm-timings nix fragments --binary /nix/store/...-vllm-timings/bin/vllm-timings
  vllm-timings nix fragments --binary /opt/vllm-timings --patchset /etc/vllm-timings/extra.hcl --format json`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if err := common(c, args); err != nil {
				return err
			}
			return nixFragmentsRun(opts)
		},
	}

	mopts := &nixModelOptions{nixOptions: opts}
	model := &cobra.Command{
		Use:   "model NAME --image IMAGE [flags] [-- VLLM_SERVE_ARGS...]",
		Short: "Print a whole llama-swap model entry that runs vLLM in Docker",
		Long: `Print a llama-swap model entry (cmd, cmdStop, proxy, checkEndpoint, macros)
that runs vLLM in Docker with vllm-timings. NAME is the model's name in
llama-swap; it becomes the container's name through ${MODEL_ID}. The
arguments after -- are passed to vllm serve one by one, unchanged, except
that llama-swap replaces ${MODEL_ID}, ${PORT} and the declared macros.`,
		Example: `  vllm-timings nix model qwen-vllm --binary /nix/store/...-vllm-timings/bin/vllm-timings \
    --image vllm/vllm-openai:latest --docker-arg=--device=nvidia.com/gpu=all --macro ctx=75000 \
    -- Qwen/Qwen3-8B --served-model-name '${MODEL_ID}' --max-model-len '${ctx}'`,
		Args: func(c *cobra.Command, args []string) error {
			dash := c.ArgsLenAtDash()
			named := args
			if dash >= 0 {
				named = args[:dash]
			}
			if len(named) != 1 {
				return usageErrorf("nix model needs exactly one NAME before --, the model's name in llama-swap (got %d: %s)", len(named), strings.Join(named, " "))
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			if err := common(c, args); err != nil {
				return err
			}
			mopts.Model.Name = args[0]
			mopts.Model.ServeArgs = args[1:]
			var err error
			if mopts.Model.Env, err = nixKeyValues("--env", mopts.Env); err != nil {
				return err
			}
			if mopts.Model.Macros, err = nixKeyValues("--macro", mopts.Macros); err != nil {
				return err
			}
			return modelRun(mopts)
		},
	}
	mf := model.Flags()
	mf.StringVar(&mopts.Model.Image, "image", "", "Docker `image` of vLLM (required)")
	mf.StringVar(&mopts.Model.Docker, "docker", "docker", "docker (or podman) `executable` llama-swap runs")
	mf.StringArrayVar(&mopts.Model.ExtraDockerArgs, "docker-arg", nil, "one more docker run `word`, e.g. --docker-arg=--gpus=all (repeatable)")
	mf.StringArrayVar(&mopts.Env, "env", nil, "container environment `NAME=VALUE` (repeatable)")
	mf.StringArrayVar(&mopts.Macros, "macro", nil, "llama-swap macro `NAME=VALUE` that arguments may use as ${NAME} (repeatable)")

	cmd.AddCommand(fragments, model)
	return cmd
}

// nixKeyValues parses repeated NAME=VALUE flags.
func nixKeyValues(flag string, list []string) (map[string]string, error) {
	if len(list) == 0 {
		return nil, nil
	}
	m := make(map[string]string, len(list))
	for _, kv := range list {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, usageErrorf("%s %q: write NAME=VALUE", flag, kv)
		}
		if _, dup := m[k]; dup {
			return nil, usageErrorf("%s %q: %s is given twice; keep one", flag, kv, k)
		}
		m[k] = v
	}
	return m, nil
}

func nixFragmentsRun(opts *nixOptions) error {
	f, err := nixgen.NewFragments(opts.Options)
	if err != nil {
		return err
	}
	out := f.JSON()
	if opts.Format == "nix" {
		out = f.Nix(opts.Options)
	}
	_, err = opts.Out.Write(out)
	return err
}

func nixModelRun(opts *nixModelOptions) error {
	m, err := nixgen.NewModel(opts.Options, opts.Model)
	if err != nil {
		return err
	}
	out := m.JSON(opts.Model.Name)
	if opts.Format == "nix" {
		out = m.Nix(opts.Options, opts.Model)
	}
	if _, err := opts.Out.Write(out); err != nil {
		return fmt.Errorf("writing the model: %w", err)
	}
	return nil
}
