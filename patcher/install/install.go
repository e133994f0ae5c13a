package install

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/vllm-timings/vllm-timings/patcher/exit"
)

// ExitCodes lists the exit codes of `vllm-timings install`, in the order
// its --help and docs/reliability.md show them. install owns 60-69; a new
// code is a constant below and a row here.
var ExitCodes = exit.NewTable(
	exit.Entry{Code: exit.OK, Meaning: "installed, replaced, or already there with the same bytes (nothing written)"},
	exit.Entry{Code: exit.Internal, Meaning: "internal error"},
	exit.Entry{Code: exit.Usage, Meaning: "command-line usage error: not exactly one DIR, or an empty one"},
	exit.Entry{Code: ExitNoDir, Meaning: "DIR does not exist or is not a directory (install creates no directories: mount the volume there, or `mkdir -p` it)"},
	exit.Entry{Code: ExitInWay, Meaning: "DIR/vllm-timings exists and is not a regular file or a symbolic link (a directory, a FIFO, a device): nothing changed"},
	exit.Entry{Code: ExitWrite, Meaning: "cannot write into DIR: read-only file system, permissions, no space; nothing changed"},
	exit.Entry{Code: ExitSelf, Meaning: "cannot read the running binary itself (`/proc/self/exe`)"},
)

// The codes ExitCodes documents.
const (
	ExitNoDir exit.Code = 60
	ExitInWay exit.Code = 61
	ExitWrite exit.Code = 62
	ExitSelf  exit.Code = 63
)

// Name is the file the binary is installed as, in DIR.
const Name = "vllm-timings"

// Mode is the installed file's mode: any user of the container that
// mounts DIR may run it, none may change it.
const Mode fs.FileMode = 0o755

// Action is what Do will do.
type Action int

const (
	Unchanged Action = iota // the same bytes and mode are there: nothing to write
	Create                  // no file of that name yet
	Replace                 // a different file, a link, or another mode is there
)

func (a Action) String() string {
	return [...]string{"unchanged", "create", "replace"}[a]
}

// Step is a planned install: what is there, and what Do writes.
type Step struct {
	Path   string // DIR/vllm-timings
	Action Action
	// Why says, for Replace, what differs: "the bytes differ", "mode
	// 0644", "a symbolic link".
	Why     string
	Content []byte // the bytes to install
}

// Size is the number of bytes installed.
func (s *Step) Size() int { return len(s.Content) }

// SHA256 is the hex digest of the bytes installed.
func (s *Step) SHA256() string {
	sum := sha256.Sum256(s.Content)
	return hex.EncodeToString(sum[:])
}

// Self reads the running executable: /proc/self/exe, which still opens
// the program this process started from when its path was replaced or
// removed since (and under qemu-user names the emulated program), else
// the path os.Executable gives.
func Self() ([]byte, error) {
	b, err := os.ReadFile("/proc/self/exe")
	if err == nil {
		return b, nil
	}
	p, err2 := os.Executable()
	if err2 == nil {
		if b, err2 = os.ReadFile(p); err2 == nil {
			return b, nil
		}
	}
	return nil, &exit.Error{
		Code: ExitSelf, Msg: fmt.Sprintf("cannot read the running binary: %v", err), Err: err,
		Hint: "The binary reads itself through /proc/self/exe: run it with /proc mounted",
	}
}

// Plan decides how content gets to DIR/vllm-timings. It only reads.
func Plan(content []byte, dir string) (*Step, error) {
	if dir == "" {
		return nil, exit.Errorf(exit.Usage, "install needs a directory to install into")
	}
	info, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, &exit.Error{
			Code: ExitNoDir, Pos: dir, Msg: "no such directory",
			Hint: "Mount the volume there (an emptyDir in a Kubernetes pod) or create it first: no directory is created",
		}
	case err != nil:
		return nil, &exit.Error{Code: ExitNoDir, Pos: dir, Msg: fmt.Sprintf("cannot use it: %v", unwrapPath(err)), Err: err}
	case !info.IsDir():
		return nil, &exit.Error{
			Code: ExitNoDir, Pos: dir, Msg: "is not a directory",
			Hint: "Give the directory to install into; the binary is written there as " + Name,
		}
	}
	s := &Step{Path: filepath.Join(dir, Name), Content: content, Action: Create}
	have, err := os.Lstat(s.Path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return s, nil
	case err != nil:
		return nil, &exit.Error{Code: ExitWrite, Pos: s.Path, Msg: fmt.Sprintf("cannot look at it: %v", unwrapPath(err)), Err: err}
	}
	s.Action = Replace
	switch t := have.Mode().Type(); {
	case t == fs.ModeSymlink:
		s.Why = "a symbolic link"
		return s, nil
	case !have.Mode().IsRegular():
		return nil, &exit.Error{
			Code: ExitInWay, Pos: s.Path, Msg: "is " + describe(have.Mode()) + ", not a file",
			Hint: "Remove it, or install into another directory; nothing was changed",
		}
	}
	old, err := os.ReadFile(s.Path)
	if err != nil {
		return nil, &exit.Error{Code: ExitWrite, Pos: s.Path, Msg: fmt.Sprintf("cannot read it: %v", unwrapPath(err)), Err: err}
	}
	switch {
	case !bytes.Equal(old, content):
		s.Why = "the bytes differ"
	case have.Mode().Perm() != Mode:
		s.Why = fmt.Sprintf("mode %04o", have.Mode().Perm())
	default:
		s.Action = Unchanged
	}
	return s, nil
}

// Do carries out the step: a temporary file beside the target, written,
// made executable and synced, then renamed over it, and the directory
// synced. On any error the temporary file is removed and the target is as
// it was.
func (s *Step) Do() (err error) {
	if s.Action == Unchanged {
		return nil
	}
	dir := filepath.Dir(s.Path)
	f, err := os.CreateTemp(dir, "."+Name+".install-*")
	if err != nil {
		return writeError(s.Path, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if _, err = f.Write(s.Content); err != nil {
		return writeError(s.Path, err)
	}
	if err = f.Chmod(Mode); err != nil {
		return writeError(s.Path, err)
	}
	if err = f.Sync(); err != nil {
		return writeError(s.Path, err)
	}
	if err = f.Close(); err != nil {
		return writeError(s.Path, err)
	}
	if err = os.Rename(tmp, s.Path); err != nil {
		return writeError(s.Path, err)
	}
	// The rename is durable once the directory is synced; a file system
	// that cannot sync directories has written it all the same.
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

func writeError(path string, err error) error {
	hint := "Nothing was changed"
	switch {
	case errors.Is(err, syscall.EROFS):
		hint = "The directory is on a read-only file system; install into a writable volume (an emptyDir). Nothing was changed"
	case errors.Is(err, fs.ErrPermission):
		hint = "This user cannot write there; run install as the volume's owner, or make the volume writable. Nothing was changed"
	case errors.Is(err, syscall.ENOSPC):
		hint = "The file system is full. Nothing was changed"
	}
	return &exit.Error{Code: ExitWrite, Pos: path, Msg: fmt.Sprintf("cannot write: %v", unwrapPath(err)), Hint: hint, Err: err}
}

// unwrapPath drops the *PathError's own path, which Pos already says.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
}

func describe(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "not a regular file"
}
