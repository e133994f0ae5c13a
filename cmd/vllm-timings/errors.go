package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/vllm-timings/vllm-timings/patcher/exit"
)

// usageErrorf is a command-line mistake the commands find themselves
// (exit 2).
func usageErrorf(format string, args ...any) error {
	return exit.Errorf(exit.Usage, format, args...)
}

// reportError prints err and returns its exit code: an *exit.Error's own,
// 1 for anything else.
func reportError(stderr io.Writer, err error) int {
	msg := err.Error()
	if !strings.HasPrefix(msg, "vllm-timings") {
		msg = "vllm-timings: " + msg
	}
	fmt.Fprintln(stderr, msg)
	var e *exit.Error
	if errors.As(err, &e) {
		return int(e.Code)
	}
	if isCobraUsage(err) {
		return int(exit.Usage)
	}
	return int(exit.Internal)
}

// isCobraUsage recognises cobra's own argument and flag errors, which are
// plain errors without a type.
func isCobraUsage(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand flag", "flag needs an argument", "invalid argument", "accepts ", "requires at least", "requires at most"} {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}
