package nixgen

import (
	"fmt"
	"path"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// checkText refuses text that no layer can carry: llama-swap reads cmd line
// by line, and its splitter knows no escape for other non-printable
// characters (syntax.Quote would need bash's $'...').
func checkText(input, s string) error {
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD"):
			return errorf(ExitUnprintable, input, s, fmt.Sprintf("is not valid UTF-8 at byte %d", i),
				"llama-swap's command splitter would replace the byte with U+FFFD; use a UTF-8 name.")
		case r == '\n':
			return errorf(ExitUnprintable, input, s, "contains a newline",
				"llama-swap reads cmd line by line, so a newline cannot be passed through it; remove it or choose another name.")
		case !unicode.IsPrint(r) || r == utf8.RuneError:
			// U+FFFD too: syntax.Quote refuses it, and after llama-swap's
			// splitter it cannot be told from an invalid byte.
			return errorf(ExitUnprintable, input, s, fmt.Sprintf("contains the non-printable character U+%04X at byte %d", r, i),
				"It could only be written with bash's $'...' quoting, which llama-swap's command splitter does not understand; remove it or choose another name.")
		}
	}
	return nil
}

// pathUse says who reads a path after llama-swap, for the checks and the
// advice that depend on it.
type pathUse int

const (
	useMount   pathUse = iota // a side of docker run -v, which splits HOST:CONTAINER:OPTIONS at ":"
	useHost                   // a host path docker never sees, so ":" is fine in it
	useOverlay                // vllm-timings exec --overlay: goes first on PYTHONPATH
)

// checkPath refuses host and container paths that docker run -v or llama-swap
// would take differently from what was meant.
func checkPath(input, p string) error { return checkPathFor(input, p, useMount) }

// checkHostPath is checkPath for a path that docker run -v never sees, so
// ":" is fine in it.
func checkHostPath(input, p string) error { return checkPathFor(input, p, useHost) }

// checkOverlayPath is checkPath for the overlay directory, which goes first
// on PYTHONPATH, in the container or, with --venv, on the host.
func checkOverlayPath(input, p string) error { return checkPathFor(input, p, useOverlay) }

func checkPathFor(input, p string, use pathUse) error {
	if p == "" {
		return errorf(ExitPath, input, p, "is empty", "Give an absolute path.")
	}
	if err := checkText(input, p); err != nil {
		return err
	}
	if !strings.HasPrefix(p, "/") {
		if use == useOverlay {
			return errorf(ExitPath, input, p, "is not an absolute path",
				"The overlay is a writable directory where vLLM runs (in the container; with --venv, on this host); write its full path, for example /tmp/vllm-timings.")
		}
		return errorf(ExitPath, input, p, "is not an absolute path",
			"docker run -v needs absolute paths (a relative host path names a Docker volume instead); write the full path, for example %s.", path.Join("/", "path", "to", p))
	}
	if p == "/" {
		return errorf(ExitPath, input, p, "is the root directory", "Give the path of a file.")
	}
	if c := path.Clean(p); c != p {
		return errorf(ExitPath, input, p, "is not a clean path", "Write it as %s.", c)
	}
	if strings.Contains(p, ":") {
		switch use {
		case useOverlay:
			return errorf(ExitColon, input, p, `contains ":"`,
				"The overlay goes first on PYTHONPATH, where \":\" separates directories; use a path without \":\".")
		case useMount:
			return errorf(ExitColon, input, p, `contains ":"`,
				"docker run -v uses it to separate HOST:CONTAINER:OPTIONS; rename the file or use a path without \":\".")
		}
	}
	if m := macroRef.FindString(p); m != "" {
		return errorf(ExitMacroInPath, input, p, "contains "+m,
			"llama-swap would replace it with a macro's value, or refuse to load the config as an unknown macro; rename the path.")
	}
	if m := envRef.FindString(p); m != "" {
		return errorf(ExitMacroInPath, input, p, "contains "+m,
			"llama-swap would replace it with one of its environment variables; rename the path.")
	}
	return nil
}

// wordContext says who reads a word after llama-swap, for the advice given
// when it uses an unknown macro.
type wordContext int

const (
	ctxNoShell wordContext = iota // run directly: docker run words, the exec forms' argv
	ctxServe                      // a plain serve argument, quoted for bash -c
	ctxBash                       // bash text as it is: a before statement, a raw argument
)

// checkWord refuses a command word that llama-swap would refuse to load or
// change in a way that was not meant. known holds the macros it may use,
// with values to substitute for them: "0" stands for ${PORT} and
// ${MODEL_ID}, whose values are digits and name characters.
func checkWord(input, s string, known map[string]string, ctx wordContext) error {
	if err := checkText(input, s); err != nil {
		return err
	}
	if m := envRef.FindString(s); m != "" {
		return errorf(ExitUnknownMacro, input, s, "uses "+m,
			"llama-swap replaces it with its own environment variable when it loads the config, and vllm-timings does not generate such text; write the value, or declare a macro.")
	}
	for _, m := range macroRef.FindAllStringSubmatch(s, -1) {
		_, ok := known[m[1]]
		switch {
		case ok:
		case m[1] == "PID":
			return errorf(ExitUnknownMacro, input, s, "uses ${PID}", "llama-swap allows ${PID} only in cmdStop.")
		default:
			fix := "llama-swap refuses to load a cmd with an unknown macro. Declare it with --macro %[1]s=VALUE (macros.%[1]s in Nix)"
			switch ctx {
			case ctxServe:
				fix += ", or, if bash should expand the variable %[1]s, pass the argument raw and without braces: --raw '$%[1]s' (vt.raw \"$%[1]s\" in Nix)."
			case ctxBash:
				fix += ", or write $%[1]s (or ${%[1]s:-}) if bash should expand the variable %[1]s: llama-swap leaves those to bash."
			default:
				fix += "; no shell reads this word, so nothing would expand a variable here."
			}
			return errorf(ExitUnknownMacro, input, s, "uses the unknown macro "+m[0], fix, m[1])
		}
	}
	// llama-swap substitutes, then refuses any ${NAME} left: text around a
	// macro must not make one (${${PORT}} becomes ${5800}).
	sub := macroRef.ReplaceAllStringFunc(s, func(r string) string { return known[r[2:len(r)-1]] })
	if m := macroRef.FindString(sub); m != "" {
		return errorf(ExitUnknownMacro, input, s, "becomes a macro reference like "+m+" once llama-swap substitutes its macros",
			"llama-swap refuses to load a cmd with an unknown macro after substitution; do not put a macro inside ${...}.")
	}
	return nil
}

// bashVar finds $NAME, a variable bash would expand.
var bashVar = regexp.MustCompile(`\$[A-Za-z_][A-Za-z0-9_]*`)

// braceExpansion is the ${...} that s starts with, up to the brace that
// closes it (nested ones counted), or all of s when none does.
func braceExpansion(s string) string {
	depth := 0
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '\\':
			i++
		case strings.HasPrefix(s[i:], "${"):
			depth++
			i++
		case s[i] == '}':
			if depth--; depth == 0 {
				return s[:i+1]
			}
		}
	}
	return s
}

// checkExpansion refuses a plain serve argument that holds a bash expansion:
// quoting would hand the text to vLLM unexpanded. known macros are left to
// llama-swap. inBash says whether bash reads the command at all.
func checkExpansion(input, s string, known map[string]string, inBash bool) error {
	rest := macroRef.ReplaceAllString(s, "") // all known by now
	var found string
	if i := strings.Index(rest, "${"); i >= 0 {
		found = braceExpansion(rest[i:])
	} else if m := bashVar.FindString(s); m != "" {
		found = m
	} else {
		return nil
	}
	if !inBash {
		return errorf(ExitExpansion, input, s, "holds the bash expansion "+strconv.Quote(found),
			"No shell runs this command (the entrypoint and venv forms run it directly), so vLLM would get the text unexpanded; write the value itself.")
	}
	q := shellQuote(s)
	return errorf(ExitExpansion, input, s, "holds the bash expansion "+strconv.Quote(found),
		"Serve arguments are quoted, so vLLM would get the text unexpanded. To let bash expand it, pass the argument "+
			"raw: --raw %[1]s on the command line, vt.raw in Nix. To pass the text as it is, single-quote it inside raw: "+
			"--raw %[2]s.",
		q, shellQuote(q))
}

// checkStatement refuses a before statement that cannot be followed by the
// "; " that ends it, or whose comment would hide the rest of the command.
func checkStatement(input, s string) error {
	t := strings.TrimRight(s, " ")
	switch {
	case strings.TrimSpace(s) == "":
		return errorf(ExitStatement, input, s, "is empty", "Remove it.")
	case endsUnescaped(t, ";"):
		return errorf(ExitStatement, input, s, `ends in ";"`,
			`vllm-timings ends every statement with ";" itself; drop yours: %s.`, shellQuote(strings.TrimSuffix(t, ";")))
	case endsUnescaped(t, "&&") || endsUnescaped(t, "||") || endsUnescaped(t, "|"):
		return errorf(ExitStatement, input, s, "ends in an unfinished command",
			"Complete the command after the operator, or drop the operator.")
	case endsUnescaped(t, "&"):
		return errorf(ExitStatement, input, s, `ends in "&"`,
			`A ";" cannot follow "&"; put the background command in braces: %s.`, shellQuote("{ "+t+" }"))
	}
	return checkComment(input, s)
}

// checkRaw refuses a raw argument whose comment would hide the rest of the
// command.
func checkRaw(input, s string) error { return checkComment(input, s) }

// comment finds a "#" where bash starts a comment: at the start of a word.
var comment = regexp.MustCompile(`(^|[ \t;&|()<>])#`)

func checkComment(input, s string) error {
	if comment.MatchString(s) {
		return errorf(ExitStatement, input, s, "holds a comment",
			`bash would ignore the rest of the command after "#", the patcher and vLLM included. Remove the comment, or write a literal "#" as "\#".`)
	}
	return nil
}

// endsUnescaped reports whether s ends in op, not preceded by a backslash.
func endsUnescaped(s, op string) bool {
	return strings.HasSuffix(s, op) && !strings.HasSuffix(s, `\`+op)
}

// checkPublish refuses a port mapping that llama-swap's proxy cannot reach.
func checkPublish(p string) error {
	if !strings.Contains(p, "${PORT}") {
		return errorf(ExitPublish, "--publish", p, "does not publish ${PORT}",
			"llama-swap's proxy connects to 127.0.0.1:${PORT}; map that port to vLLM's, for example --publish '${PORT}:8000' for all interfaces, or the default '127.0.0.1:${PORT}:8000'.")
	}
	return nil
}

// checkForm refuses options that the model's form cannot use.
func checkForm(o Options, m ModelOptions) error {
	var raw int
	for i, a := range m.ServeArgs {
		if a.Raw && raw == 0 {
			raw = i + 1
		}
	}
	switch m.form() {
	case formVenv:
		dockerOnly := []struct {
			input, value string
			set          bool
		}{
			{"--entrypoint", strings.Join(m.Entrypoint, " "), len(m.Entrypoint) > 0},
			{"--image", m.Image, m.Image != ""},
			{"--docker", m.Docker, m.Docker != "" && m.Docker != "docker"},
			{"--docker-arg", strings.Join(m.ExtraDockerArgs, " "), len(m.ExtraDockerArgs) > 0},
			{"--env", strings.Join(append(sortedKeys(m.Env), m.PassEnv...), " "), len(m.Env)+len(m.PassEnv) > 0},
			{"--publish", m.Publish, m.Publish != ""},
			{"--mount", o.Mount, o.Mount != "" && o.Mount != DefaultMount},
		}
		for _, d := range dockerOnly {
			if d.set {
				return errorf(ExitForm, d.input, d.value, "does not apply with --venv",
					"--venv runs vLLM on this host without Docker; remove %s, or drop --venv to run the image.", d.input)
			}
		}
		if len(m.Before) > 0 {
			return errorf(ExitForm, "--before", m.Before[0], "does not apply with --venv",
				"--venv runs vLLM directly, with no shell; run the statements before llama-swap starts, or wrap vLLM in a script of your own.")
		}
		if raw > 0 {
			return errorf(ExitForm, fmt.Sprintf("raw serve argument %d", raw), m.ServeArgs[raw-1].Text, "needs bash, but --venv runs vLLM directly",
				"Write the argument's value itself, without --raw.")
		}
	case formEntrypoint:
		if len(m.Before) > 0 {
			return errorf(ExitForm, "--before", m.Before[0], "does not apply with --entrypoint",
				"The entrypoint form runs the image's entrypoint directly, with no shell; put the statements into the entrypoint script, or drop --entrypoint to run bash -c.")
		}
		if raw > 0 {
			return errorf(ExitForm, fmt.Sprintf("raw serve argument %d", raw), m.ServeArgs[raw-1].Text, "needs bash, but --entrypoint runs the command directly",
				"Write the argument's value itself, without --raw, or drop --entrypoint to run bash -c.")
		}
	}
	return nil
}

// shellQuote quotes s for the user's shell, as the regenerate line does.
func shellQuote(s string) string { return shellLine([]string{s}) }

// llama-swap's rules for macro names (internal/config/macros.go).
var (
	macroName      = regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)
	reservedMacros = map[string]bool{"PID": true, "PORT": true, "MODEL_ID": true}
)

func checkMacro(name, value string) error {
	input := "--macro"
	nv := name + "=" + value
	if !macroName.MatchString(name) || len(name) > 63 {
		return errorf(ExitName, input, nv, "has an invalid macro name",
			"llama-swap macro names use letters, digits, \"_\" and \"-\", at most 63 characters.")
	}
	if reservedMacros[name] {
		return errorf(ExitName, input, nv, "uses the reserved name "+name,
			"llama-swap sets ${PID}, ${PORT} and ${MODEL_ID} itself; choose another name.")
	}
	if err := checkText(input, nv); err != nil {
		return err
	}
	if value == "" {
		return errorf(ExitMacroValue, input, nv, "has an empty value",
			"A word that is only the macro would disappear from the command; give a value.")
	}
	if hasShellSpecial(value) {
		return errorf(ExitMacroValue, input, nv, "has a value that cannot be quoted safely",
			"llama-swap pastes a macro's value into the command as it is, after quoting, so the value must not hold spaces "+
				"or any of ; \" ' ( ) $ | & > < ` \\ # { ~ * ? [ =; pass such text as an argument instead.")
	}
	return nil
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func checkEnvName(name, value string) error {
	if !envName.MatchString(name) {
		return errorf(ExitName, "--env", name+"="+value, "has an invalid variable name",
			"Environment variable names use letters, digits and \"_\", and do not start with a digit.")
	}
	return nil
}

// containerName is Docker's rule for --name, which gets ${MODEL_ID}.
var containerName = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]+$`)

func checkModelName(name string) error {
	if !containerName.MatchString(name) {
		return errorf(ExitName, "model name", name, "is not a valid Docker container name",
			"The command runs docker run --name ${MODEL_ID}; use at least two of letters, digits, \"_\", \".\" and \"-\", starting with a letter or digit.")
	}
	return nil
}
