package nixgen

import (
	"fmt"
	"slices"
	"strings"
)

// Arg is one argument after vllm serve (or after the image's entrypoint).
type Arg struct {
	Text string
	// Raw marks bash text that goes into bash -c unquoted, so that bash
	// expands it: ${VAR:+--flag} gives --flag when VAR is set and nothing
	// otherwise. In Nix it is vt.raw "...", on the command line --raw TEXT.
	// llama-swap still substitutes macros in it.
	Raw bool
}

// Args makes plain arguments, each passed to vLLM as it is.
func Args(texts ...string) []Arg {
	args := make([]Arg, len(texts))
	for i, s := range texts {
		args[i] = Arg{Text: s}
	}
	return args
}

// Raw makes a raw argument.
func Raw(text string) Arg { return Arg{Text: text, Raw: true} }

// ModelOptions describe one llama-swap model that runs vLLM.
//
// There are three forms. By default the model runs in Docker with bash as
// the entrypoint: bash -c "BEFORE; PATCHER || true; exec vllm serve ARGS".
// With Entrypoint, the patcher is the container's entrypoint and runs the
// image's own entrypoint through vllm-timings exec, with no shell. With
// Venv, vLLM runs on this host from a virtualenv, without Docker, through
// vllm-timings exec.
type ModelOptions struct {
	Name            string            // the model's name in llama-swap, its ${MODEL_ID}
	Image           string            // Docker image
	ServeArgs       []Arg             // argv after vllm serve, or after the entrypoint
	ExtraDockerArgs []string          // more docker run words; DefaultShm unless one sets --shm-size or --ipc
	Env             map[string]string // container environment: -e NAME=VALUE
	PassEnv         []string          // variables passed through from llama-swap's environment: -e NAME
	Docker          string            // docker executable; "" means "docker"
	Macros          map[string]string // the model's llama-swap macros
	Before          []string          // bash statements run in the container before the patcher
	Publish         string            // docker run -p value; "" means DefaultPublish
	Entrypoint      []string          // the image's entrypoint, run by vllm-timings exec
	Venv            string            // host virtualenv holding bin/vllm: no Docker
	// Overlay is a writable directory (in the container; on the host with
	// Venv) where the patcher writes patched copies of vLLM's files and
	// leaves vLLM's own alone: vllm-timings exec --overlay DIR, which runs
	// vLLM with DIR first on PYTHONPATH. For a read-only root filesystem or
	// a user that cannot write vLLM's files; in the bash -c form the
	// patcher's statement becomes exec PATCHER exec ... -- vllm serve.
	Overlay string
}

// Model is a llama-swap model entry.
type Model struct {
	Cmd           string            `json:"cmd"`
	CmdStop       string            `json:"cmdStop,omitempty"`
	Proxy         string            `json:"proxy"`
	CheckEndpoint string            `json:"checkEndpoint"`
	Macros        map[string]string `json:"macros,omitempty"`
}

// ContainerPort is where vLLM listens in the container: vllm serve's default.
const ContainerPort = 8000

// DefaultPublish maps llama-swap's port on 127.0.0.1, where its proxy
// connects, to vLLM's port in the container.
var DefaultPublish = fmt.Sprintf("127.0.0.1:${PORT}:%d", ContainerPort)

// DefaultShm is the docker run word the Docker forms add for vLLM's shared
// memory: Docker gives a container 64 MiB of /dev/shm, and vLLM refuses to
// start with that little ("Insufficient space in /dev/shm"). An
// ExtraDockerArgs word that sets it (--shm-size or --ipc, such as
// --ipc=host as vLLM's own docs run it) replaces the default.
const DefaultShm = "--shm-size=1g"

// setsShm says whether docker run words set the shared memory themselves.
func setsShm(words []string) bool {
	for _, w := range words {
		for _, flag := range []string{"--shm-size", "--ipc"} {
			if w == flag || strings.HasPrefix(w, flag+"=") {
				return true
			}
		}
	}
	return false
}

// form is how the model runs.
type form int

const (
	formBash       form = iota // docker run --entrypoint /bin/bash IMAGE -c "..."
	formEntrypoint             // docker run --entrypoint PATCHER IMAGE exec -- ENTRYPOINT ARGS
	formVenv                   // PATCHER exec --vllm-bin VENV/bin/vllm -- VENV/bin/vllm serve ARGS
)

func (m ModelOptions) form() form {
	switch {
	case m.Venv != "":
		return formVenv
	case len(m.Entrypoint) > 0:
		return formEntrypoint
	}
	return formBash
}

// model holds what NewModel has checked so far.
type model struct {
	o     Options
	m     ModelOptions
	known map[string]string // the macros words may use, with the value checkWord substitutes
}

// word checks and quotes one word that no shell reads: llama-swap splits it
// and runs it (docker run arguments, the exec forms' argv).
func (b *model) word(input, s string) (string, error) {
	if err := checkWord(input, s, b.known, ctxNoShell); err != nil {
		return "", err
	}
	return quoteWord(input, s)
}

// NewModel validates o and m and builds the model entry. Its cmd is the
// string fragments.nix's mkCmd gives for the same input.
func NewModel(o Options, m ModelOptions) (Model, error) {
	if _, err := NewFragments(o); err != nil {
		return Model{}, err
	}
	o = o.withDefaults()
	if m.Docker == "" {
		m.Docker = "docker"
	}
	if err := checkModelName(m.Name); err != nil {
		return Model{}, err
	}
	// ${PORT} and ${MODEL_ID} stand for digits and name characters.
	b := &model{o: o, m: m, known: map[string]string{"PORT": "0", "MODEL_ID": "0"}}
	for _, name := range sortedKeys(m.Macros) {
		if err := checkMacro(name, m.Macros[name]); err != nil {
			return Model{}, err
		}
		b.known[name] = m.Macros[name]
	}
	if err := checkForm(o, m); err != nil {
		return Model{}, err
	}
	if m.Overlay != "" {
		// ":" would split PYTHONPATH, in the container and on the host.
		if err := checkOverlayPath("--overlay", m.Overlay); err != nil {
			return Model{}, err
		}
	}
	var model Model
	var err error
	if m.form() == formVenv {
		model, err = b.venv()
	} else {
		model, err = b.docker()
	}
	if err != nil {
		return Model{}, err
	}
	model.Proxy = "http://127.0.0.1:${PORT}"
	model.CheckEndpoint = "/v1/models"
	if len(m.Macros) > 0 {
		model.Macros = m.Macros
	}
	return model, nil
}

// docker builds the two Docker forms.
func (b *model) docker() (Model, error) {
	o, m := b.o, b.m
	f, err := NewFragments(o)
	if err != nil {
		return Model{}, err
	}
	docker, err := b.word("--docker", m.Docker)
	if err != nil {
		return Model{}, err
	}
	publish := m.Publish
	if publish == "" {
		publish = DefaultPublish
	}
	if err := checkPublish(publish); err != nil {
		return Model{}, err
	}
	p, err := b.word("--publish", publish)
	if err != nil {
		return Model{}, err
	}
	lines := []string{docker + " run --rm --name ${MODEL_ID}", "-p " + p, f.DockerArgs}

	env, err := envWords(m)
	if err != nil {
		return Model{}, err
	}
	for _, e := range env {
		w, err := b.word("--env", e)
		if err != nil {
			return Model{}, err
		}
		lines = append(lines, "-e "+w)
	}
	var extra []string
	words := m.ExtraDockerArgs
	if !setsShm(words) {
		words = append([]string{DefaultShm}, words...)
	}
	for _, a := range words {
		w, err := b.word("--docker-arg", a)
		if err != nil {
			return Model{}, err
		}
		extra = append(extra, w)
	}
	if len(extra) > 0 {
		lines = append(lines, strings.Join(extra, " "))
	}
	if m.Image == "" {
		return Model{}, errorf(ExitOption, "--image", "", "is missing", "Give the Docker image, for example vllm/vllm-openai:latest.")
	}
	image, err := b.word("--image", m.Image)
	if err != nil {
		return Model{}, err
	}

	if m.form() == formEntrypoint {
		mount, err := shQuote("--mount", o.Mount)
		if err != nil {
			return Model{}, err
		}
		words, err := b.execWords(o.execArgs(o.Mounts()[1:], m.Overlay, ""), "--entrypoint", m.Entrypoint)
		if err != nil {
			return Model{}, err
		}
		lines = append(lines, "--entrypoint "+mount, image, strings.Join(words, " "))
	} else {
		// exec patches vLLM, adds the fallback for what the patch does not
		// serve, and becomes vllm serve; with --overlay it puts the
		// overlay first on PYTHONPATH.
		var words []string
		input := "--mount"
		if m.Overlay != "" {
			input = "--overlay"
		}
		for _, a := range append(append([]string{o.Mount}, o.execArgs(o.Mounts()[1:], m.Overlay, "")...), "vllm", "serve") {
			q, err := shQuote(input, a)
			if err != nil {
				return Model{}, err
			}
			words = append(words, q)
		}
		run := "exec " + llamaDQ(strings.Join(words, " "))
		var script string
		var err error
		if m.Overlay != "" {
			script, err = b.script(run)
		} else {
			script, err = b.execScript(run, o.OnFailure == "warn")
		}
		if err != nil {
			return Model{}, err
		}
		lines = append(lines, "--entrypoint /bin/bash", image, `-c "`+script+`"`)
	}
	return Model{
		Cmd:     strings.Join(lines, " \\\n  ") + "\n",
		CmdStop: docker + " stop ${MODEL_ID}",
	}, nil
}

// script is the bash -c source: the before statements, then prefix (the
// patcher and exec vllm serve, escaped for llama-swap's double quotes), then
// the serve arguments.
func (b *model) script(prefix string) (string, error) {
	var s strings.Builder
	for i, st := range b.m.Before {
		input := fmt.Sprintf("before statement %d", i+1)
		if err := checkWord(input, st, b.known, ctxBash); err != nil {
			return "", err
		}
		if err := checkStatement(input, st); err != nil {
			return "", err
		}
		s.WriteString(llamaDQ(st) + "; ")
	}
	s.WriteString(prefix)
	for i, a := range b.m.ServeArgs {
		w, err := b.serveWord(i, a, true)
		if err != nil {
			return "", err
		}
		s.WriteString(" " + llamaDQ(w))
	}
	return s.String(), nil
}

// execScript is the bash -c source of the stock form: the before
// statements, the serve arguments as bash's positional parameters, then
// the patcher's exec (run: exec PATCHER exec ... -- vllm serve) with them.
// Under warn, when the patcher cannot be executed at all (missing, a
// directory, another architecture), bash's execfail makes that exec fail
// instead of ending bash, and "|| exec vllm serve" starts vLLM as given:
// the start never depends on the patcher.
func (b *model) execScript(run string, warn bool) (string, error) {
	var s strings.Builder
	for i, st := range b.m.Before {
		input := fmt.Sprintf("before statement %d", i+1)
		if err := checkWord(input, st, b.known, ctxBash); err != nil {
			return "", err
		}
		if err := checkStatement(input, st); err != nil {
			return "", err
		}
		s.WriteString(llamaDQ(st) + "; ")
	}
	s.WriteString("set --")
	for i, a := range b.m.ServeArgs {
		w, err := b.serveWord(i, a, true)
		if err != nil {
			return "", err
		}
		s.WriteString(" " + llamaDQ(w))
	}
	s.WriteString("; ")
	if warn {
		s.WriteString("shopt -s execfail; ")
	}
	s.WriteString(run + ` \"$@\"`)
	if warn {
		// "||", not ";": a set -e among the before statements would
		// otherwise stop bash at the failed exec.
		s.WriteString(` || exec vllm serve \"$@\"`)
	}
	return s.String(), nil
}

// serveWord checks serve argument i and gives its bash text: quoted when
// plain, as it is when raw. inBash says whether bash reads it.
func (b *model) serveWord(i int, a Arg, inBash bool) (string, error) {
	input := fmt.Sprintf("serve argument %d", i+1)
	if a.Raw {
		input = "raw " + input
		if err := checkWord(input, a.Text, b.known, ctxBash); err != nil {
			return "", err
		}
		if err := checkRaw(input, a.Text); err != nil {
			return "", err
		}
		return a.Text, nil
	}
	ctx := ctxServe
	if !inBash {
		ctx = ctxNoShell
	}
	if err := checkWord(input, a.Text, b.known, ctx); err != nil {
		return "", err
	}
	if err := checkExpansion(input, a.Text, b.known, inBash); err != nil {
		return "", err
	}
	return quoteWord(input, a.Text)
}

// execWords quotes the argv of a command that no shell reads: the
// patcher's own words (paths validated with the options) as they are, then
// the command's words and the serve arguments, which may use macros.
func (b *model) execWords(own []string, input string, command []string) ([]string, error) {
	var words []string
	for _, a := range own {
		w, err := shQuote("--mount", a)
		if err != nil {
			return nil, err
		}
		words = append(words, w)
	}
	for _, a := range command {
		w, err := b.word(input, a)
		if err != nil {
			return nil, err
		}
		words = append(words, w)
	}
	for i, a := range b.m.ServeArgs {
		w, err := b.serveWord(i, a, false)
		if err != nil {
			return nil, err
		}
		words = append(words, w)
	}
	return words, nil
}

// venv builds the host form: vllm-timings exec runs vLLM from a virtualenv,
// with the patch sets at their host paths.
func (b *model) venv() (Model, error) {
	o, m := b.o, b.m
	if err := checkHostPath("--venv", m.Venv); err != nil {
		return Model{}, err
	}
	vllm := m.Venv + "/bin/vllm"
	var patchsets []Mount
	for _, p := range o.Patchsets {
		patchsets = append(patchsets, Mount{Host: p, Container: p})
	}
	own := append([]string{o.Binary}, o.execArgs(patchsets, m.Overlay, vllm)...)
	words, err := b.execWords(own, "--venv", []string{vllm, "serve"})
	if err != nil {
		return Model{}, err
	}
	port := false
	for _, a := range m.ServeArgs {
		port = port || strings.Contains(a.Text, "${PORT}")
	}
	if !port {
		return Model{}, errorf(ExitHostPort, "--venv", m.Venv, "runs vLLM on this host, but no serve argument uses ${PORT}",
			"llama-swap proxies to 127.0.0.1:${PORT}, and vLLM listens on port 8000 unless told otherwise; add the serve arguments --host 127.0.0.1 --port '${PORT}'.")
	}
	n := len(own) - 1 // the "--"
	lines := []string{strings.Join(words[:n], " "), strings.Join(words[n:], " ")}
	return Model{Cmd: strings.Join(lines, " \\\n  ") + "\n"}, nil
}

// envWords lists the -e values, sorted by name: NAME=VALUE, or NAME alone
// for a variable passed through from llama-swap's environment.
func envWords(m ModelOptions) ([]string, error) {
	values := map[string]*string{}
	for name, v := range m.Env {
		v := v
		values[name] = &v
	}
	for _, name := range m.PassEnv {
		if _, dup := values[name]; dup {
			return nil, errorf(ExitOption, "--env", name, "is given twice",
				"Give NAME=VALUE to set the variable, or NAME alone to pass llama-swap's own value through; keep one.")
		}
		values[name] = nil
	}
	names := make([]string, 0, len(values))
	for k := range values {
		names = append(names, k)
	}
	slices.Sort(names)
	var words []string
	for _, name := range names {
		v := values[name]
		nv := name
		if v != nil {
			nv += "=" + *v
		}
		if err := checkEnvName(name, nv); err != nil {
			return nil, err
		}
		words = append(words, nv)
	}
	return words, nil
}
