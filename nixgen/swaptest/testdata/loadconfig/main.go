// Command loadconfig is built by package swaptest inside a temporary copy
// of llama-swap, so that it can import llama-swap's internal/config. It reads
// a llama-swap configuration (YAML, or JSON, which is YAML too) on stdin,
// loads it with config.LoadConfigFromReader, as llama-swap does at start, and
// prints for every model what llama-swap would run, as JSON:
//
//	{"MODEL": {"cmd": ..., "argv": [...], "cmdStop": ..., "proxy": ..., "env": [...]}}
//
// cmd is after macro substitution; argv is ModelConfig.SanitizedCommand, the
// words llama-swap executes without a shell. A config llama-swap refuses is
// printed on stderr with exit status 3; a cmd it cannot split gets
// "argvError".
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/mostlygeek/llama-swap/internal/config"
)

type model struct {
	Cmd       string   `json:"cmd"`
	Argv      []string `json:"argv"`
	ArgvError string   `json:"argvError,omitempty"`
	CmdStop   string   `json:"cmdStop"`
	Proxy     string   `json:"proxy"`
	Env       []string `json:"env"`
}

func main() {
	cfg, err := config.LoadConfigFromReader(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	out := map[string]model{}
	for id, m := range cfg.Models {
		argv, err := m.SanitizedCommand()
		mo := model{Cmd: m.Cmd, Argv: argv, CmdStop: m.CmdStop, Proxy: m.Proxy, Env: m.Env}
		if err != nil {
			mo.ArgvError = err.Error()
		}
		out[id] = mo
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
