package main

import (
	"errors"
	"fmt"
	"io"
	"strings"
)

// exitCoder is implemented by errors that carry their own process exit code.
// Packages define their codes next to their errors (see patcher.ExitCode and
// the README's table); anything else exits 1.
type exitCoder interface {
	ExitCode() int
}

// usageError marks a command-line mistake (exit 2).
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }
func (usageError) ExitCode() int   { return 2 }

func usageErrorf(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// reportError prints err and returns its exit code.
func reportError(stderr io.Writer, err error) int {
	msg := err.Error()
	if !strings.HasPrefix(msg, "vllm-timings") {
		msg = "vllm-timings: " + msg
	}
	fmt.Fprintln(stderr, msg)
	var ec exitCoder
	if errors.As(err, &ec) {
		return ec.ExitCode()
	}
	if isCobraUsage(err) {
		return 2
	}
	return 1
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
