package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/vllm-timings/vllm-timings/patcher/exit"
)

// usageErrorf is a command-line mistake a command finds itself (exit 2).
func usageErrorf(format string, args ...any) error {
	return exit.Errorf(exit.Usage, format, args...)
}

// ranError is an error a command's RunE returned. Every other error
// Execute returns is cobra's own: an unknown command or flag, a flag value
// its Set refused, the wrong number of arguments. Cobra gives those no
// type, so they are told apart by where they come from, not by their text.
type ranError struct{ err error }

func (e ranError) Error() string { return e.err.Error() }
func (e ranError) Unwrap() error { return e.err }

// markRunErrors wraps the RunE of c and of every command below it, so that
// the errors they return are ranErrors.
func markRunErrors(c *cobra.Command) {
	if runE := c.RunE; runE != nil {
		c.RunE = func(cmd *cobra.Command, args []string) error {
			if err := runE(cmd, args); err != nil {
				return ranError{err}
			}
			return nil
		}
	}
	for _, sub := range c.Commands() {
		markRunErrors(sub)
	}
}

// reportError prints err and returns its exit code: 2 for cobra's own
// errors, an *exit.Error's code, and 1 for anything else.
func reportError(stderr io.Writer, err error) int {
	fmt.Fprintln(stderr, program+": "+errorText(err))
	var ran ranError
	var e *exit.Error
	switch {
	case !errors.As(err, &ran):
		return int(exit.Usage)
	case errors.As(err, &e):
		return int(e.Code)
	default:
		return int(exit.Internal)
	}
}
