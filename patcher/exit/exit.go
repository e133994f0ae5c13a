// Package exit is the one error shape of vllm-timings, and the tables that
// document its exit codes.
//
// Every failure a user can act on is an *Error: a process exit code, a
// message, and optionally where in the input the problem is (a file and
// line, or a flag and its value) and what to do about it. The command
// prints Error() and exits with Code.
//
// Each package that fails this way (patcher/codes, nixgen, patcher/verify)
// declares its codes as constants and documents them in one Table, a row
// a code:
//
//	const Missing exit.Code = 5
//	... exit.NewTable(..., exit.Entry{Code: Missing, Meaning: "an anchor matched nothing in the target file"}, ...)
//
// The command's --help prints that table and so does docs/reliability.md,
// and a test keeps the page equal to it. 0, 1 and 2 are shared (OK, Internal,
// Usage); the others belong to one package each, in the ranges the
// developers' guide allocates (patcher 3-9, nixgen 10-19 and 50-54,
// verify 20-29, ...), and a test refuses a code two packages claim.
package exit

import (
	"fmt"
	"strings"
)

// Code is a process exit code.
type Code int

// The codes every command shares.
const (
	OK       Code = 0 // success
	Internal Code = 1 // a bug or an unexpected I/O error: anything that is not an *Error
	Usage    Code = 2 // a command-line mistake
)

// Error is a failure with its exit code and a message meant for the user.
// It reads "Pos: Msg. Hint", without the parts that are empty; a Msg that
// ends in a newline (a list) is followed by Hint directly.
type Error struct {
	Code Code
	Pos  string // where in the input, optional: `--mount "x"`, "bad.hcl:5"
	Msg  string // what is wrong; may span several lines
	Hint string // what to do instead, optional; full sentences
	// Advice, if set, names what the user can do in words only the
	// program that runs the library has (its flags, its commands): the
	// program words it, in place of Hint, which then says the same
	// without them.
	Advice Advice
	Err    error // the underlying cause, optional
}

// Advice names a remedy that the command words: the library knows the
// situation, the command its flags. Each package that gives advice
// declares its values beside its codes.
type Advice string

func (e *Error) Error() string {
	var b strings.Builder
	if e.Pos != "" {
		b.WriteString(e.Pos + ": ")
	}
	b.WriteString(e.Msg)
	if e.Hint != "" && strings.HasSuffix(e.Msg, "\n") {
		b.WriteString(e.Hint)
	} else if e.Hint != "" {
		b.WriteString(". " + e.Hint)
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf is an *Error with a formatted message and no position or hint.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Msg: fmt.Sprintf(format, args...)}
}

// Entry is one row of a Table.
type Entry struct {
	Code    Code
	Meaning string // one line; may use Markdown `code` spans
}

// Table is the list of a package's exit codes, in the order help texts
// and docs/reliability.md show them.
type Table struct {
	entries []Entry
}

// NewTable is the table of the given rows, in order. A code given twice
// is a bug, and panics when the package that declares the table
// initialises.
func NewTable(entries ...Entry) Table {
	var t Table
	for _, e := range entries {
		t.add(e.Code, e.Meaning)
	}
	return t
}

// add appends a code with its meaning. A code added twice is a bug, and
// panics when the package that declares the table initialises.
func (t *Table) add(code Code, meaning string) {
	for _, e := range t.entries {
		if e.Code == code {
			panic(fmt.Sprintf("exit code %d added twice: %q and %q", code, e.Meaning, meaning))
		}
	}
	t.entries = append(t.entries, Entry{code, meaning})
}

// Entries returns the rows of the table.
func (t *Table) Entries() []Entry { return append([]Entry(nil), t.entries...) }

// Text renders the table for a --help text: "  5  meaning" a line, the
// codes aligned on the right.
func (t *Table) Text() string {
	width := 1
	for _, e := range t.entries {
		width = max(width, len(fmt.Sprint(e.Code)))
	}
	var b strings.Builder
	for _, e := range t.entries {
		fmt.Fprintf(&b, "  %*d  %s\n", width, e.Code, e.Meaning)
	}
	return b.String()
}

// Markdown renders the table as docs/reliability.md shows it.
func (t *Table) Markdown() string {
	var b strings.Builder
	b.WriteString("| code | meaning |\n| --- | --- |\n")
	for _, e := range t.entries {
		fmt.Fprintf(&b, "| %d | %s |\n", e.Code, e.Meaning)
	}
	return b.String()
}
