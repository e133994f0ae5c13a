package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/vllm-timings/vllm-timings/patcher"
	"github.com/vllm-timings/vllm-timings/patcher/fallback"
	"github.com/vllm-timings/vllm-timings/patcher/find"
)

// applied is what an apply run left for exec: where vLLM is and which
// parts the patch now serves.
type applied struct {
	vllmDir string
	// known: the parts were told apart (vLLM found, its sets planned).
	known bool
	// patched: the parts the patch serves after this run; unfitParts: the
	// parts this vLLM serves that no set fits.
	patched, unfitParts fallback.Parts
	// unfit: no set fits chat/completions (the failure exec's fallback can
	// stand in for).
	unfit bool
}

// needs are the parts that would get no timings without the fallback:
// chat/completions unless patched, a part served but no set fits, and
// every part when apply did not get as far as telling them apart.
func (a applied) needs() fallback.Parts {
	if !a.known {
		return fallback.Parts{Chat: true, Responses: true, Messages: true}
	}
	return fallback.Parts{Chat: !a.patched.Chat, Responses: a.unfitParts.Responses && !a.patched.Responses, Messages: a.unfitParts.Messages && !a.patched.Messages}
}

// fallbackMode is --fallback's value.
type fallbackMode fallback.Mode

func (m *fallbackMode) String() string { return string(*m) }
func (m *fallbackMode) Type() string   { return "auto|always|off" }
func (m *fallbackMode) Set(v string) error {
	for _, k := range fallback.Modes {
		if v == string(k) {
			*m = fallbackMode(k)
			return nil
		}
	}
	return fmt.Errorf("want auto, always or off")
}

type fallbackOptions struct {
	mode fallbackMode
	dir  string
}

const fallbackUsage = `auto: for the endpoints no patch set fits (all of them when nothing was ` +
	`patched: a read-only tree, a refused apply, a vLLM no set fits), start vllm serve with ` +
	`vllm-timings' middleware (--middleware vllm_timings_fallback.TimingsMiddleware) and the ` +
	`flags it needs (--enable-force-include-usage, --enable-prompt-tokens-details, where this vLLM ` +
	`has them and they are not given), which add timings from the engine's stats or the server's ` +
	`clock without editing vLLM; always: for every endpoint (the patch's timings pass through); ` +
	`off: never ($VLLM_TIMINGS_FALLBACK sets it when the flag is not given). Whatever stops the fallback only warns`

func (fo *fallbackOptions) register(cmd *cobra.Command) {
	fo.mode = fallbackMode(fallback.Auto)
	cmd.Flags().Var(&fo.mode, "fallback", fallbackUsage)
	cmd.Flags().StringVar(&fo.dir, "fallback-dir", "", "where to write the fallback's module (default: the --overlay directory, else a directory of this user's under "+
		"$XDG_RUNTIME_DIR or the temporary directory)")
}

// fallbackEnv sets --fallback when the flag is not given. The generated
// entries (nix model, mkModel, the NixOS module) run exec with flags of
// their own; their users switch the fallback through the environment
// (nix model --env VLLM_TIMINGS_FALLBACK=off).
const fallbackEnv = "VLLM_TIMINGS_FALLBACK"

// fromEnv takes the mode from $VLLM_TIMINGS_FALLBACK unless --fallback
// was given. A value that is no mode only warns: the server must start.
func (fo *fallbackOptions) fromEnv(cmd *cobra.Command, env []string, w io.Writer) {
	v := getenvFrom(env, fallbackEnv)
	if v == "" || cmd.Flags().Changed("fallback") {
		return
	}
	if err := fo.mode.Set(v); err != nil {
		logf(w, "warning: $%s=%q: %v; the fallback stays %s", fallbackEnv, v, err, fo.mode.String())
	}
}

// partsOf are the parts a selection gives a patch set.
func partsOf(sel *patcher.Selection) fallback.Parts {
	var p fallback.Parts
	if sel == nil {
		return p
	}
	p.Chat = sel.Chosen != nil
	for _, c := range sel.Parts {
		switch c.Part {
		case "responses":
			p.Responses = c.Chosen != nil
		case "messages":
			p.Messages = c.Chosen != nil
		}
	}
	return p
}

// unpatched are the parts the fallback is for: those the patch does not
// serve.
func unpatched(p fallback.Parts) fallback.Parts {
	return fallback.Parts{Chat: !p.Chat, Responses: !p.Responses, Messages: !p.Messages}
}

// joined is the command line and environment COMMAND runs with, and
// what the fallback did: serve (mounted) or off (why not, for the parts
// in needs).
type joined struct {
	argv, env []string
	serve     *fallback.Serve
	off       string
	needs     fallback.Parts
	// notServe: off because COMMAND is not vllm serve.
	notServe bool
}

// report prints what the fallback does.
func (j joined) report(w io.Writer) {
	switch {
	case j.serve != nil:
		logf(w, "fallback: %s: timings from %s; vllm serve gets %s (--fallback off to stop)",
			strings.Join(j.serve.Parts.Names(), ", "), j.serve.Sources, strings.Join(j.serve.Args, " "))
	case j.off != "":
		logf(w, "warning: the fallback is off: %s; %s get no timings", j.off, strings.Join(j.needs.Names(), ", "))
	}
}

// joinFallback adds the fallback to COMMAND's argv and env for the parts
// the patch does not serve. It never fails: whatever stops the fallback is
// the reason in off, and COMMAND then runs as given.
func joinFallback(fo fallbackOptions, res applied, overlay, path string, argv, env []string) joined {
	out := joined{argv: argv, env: env}
	mode := fallback.Mode(fo.mode)
	if mode == fallback.Off {
		return out
	}
	out.needs = res.needs()
	if mode == fallback.Always {
		out.needs = fallback.Parts{Chat: true, Responses: true, Messages: true}
	}
	if !out.needs.Any() {
		return out
	}
	// Once mounted, it serves every part the patch does not.
	parts := unpatched(res.patched)
	offf := func(why string) joined {
		out.off = why
		return out
	}
	if res.vllmDir == "" {
		return offf("vLLM was not found, so what its command line accepts is not known")
	}
	features, err := fallback.Detect(res.vllmDir)
	if err != nil {
		return offf(err.Error())
	}
	// argv[0] as exec found it, so that "vllm" and its path are one.
	cmdline := append([]string{path}, argv[1:]...)
	serve, err := fallback.Plan(features, cmdline, parts, mode, os.ReadFile)
	if err != nil {
		out.notServe = !fallback.IsServe(cmdline)
		return offf(err.Error())
	}
	if serve == nil {
		return out
	}
	// Where the module goes: --fallback-dir, else inside the overlay,
	// else (or when that cannot be written) a private directory.
	var bases []string
	if fo.dir != "" {
		bases = append(bases, fo.dir)
	} else {
		if overlay != "" {
			bases = append(bases, filepath.Join(overlay, patcher.FallbackDirPrefix+fallback.Digest()))
		}
		if b, err := fallback.PrivateBase(func(k string) string { return getenvFrom(env, k) }); err == nil {
			bases = append(bases, b)
		} else if len(bases) == 0 {
			return offf("no private directory for its module: " + err.Error())
		}
	}
	var layout fallback.Layout
	for _, base := range bases {
		if abs, aerr := filepath.Abs(base); aerr == nil {
			base = abs
		}
		if layout, err = fallback.Write(base); err == nil {
			break
		}
	}
	if err != nil {
		return offf("cannot write its module: " + err.Error())
	}
	newEnv := serve.Env(fallback.PrependPythonPath(env, layout.PythonPath(serve.StatLogger)...))
	interp, err := serveInterpreter(path, argv)
	if err != nil {
		return offf("cannot tell which Python runs " + argv[0] + ": " + err.Error())
	}
	if err := fallback.Importable(context.Background(), interp, newEnv); err != nil {
		return offf(err.Error())
	}
	out.argv = append(append([]string{}, argv...), serve.Args...)
	out.env = newEnv
	out.serve = serve
	return out
}

// serveInterpreter is the Python that runs COMMAND (found at path): the
// #! interpreter of a console script, with the flags its #! line gives
// it, or COMMAND itself when it is python, with its flags before -m.
func serveInterpreter(path string, argv []string) ([]string, error) {
	if strings.HasPrefix(filepath.Base(path), "python") {
		interp := []string{path}
		for _, a := range argv[1:] {
			if a == "-m" || !strings.HasPrefix(a, "-") {
				break
			}
			interp = append(interp, a)
		}
		return interp, nil
	}
	py, err := find.ScriptInterpreter(path, os.Getenv("PATH"))
	if err != nil {
		return nil, err
	}
	return append([]string{py}, shebangFlags(path)...), nil
}

// shebangFlags are the interpreter flags of a script's #! line when it
// names the interpreter directly ("#!/usr/bin/python3 -I"): -I and -E make
// Python ignore PYTHONPATH.
func shebangFlags(script string) []string {
	f, err := os.Open(script)
	if err != nil {
		return nil
	}
	defer f.Close()
	buf := make([]byte, 256)
	n, _ := io.ReadFull(f, buf)
	line, _, _ := strings.Cut(string(buf[:n]), "\n")
	words := strings.Fields(strings.TrimPrefix(line, "#!"))
	if len(words) < 2 || !strings.HasPrefix(line, "#!") || filepath.Base(words[0]) == "env" {
		return nil
	}
	var flags []string
	for _, w := range words[1:] {
		if strings.HasPrefix(w, "-") {
			flags = append(flags, w)
		}
	}
	return flags
}

// fallbackNote is what apply and status say about the endpoints no set
// fits: what exec's fallback gives them on this vLLM (vllmDir).
func fallbackNote(vllmDir string, endpoints []string) string {
	f, _ := fallback.Detect(vllmDir)
	var what string
	switch {
	case !f.Middleware:
		return fmt.Sprintf("fallback: none for %s: this vLLM has no --middleware option", strings.Join(endpoints, ", "))
	case f.StatLoggerPlugins && f.FinishedRequestIDs:
		what = "from the engine's stats (unless vLLM runs with --disable-log-stats), else from the API server's clock on streams"
	default:
		what = "from the API server's clock on streams (this vLLM gives stat loggers no request ids); full responses get none"
	}
	return fmt.Sprintf("fallback: started through \"vllm-timings exec\", as the generated entries are, vLLM gets timings for %s from "+
		"vllm-timings' middleware (its --middleware option; no vLLM file edited), %s",
		strings.Join(endpoints, ", "), what)
}
