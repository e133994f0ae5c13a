package testtree

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// skips records, per test process (one package), the tests that skipped
// because something they run is missing: what → test names.
var skips struct {
	sync.Mutex
	by map[string]map[string]bool
}

// Skipf skips t because what (a program, a source tree, root) is missing,
// and records it for the summary Main prints. Callers decide first whether
// CI=true turns the skip into a failure (RequireTool and the others do).
func Skipf(t testing.TB, what, format string, args ...any) {
	t.Helper()
	NoteSkip(what, t.Name())
	t.Skipf(format, args...)
}

// NoteSkip records that test (a test, or a script of a testscript run)
// skipped because what is missing, for callers that skip it themselves
// (a testscript condition).
func NoteSkip(what, test string) {
	openMarker()
	skips.Lock()
	defer skips.Unlock()
	if skips.by == nil {
		skips.by = map[string]map[string]bool{}
	}
	if skips.by[what] == nil {
		skips.by[what] = map[string]bool{}
	}
	skips.by[what][test] = true
}

// SkipSummary is the line Main prints for pkg, or "" when nothing skipped:
// "vllm-timings: go test ./modules: skipped 6 tests: nix-instantiate is not
// on PATH (5), ../shared/nixpkgs-lib is missing (1); go test -v ./modules
// names them".
func SkipSummary(pkg string) string {
	skips.Lock()
	defer skips.Unlock()
	if len(skips.by) == 0 {
		return ""
	}
	all := map[string]bool{}
	var whats []string
	for what, tests := range skips.by {
		whats = append(whats, what)
		for name := range tests {
			all[name] = true
		}
	}
	sort.Slice(whats, func(i, j int) bool {
		a, b := len(skips.by[whats[i]]), len(skips.by[whats[j]])
		return a > b || a == b && whats[i] < whats[j]
	})
	var parts []string
	for _, what := range whats {
		parts = append(parts, fmt.Sprintf("%s (%d)", what, len(skips.by[what])))
	}
	n := "1 test"
	if len(all) != 1 {
		n = fmt.Sprintf("%d tests", len(all))
	}
	return fmt.Sprintf("SKIPPED in %s: %s, for want of %s; go test -v %s names them, CI=true fails them", pkg, n, strings.Join(parts, ", "), pkg)
}

// Main runs the package's tests and returns the exit code for os.Exit,
// after ReportSkips. Call it from TestMain: os.Exit(testtree.Main(m)).
func Main(m *testing.M) int {
	code := m.Run()
	_, file, _, _ := runtime.Caller(1)
	reportSkips(file)
	return code
}

// MainWithPython is Main with Python's interpreter first on PATH while
// the tests run (PythonFirstOnPath). Call it from TestMain:
// os.Exit(testtree.MainWithPython(m)).
func MainWithPython(m *testing.M) int {
	cleanup := PythonFirstOnPath()
	code := m.Run()
	cleanup()
	_, file, _, _ := runtime.Caller(1)
	reportSkips(file)
	return code
}

// ReportSkips prints SkipSummary where a plain `go test ./...` shows it,
// for a TestMain that runs the tests itself. go test prints nothing but
// "ok" for a package that passes unless -v is given, so without -v the
// line goes to the terminal (/dev/tty), and where there is none, to stderr
// (shown when the package fails). With -v (and -json) it goes to stdout,
// into the test's output. A package whose tests skipped is not cached
// (see skipMarker), so the line shows on every run, not only the first. The package is named by the
// directory of the caller's file, relative to the repository.
func ReportSkips() {
	_, file, _, _ := runtime.Caller(1)
	reportSkips(file)
}

func reportSkips(file string) {
	line := SkipSummary(packageDir(file))
	if line == "" {
		return
	}
	touchMarker()
	var w io.Writer = os.Stderr
	if testing.Verbose() {
		w = os.Stdout
	} else if tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0); err == nil {
		defer tty.Close()
		w = tty
	}
	fmt.Fprintln(w, line)
}

// packageDir is "./patcher" for a file in the repository's patcher
// directory (or, built with -trimpath, for ".../vllm-timings/patcher/x.go").
func packageDir(file string) string {
	dir := filepath.Dir(file)
	if rel, err := filepath.Rel(RepoRoot(), dir); err == nil && !strings.HasPrefix(rel, "..") && filepath.IsAbs(dir) {
		return "./" + filepath.ToSlash(rel)
	}
	const mod = "github.com/vllm-timings/vllm-timings"
	if _, rest, ok := strings.Cut(filepath.ToSlash(dir), mod); ok {
		return "." + rest
	}
	return dir
}

// skipMarker is a file a test that skipped opens (NoteSkip) and
// ReportSkips then rewrites: go test records the open, and does not cache
// a result that read a file of the module changed in the two seconds
// before it was saved, so a package whose tests skipped runs, and says
// so, every time. It lies in the repository (.gitignore lists it): go test
// looks at no file outside the module.
func skipMarker() string { return filepath.Join(RepoRoot(), ".tests-skipped") }

func openMarker() {
	f, err := os.OpenFile(skipMarker(), os.O_RDONLY|os.O_CREATE, 0o644)
	if err == nil {
		f.Close()
	}
}

func touchMarker() {
	_ = os.WriteFile(skipMarker(), []byte(time.Now().String()+"\n"), 0o644)
}
