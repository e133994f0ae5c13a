package fallback

import (
	"bufio"
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Features are what an installed vLLM offers the fallback, read from its
// source. The zero value offers nothing: the fallback then stays off.
type Features struct {
	// Middleware: `vllm serve --middleware module.Object` (v0.10.0 on).
	Middleware bool
	// ForceIncludeUsage: --enable-force-include-usage, a usage chunk at
	// the end of every chat and completion stream (v0.10.0 on).
	ForceIncludeUsage bool
	// PromptTokensDetails: --enable-prompt-tokens-details, the cached
	// prompt tokens in usage.
	PromptTokensDetails bool
	// PerRequestMetrics: --enable-per-request-metrics (0.25 on); the user
	// turns it on, the fallback only reads it.
	PerRequestMetrics bool
	// StatLoggerPlugins: the vllm.stat_logger_plugins entry-point group
	// (0.12 on).
	StatLoggerPlugins bool
	// FinishedRequestIDs: vLLM's FinishedRequestStats carry the request id
	// (0.20 on), by which the fallback matches engine stats to responses.
	FinishedRequestIDs bool
}

// The flags, as FrontendArgs fields in a cli_args.py under
// vllm/entrypoints (openai/ up to the 0.2x releases, common/ later).
var cliFields = map[string]func(*Features){
	"middleware":                   func(f *Features) { f.Middleware = true },
	"enable_force_include_usage":   func(f *Features) { f.ForceIncludeUsage = true },
	"enable_prompt_tokens_details": func(f *Features) { f.PromptTokensDetails = true },
	"enable_per_request_metrics":   func(f *Features) { f.PerRequestMetrics = true },
}

// A dataclass field at the class body's indentation: "    name: type".
var fieldLine = regexp.MustCompile(`^    ([a-z_]+)\s*:`)

// Detect reads the Features of the vLLM package in vllmDir (the directory
// named vllm). A file it cannot read offers nothing; the error is for a
// vllmDir that is not there.
func Detect(vllmDir string) (Features, error) {
	var f Features
	if _, err := os.Stat(vllmDir); err != nil {
		return f, err
	}
	entrypoints := filepath.Join(vllmDir, "entrypoints")
	_ = filepath.WalkDir(entrypoints, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil //nolint:nilerr // an unreadable directory offers nothing
		}
		if d.IsDir() || d.Name() != "cli_args.py" {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return nil //nolint:nilerr // an unreadable file offers nothing
		}
		for _, name := range fields(data) {
			if set, ok := cliFields[name]; ok {
				set(&f)
			}
		}
		return nil
	})
	if data, err := os.ReadFile(filepath.Join(vllmDir, "plugins", "__init__.py")); err == nil {
		f.StatLoggerPlugins = bytes.Contains(data, []byte(`"vllm.stat_logger_plugins"`))
	}
	if data, err := os.ReadFile(filepath.Join(vllmDir, "v1", "metrics", "stats.py")); err == nil {
		f.FinishedRequestIDs = classHasField(data, "FinishedRequestStats", "request_id")
	}
	return f, nil
}

// fields are the names of every "    name: type" line of a Python file.
func fields(src []byte) []string {
	var names []string
	sc := bufio.NewScanner(bytes.NewReader(src))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		if m := fieldLine.FindSubmatch(sc.Bytes()); m != nil {
			names = append(names, string(m[1]))
		}
	}
	return names
}

// classHasField reports whether the top-level class cls of a Python file
// declares field at its body's indentation.
func classHasField(src []byte, cls, field string) bool {
	in := false
	for line := range strings.SplitSeq(string(src), "\n") {
		if strings.HasPrefix(line, "class ") {
			in = strings.HasPrefix(line, "class "+cls+"(") || strings.HasPrefix(line, "class "+cls+":")
			continue
		}
		if !in {
			continue
		}
		if line != "" && line[0] != ' ' && line[0] != '\t' && line[0] != '#' && line[0] != '@' && line[0] != ')' {
			in = false
			continue
		}
		if m := fieldLine.FindStringSubmatch(line); m != nil && m[1] == field {
			return true
		}
	}
	return false
}
