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

// execArgs is the argv of vllm-timings exec after its path, up to and
// including "--": the patch sets at their paths where exec runs, --overlay
// when overlay is not empty, and --vllm-bin when vllmBin is not empty.
func (o Options) execArgs(patchsets []Mount, overlay, vllmBin string) []string {
	o = o.withDefaults()
	args := []string{"exec", "--on-failure", o.OnFailure}
	for _, m := range patchsets {
		args = append(args, "--patchset", m.Container)
	}
	if overlay != "" {
		args = append(args, "--overlay", overlay)
	}
	if vllmBin != "" {
		args = append(args, "--vllm-bin", vllmBin)
	}
	return append(args, "--")
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

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
