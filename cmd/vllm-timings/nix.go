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
	Format string // "nix", "json", or for nix model "nix-function"
	Out    io.Writer
}

// nixModelOptions are nix model's flags and arguments.
type nixModelOptions struct {
	*nixOptions
	Model  nixgen.ModelOptions
	Env    []string // NAME=VALUE, or NAME to pass llama-swap's value through
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
	f.StringVar(&opts.Format, "format", "nix", "output format: nix or json (nix model also: nix-function)")

	common := func(c *cobra.Command, _ []string) error {
		opts.Out = c.OutOrStdout()
		function := opts.Format == "nix-function" && c.Name() == "model"
		if opts.Format != "nix" && opts.Format != "json" && !function {
			if c.Name() == "model" {
				return usageErrorf("--format %q: use nix, json or nix-function", opts.Format)
			}
			return usageErrorf("--format %q: use nix or json", opts.Format)
		}
		switch {
		case function && opts.Binary != "":
			return usageErrorf("--binary does not go with --format nix-function, whose file takes the binary from the vllm-timings package; drop --binary")
		case function:
			opts.Binary = nixgen.FunctionBinary
		case opts.Binary == "":
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
		Use:   "model NAME (--image IMAGE | --venv DIR) [flags] [-- VLLM_SERVE_ARGS...]",
		Short: "Print a whole llama-swap model entry that runs vLLM with vllm-timings",
		Long: `Print a llama-swap model entry (cmd, cmdStop, proxy, checkEndpoint, macros)
that runs vLLM with vllm-timings. NAME is the model's name in llama-swap; in
Docker it becomes the container's name through ${MODEL_ID}.

The arguments after -- are passed to vllm serve one by one, unchanged, except
that llama-swap replaces ${MODEL_ID}, ${PORT} and the declared macros. An
argument after --raw is bash text instead, left unquoted in bash -c so that
bash expands it, for example --raw '${VLLM_ENFORCE_EAGER:+--enforce-eager}';
a plain argument that holds a bash expansion is refused.

Three forms: by default the container runs bash -c "BEFORE; PATCHER; exec
vllm serve ARGS". With --entrypoint (repeated, one word each), the patcher
is the container's entrypoint and runs the image's own entrypoint through
vllm-timings exec, with no shell: the arguments after -- follow it. With
--venv DIR, vLLM runs on this host from DIR/bin/vllm, without Docker.

--format nix-function prints a file for a models/ directory: a function of
{ pkgs, lib, ... } that takes the binary from the vllm-timings package, so
--binary is not given.`,
		Example: `  vllm-timings nix model qwen-vllm --binary /nix/store/...-vllm-timings/bin/vllm-timings \
    --image vllm/vllm-openai:latest --docker-arg=--device=nvidia.com/gpu=all --macro ctx=75000 \
    --before 'set -e' --before 'pip install xxhash -q' --env VLLM_ENFORCE_EAGER \
    -- Qwen/Qwen3-8B --raw '${VLLM_ENFORCE_EAGER:+--enforce-eager}' --max-model-len '${ctx}'
  vllm-timings nix model qwen-launcher --binary ... --image IMAGE \
    --entrypoint bash --entrypoint docker/entrypoint.sh -- single
  vllm-timings nix model qwen-venv --binary ... --venv /srv/vllm/venv \
    -- Qwen/Qwen3-8B --host 127.0.0.1 --port '${PORT}'`,
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
			var err error
			if mopts.Model.ServeArgs, err = nixServeArgs(args[1:]); err != nil {
				return err
			}
			if mopts.Model.Env, mopts.Model.PassEnv, err = nixEnv(mopts.Env); err != nil {
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
	mf.StringArrayVar(&mopts.Model.ExtraDockerArgs, "docker-arg", nil, "one more docker run `word`, e.g. --docker-arg=--gpus=all (repeatable); one that sets --shm-size or --ipc "+
		"replaces the default "+nixgen.DefaultShm)
	mf.StringArrayVar(&mopts.Env, "env", nil, "container environment `NAME=VALUE`, or NAME to pass llama-swap's own value through (repeatable)")
	mf.StringArrayVar(&mopts.Model.Before, "before", nil, "a bash `statement` run in the container before the patcher, e.g. 'set -e' (repeatable, in order)")
	mf.StringVar(&mopts.Model.Publish, "publish", "", "the docker run -p `mapping`; must publish ${PORT} (default \""+nixgen.DefaultPublish+"\")")
	mf.StringArrayVar(&mopts.Model.Entrypoint, "entrypoint", nil, "one `word` of the image's own entrypoint, run through vllm-timings exec (repeatable, in order)")
	mf.StringVar(&mopts.Model.Overlay, "overlay", "", "a writable `dir` (a tmpfs in the container) for the patched copies: vLLM's files are left alone, for "+
		"--read-only or a non-root --user; runs vllm-timings exec --overlay DIR")
	mf.StringVar(&mopts.Model.Venv, "venv", "", "a host virtualenv `dir` holding bin/vllm: run vLLM there, without Docker")
	mf.StringArrayVar(&mopts.Macros, "macro", nil, "llama-swap macro `NAME=VALUE` that arguments may use as ${NAME} (repeatable)")

	cmd.AddCommand(fragments, model)
	return cmd
}

// nixServeArgs reads the arguments after --: "--raw TEXT" is one raw
// argument, at its place.
func nixServeArgs(words []string) ([]nixgen.Arg, error) {
	var args []nixgen.Arg
	for i := 0; i < len(words); i++ {
		if words[i] != nixgen.RawFlag {
			args = append(args, nixgen.Arg{Text: words[i]})
			continue
		}
		if i+1 == len(words) {
			return nil, usageErrorf("%s ends the serve arguments: give the bash text after it, for example %s '${VLLM_ENFORCE_EAGER:+--enforce-eager}'", nixgen.RawFlag, nixgen.RawFlag)
		}
		i++
		args = append(args, nixgen.Raw(words[i]))
	}
	return args, nil
}

// nixEnv parses repeated --env flags: NAME=VALUE sets a variable, NAME
// alone passes llama-swap's own value through (docker run -e NAME).
func nixEnv(list []string) (map[string]string, []string, error) {
	var set []string
	var pass []string
	seen := map[string]bool{}
	for _, e := range list {
		name, _, hasValue := strings.Cut(e, "=")
		if seen[name] {
			return nil, nil, usageErrorf("--env %q: %s is given twice; keep one", e, name)
		}
		seen[name] = true
		if hasValue {
			set = append(set, e)
		} else {
			pass = append(pass, e)
		}
	}
	env, err := nixKeyValues("--env", set)
	return env, pass, err
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
	switch opts.Format {
	case "nix":
		out = m.Nix(opts.Options, opts.Model)
	case "nix-function":
		if out, err = m.NixFunction(opts.Options, opts.Model); err != nil {
			return err
		}
	}
	if _, err := opts.Out.Write(out); err != nil {
		return fmt.Errorf("writing the model: %w", err)
	}
	return nil
}
