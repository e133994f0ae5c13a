package patcher

import (
	"errors"
	"testing"
)

var errFull = errors.New("no space left on device")

type fullWriter struct{}

func (fullWriter) Write([]byte) (int, error) { return 0, errFull }

// TestDiffWriteError: a diff the writer cannot take whole is an error,
// not a success with part of a patch.
func TestDiffWriteError(t *testing.T) {
	s := open(t, fixture(t, "openai-packages"))
	defer s.Close()
	if err := s.Diff(fullWriter{}); !errors.Is(err, errFull) {
		t.Fatalf("Diff into a full writer: %v, want %v", err, errFull)
	}
}
