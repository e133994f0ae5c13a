package nixgen

import (
	"regexp"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// llama-swap's patterns (internal/config/macros.go): ${NAME} is a macro,
// substituted or refused when the config is loaded; ${env.NAME} is replaced
// by llama-swap's environment variable NAME even before that.
var (
	macroRef = regexp.MustCompile(`\$\{([a-zA-Z0-9_-]+)\}`)
	envRef   = regexp.MustCompile(`\$\{env\.([a-zA-Z_][a-zA-Z0-9_]*)\}`)
)

// shQuote quotes one word for a POSIX shell. It is syntax.Quote, refusing
// the $'...' form it uses for non-printable characters: llama-swap's
// splitter does not understand it. Callers validate text first, so the
// refusal is a backstop that names the word.
func shQuote(input, s string) (string, error) {
	q, err := syntax.Quote(s, syntax.LangPOSIX)
	if err != nil || strings.HasPrefix(q, "$'") {
		return "", errorf(ExitUnprintable, input, s, "cannot be quoted for llama-swap",
			"It would need the $'...' quoting of bash, which llama-swap's command splitter does not understand; remove non-printable characters.")
	}
	return q, nil
}

// quoteWord quotes a word whose ${NAME} macro references must stay visible
// to llama-swap, which substitutes them as plain text before it splits the
// command. Without references it is shQuote. With references, the literal
// parts are left bare if no part needs quoting, and otherwise the word is
// double-quoted with the references inside: single quotes cannot be used,
// since syntax.Quote falls back to double quotes for words holding "'" and
// then escapes the "$" of the reference. Macro values are checked to be
// bare-word safe (checkMacroValue), so they need no quoting of their own.
func quoteWord(input, s string) (string, error) {
	locs := macroRef.FindAllStringIndex(s, -1)
	if len(locs) == 0 {
		return shQuote(input, s)
	}
	lits := make([]string, 0, len(locs)+1)
	prev := 0
	for _, l := range locs {
		lits = append(lits, s[prev:l[0]])
		prev = l[1]
	}
	lits = append(lits, s[prev:])
	bare := true
	for _, lit := range lits {
		if hasShellSpecial(lit) {
			bare = false
		}
	}
	if bare {
		return s, nil
	}
	var b strings.Builder
	b.WriteByte('"')
	prev = 0
	for _, l := range locs {
		b.WriteString(dqEscape(s[prev:l[0]]))
		b.WriteString(s[l[0]:l[1]])
		prev = l[1]
	}
	b.WriteString(dqEscape(s[prev:]))
	b.WriteByte('"')
	return b.String(), nil
}

// shellSpecial are the characters that make syntax.Quote quote a word (see
// its source; the test TestShellSpecialMatchesQuote keeps this in step).
const shellSpecial = ";\"'()$|&><` \t\r\n\\#{~*?[="

func hasShellSpecial(s string) bool { return strings.ContainsAny(s, shellSpecial) }

// dqEscape escapes text for the inside of a POSIX double-quoted word.
var dqEscape = strings.NewReplacer(`"`, `\"`, `\`, `\\`, "`", "\\`", `$`, `\$`).Replace

// llamaDQ escapes bash source for the inside of llama-swap's -c "..." word.
// There llama-swap's splitter removes a backslash before $ ` " \ and
// newline only. "$" is kept as it is, so that llama-swap still substitutes
// macros; nothing expands it.
var llamaDQ = strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace

// nixString writes s as a Nix double-quoted string, escaping it the way
// nixpkgs' lib.strings.escapeNixString does for printable text.
func nixString(s string) string {
	return `"` + nixStringEscaper.Replace(s) + `"`
}

var nixStringEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, `$`, `\$`, "\n", `\n`, "\r", `\r`, "\t", `\t`)

// nixIndented writes multi-line s as a Nix indented string whose lines start
// with indent, and reports false when s cannot be written that way. In an
// indented string, two single quotes are escaped as three, and "${" as two
// single quotes and "${". A single quote right before such an escape, or at
// the very end, would merge with it into an escape of its own, so those
// strings are left to nixString, and so are strings that the indentation
// rules would change: with tabs or carriage returns, a leading newline, a
// line of spaces only, or leading spaces on every line.
func nixIndented(s, indent string) (string, bool) {
	if strings.Contains(s, "'${") || strings.HasSuffix(s, "'") || strings.ContainsAny(s, "\t\r") ||
		strings.HasPrefix(s, "\n") || blankLine.MatchString(s) || !unindentedLine.MatchString(s) {
		return "", false
	}
	body, trailingNewline := strings.CutSuffix(s, "\n")
	var b strings.Builder
	b.WriteString("''")
	for line := range strings.SplitSeq(body, "\n") {
		b.WriteByte('\n')
		if line != "" {
			b.WriteString(indent)
			b.WriteString(nixIndentedEscaper.Replace(line))
		}
	}
	if trailingNewline {
		b.WriteByte('\n')
		b.WriteString(indent[:max(0, len(indent)-2)])
	}
	b.WriteString("''")
	return b.String(), true
}

// blankLine finds a line of spaces only, which the indentation rules treat
// as empty.
var blankLine = regexp.MustCompile(`(?m)^ +$`)

// unindentedLine finds a line that starts with no space. Without one, Nix
// would take the content's own leading spaces for indentation and strip them.
var unindentedLine = regexp.MustCompile(`(?m)^[^ \n]`)

var nixIndentedEscaper = strings.NewReplacer("''", "'''", "${", "''${")

// nixAttrName writes an attribute name, quoted unless it is a plain identifier.
func nixAttrName(s string) string {
	if nixIdent.MatchString(s) && !nixKeywords[s] {
		return s
	}
	return nixString(s)
}

var (
	nixIdent    = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_'-]*$`)
	nixKeywords = map[string]bool{"if": true, "then": true, "else": true, "assert": true, "with": true, "let": true, "in": true, "rec": true, "inherit": true, "or": true}
)
