package nixgen

import (
	"fmt"
	"path"
	"regexp"
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

// checkPath refuses host and container paths that docker run -v or llama-swap
// would take differently from what was meant.
func checkPath(input, p string) error {
	if p == "" {
		return errorf(ExitPath, input, p, "is empty", "Give an absolute path.")
	}
	if err := checkText(input, p); err != nil {
		return err
	}
	if !strings.HasPrefix(p, "/") {
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
		return errorf(ExitColon, input, p, `contains ":"`,
			"docker run -v uses it to separate HOST:CONTAINER:OPTIONS; rename the file or use a path without \":\".")
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

// checkWord refuses a command word that llama-swap would refuse to load or
// change in a way that was not meant. known holds the macro names it may use.
func checkWord(input, s string, known map[string]bool) error {
	if err := checkText(input, s); err != nil {
		return err
	}
	if m := envRef.FindString(s); m != "" {
		return errorf(ExitUnknownMacro, input, s, "uses "+m,
			"llama-swap replaces it with its own environment variable when it loads the config, and vllm-timings does not generate such text; write the value, or declare a macro.")
	}
	for _, m := range macroRef.FindAllStringSubmatch(s, -1) {
		switch {
		case known[m[1]]:
		case m[1] == "PID":
			return errorf(ExitUnknownMacro, input, s, "uses ${PID}", "llama-swap allows ${PID} only in cmdStop.")
		default:
			return errorf(ExitUnknownMacro, input, s, "uses the unknown macro "+m[0],
				"llama-swap refuses to load a cmd with an unknown macro. Declare it with --macro %s=VALUE (macros.%s in Nix), or drop the braces ($%s) if bash should expand a variable.", m[1], m[1], m[1])
		}
	}
	return nil
}

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
			"llama-swap pastes a macro's value into the command as it is, after quoting, so the value must not hold spaces or any of ; \" ' ( ) $ | & > < ` \\ # { ~ * ? [ =; pass such text as an argument instead.")
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
