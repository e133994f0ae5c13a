package nixgen

import (
	"fmt"
	"path"
	"slices"
	"strings"
)

// DefaultMount is where the binary appears in the container by default.
const DefaultMount = "/patches/vllm-timings"

// Options describe the patcher's mounts and its apply command. The zero
// values of Mount and OnFailure mean DefaultMount and "warn".
type Options struct {
	Binary    string   // host path of the vllm-timings binary
	Mount     string   // container path of the binary
	OnFailure string   // "warn" or "abort", for apply --on-failure
	Patchsets []string // host paths of extra patch sets
}

// Fragments are the two strings a user splices into a llama-swap cmd.
type Fragments struct {
	// DockerArgs goes on the docker run line: -v HOST:CONTAINER:ro per file,
	// each word quoted for llama-swap's POSIX-style splitting.
	DockerArgs string `json:"dockerArgs"`
	// CmdPrefix goes inside -c "..." before exec vllm serve. It runs the
	// patcher, ends with ";" and is escaped for those double quotes.
	CmdPrefix string `json:"cmdPrefix"`
}

// Mount is one read-only bind mount.
type Mount struct{ Host, Container string }

func (o Options) withDefaults() Options {
	if o.Mount == "" {
		o.Mount = DefaultMount
	}
	if o.OnFailure == "" {
		o.OnFailure = "warn"
	}
	return o
}

// PatchsetPath is where patch set i (from 0) with host path host appears
// in the container: next to the binary, numbered so that names never clash.
func PatchsetPath(mount string, i int, host string) string {
	return fmt.Sprintf("%s.d/%d-%s", mount, i+1, path.Base(host))
}

// Mounts lists the binary's mount, then one per patch set.
func (o Options) Mounts() []Mount {
	o = o.withDefaults()
	ms := []Mount{{o.Binary, o.Mount}}
	for i, p := range o.Patchsets {
		ms = append(ms, Mount{p, PatchsetPath(o.Mount, i, p)})
	}
	return ms
}

// ApplyArgs is the argv of the patcher in the container, after its path.
func (o Options) ApplyArgs() []string {
	o = o.withDefaults()
	args := []string{"apply", "--on-failure", o.OnFailure}
	for _, m := range o.Mounts()[1:] {
		args = append(args, "--patchset", m.Container)
	}
	return args
}

func (o Options) validate() error {
	o = o.withDefaults()
	if o.Binary == "" {
		return errorf(ExitOption, "--binary", "", "is missing", "Give the host path of the vllm-timings binary, for example /nix/store/...-vllm-timings/bin/vllm-timings.")
	}
	if err := checkPath("--binary", o.Binary); err != nil {
		return err
	}
	if err := checkPath("--mount", o.Mount); err != nil {
		return err
	}
	if o.OnFailure != "warn" && o.OnFailure != "abort" {
		return errorf(ExitOption, "--on-failure", o.OnFailure, `is neither "warn" nor "abort"`,
			"Use warn to start vLLM without timings when patching fails, or abort to stop the container.")
	}
	for _, p := range o.Patchsets {
		if err := checkPath("--patchset", p); err != nil {
			return err
		}
	}
	return nil
}

// NewFragments validates o and builds its fragments.
func NewFragments(o Options) (Fragments, error) {
	if err := o.validate(); err != nil {
		return Fragments{}, err
	}
	o = o.withDefaults()
	var f Fragments
	var words []string
	for i, m := range o.Mounts() {
		input := "--binary"
		if i > 0 {
			input = "--patchset"
		}
		q, err := shQuote(input, m.Host+":"+m.Container+":ro")
		if err != nil {
			return Fragments{}, err
		}
		words = append(words, "-v", q)
	}
	f.DockerArgs = strings.Join(words, " ")

	words = words[:0]
	for _, a := range append([]string{o.Mount}, o.ApplyArgs()...) {
		q, err := shQuote("--mount", a) // validated above; a refusal here is a backstop
		if err != nil {
			return Fragments{}, err
		}
		words = append(words, q)
	}
	if o.OnFailure == "warn" {
		words = append(words, "|| true;")
	} else {
		words = append(words, "|| exit $?;")
	}
	f.CmdPrefix = llamaDQ(strings.Join(words, " "))
	return f, nil
}

// ModelOptions describe one llama-swap model that runs vLLM in Docker.
type ModelOptions struct {
	Name            string            // the model's name in llama-swap, its ${MODEL_ID}
	Image           string            // Docker image
	ServeArgs       []string          // argv after vllm serve
	ExtraDockerArgs []string          // more docker run words
	Env             map[string]string // container environment
	Docker          string            // docker executable; "" means "docker"
	Macros          map[string]string // the model's llama-swap macros
}

// Model is a llama-swap model entry.
type Model struct {
	Cmd           string            `json:"cmd"`
	CmdStop       string            `json:"cmdStop"`
	Proxy         string            `json:"proxy"`
	CheckEndpoint string            `json:"checkEndpoint"`
	Macros        map[string]string `json:"macros,omitempty"`
}

// ContainerPort is where vLLM listens in the container: vllm serve's default.
const ContainerPort = 8000

// NewModel validates o and m and builds the model entry. Its cmd is the
// string fragments.nix's mkCmd gives for the same input.
func NewModel(o Options, m ModelOptions) (Model, error) {
	f, err := NewFragments(o)
	if err != nil {
		return Model{}, err
	}
	if m.Docker == "" {
		m.Docker = "docker"
	}
	if err := checkModelName(m.Name); err != nil {
		return Model{}, err
	}
	known := map[string]bool{"PORT": true, "MODEL_ID": true}
	for _, name := range sortedKeys(m.Macros) {
		if err := checkMacro(name, m.Macros[name]); err != nil {
			return Model{}, err
		}
		known[name] = true
	}
	word := func(input, s string) (string, error) {
		if err := checkWord(input, s, known); err != nil {
			return "", err
		}
		return quoteWord(input, s)
	}

	docker, err := word("--docker", m.Docker)
	if err != nil {
		return Model{}, err
	}
	lines := []string{
		docker + " run --rm --name ${MODEL_ID}",
		fmt.Sprintf("-p 127.0.0.1:${PORT}:%d", ContainerPort),
		f.DockerArgs,
	}
	for _, name := range sortedKeys(m.Env) {
		if err := checkEnvName(name, m.Env[name]); err != nil {
			return Model{}, err
		}
		w, err := word("--env", name+"="+m.Env[name])
		if err != nil {
			return Model{}, err
		}
		lines = append(lines, "-e "+w)
	}
	var extra []string
	for _, a := range m.ExtraDockerArgs {
		w, err := word("--docker-arg", a)
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
	image, err := word("--image", m.Image)
	if err != nil {
		return Model{}, err
	}
	c := f.CmdPrefix + " exec vllm serve"
	for i, a := range m.ServeArgs {
		w, err := word(fmt.Sprintf("serve argument %d", i+1), a)
		if err != nil {
			return Model{}, err
		}
		c += " " + llamaDQ(w)
	}
	lines = append(lines, "--entrypoint /bin/bash", image, `-c "`+c+`"`)

	model := Model{
		Cmd:           strings.Join(lines, " \\\n  ") + "\n",
		CmdStop:       docker + " stop ${MODEL_ID}",
		Proxy:         "http://127.0.0.1:${PORT}",
		CheckEndpoint: "/v1/models",
	}
	if len(m.Macros) > 0 {
		model.Macros = m.Macros
	}
	return model, nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
