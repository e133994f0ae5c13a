package nixgen

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/billziss-gh/golib/shlex"
)

// This file does to a model's cmd what llama-swap does before it runs it,
// following its source (github.com/mostlygeek/llama-swap, internal/config:
// macros.go resolveConfigMacros and validateMacroUses, commands.go
// StripComments and SanitizeCommand), and splits it with the same library,
// github.com/billziss-gh/golib/shlex.

// llamaSwapArgv returns the argv llama-swap would exec for cmd, for model
// modelID with the given declared macros and allocated port.
func llamaSwapArgv(cmd, modelID string, macros map[string]string, port int) ([]string, error) {
	// ${env.NAME} is replaced before anything else; nixgen never emits it.
	if m := envRef.FindString(cmd); m != "" {
		return nil, fmt.Errorf("cmd holds %s, which llama-swap would replace from its environment", m)
	}
	// Comments are stripped before macros are expanded.
	cmd = stripComments(cmd)
	// mergeModelMacros: MODEL_ID first, then the declared ones; then
	// substituteMacroList applies them last to first.
	type macro struct{ name, value string }
	list := []macro{{"MODEL_ID", modelID}}
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range macros {
			if !yield(k) {
				return
			}
		}
	}) {
		list = append(list, macro{k, macros[k]})
	}
	for i := len(list) - 1; i >= 0; i-- {
		cmd = strings.ReplaceAll(cmd, "${"+list[i].name+"}", list[i].value)
	}
	if strings.Contains(cmd, "${PORT}") {
		cmd = strings.ReplaceAll(cmd, "${PORT}", strconv.Itoa(port))
	}
	if m := macroRef.FindStringSubmatch(cmd); m != nil {
		return nil, fmt.Errorf("unknown macro '${%s}' found in cmd", m[1])
	}
	return sanitizeCommand(cmd)
}

func stripComments(cmd string) string {
	var lines []string
	for _, line := range strings.Split(cmd, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		lines = append(lines, line)
	}
	return strings.Join(lines, "\n")
}

func sanitizeCommand(cmd string) ([]string, error) {
	var lines []string
	for _, line := range strings.Split(cmd, "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "#") {
			continue
		}
		if strings.HasSuffix(trimmed, "\\") {
			lines = append(lines, strings.TrimSuffix(trimmed, "\\")+" ")
		} else {
			lines = append(lines, line)
		}
	}
	args := shlex.Posix.Split(strings.Join(lines, "\n"))
	if len(args) == 0 {
		return nil, fmt.Errorf("empty command")
	}
	return args, nil
}
