package exit

import (
	"errors"
	"io/fs"
	"testing"
)

func TestErrorText(t *testing.T) {
	for _, tt := range []struct {
		e    *Error
		want string
	}{
		{&Error{Code: 3, Msg: "vLLM not found"}, "vLLM not found"},
		{&Error{Code: 10, Pos: `--mount "x"`, Msg: "is not an absolute path", Hint: "Give /x."}, `--mount "x": is not an absolute path. Give /x.`},
		{&Error{Code: 4, Msg: "cannot read a.hcl", Hint: "Check the path."}, "cannot read a.hcl. Check the path."},
		{Errorf(7, "%s: %d", "f", 1), "f: 1"},
	} {
		if got := tt.e.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
	e := &Error{Code: 21, Msg: "m", Err: fs.ErrNotExist}
	if !errors.Is(e, fs.ErrNotExist) {
		t.Errorf("the cause is not unwrapped")
	}
}

func TestTable(t *testing.T) {
	tab := NewTable(Entry{5, "five"}, Entry{OK, "`ok`"})
	if got, want := tab.Text(), "  5  five\n  0  `ok`\n"; got != want {
		t.Errorf("Text() = %q, want %q", got, want)
	}
	wide := NewTable(Entry{2, "two"}, Entry{20, "twenty"})
	if got, want := wide.Text(), "   2  two\n  20  twenty\n"; got != want {
		t.Errorf("Text() = %q, want %q", got, want)
	}
	if got, want := tab.Markdown(), "| code | meaning |\n| --- | --- |\n| 5 | five |\n| 0 | `ok` |\n"; got != want {
		t.Errorf("Markdown() = %q, want %q", got, want)
	}
	if got := tab.Entries(); len(got) != 2 || got[0] != (Entry{5, "five"}) {
		t.Errorf("Entries() = %v", got)
	}
	defer func() {
		if recover() == nil {
			t.Errorf("a table with code 5 twice did not panic")
		}
	}()
	NewTable(Entry{5, "five"}, Entry{5, "again"})
}
