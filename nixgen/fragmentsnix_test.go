package nixgen

import (
	"strconv"
	"strings"
	"testing"

	"github.com/vllm-timings/vllm-timings/nixgen/nixtest"
)

// nixEvalExpr evaluates expr with fragments.nix bound to the name
// fragments, and returns stdout, stderr and whether it succeeded.
func nixEvalExpr(t *testing.T, expr string) (string, string, bool) {
	t.Helper()
	r := nixtest.TryExpr(t, "let fragments = import "+nixtest.Path("modules/nixos/fragments.nix")+"; in\n"+expr)
	return string(r.Stdout), string(r.Stderr), r.OK
}

// TestFragmentsNixBinaryForms: binary may be a path literal (not copied to
// the store) or a string; a package is refused with a hint.
func TestFragmentsNixBinaryForms(t *testing.T) {
	out, stderr, ok := nixEvalExpr(t, `[ (fragments { binary = /opt/vt/bin/vllm-timings; }).dockerArgs (fragments { binary = "/opt/vt/bin/vllm-timings"; }).dockerArgs ]`)
	want := `["-v /opt/vt/bin/vllm-timings:/patches/vllm-timings:ro","-v /opt/vt/bin/vllm-timings:/patches/vllm-timings:ro"]`
	if !ok || strings.TrimSpace(out) != want {
		t.Errorf("path literal and string: got %s %s, want %s", out, stderr, want)
	}
	_, stderr, ok = nixEvalExpr(t, `(fragments { binary = { type = "derivation"; outPath = "/nix/store/x-vt"; }; }).dockerArgs`)
	if ok || !strings.Contains(stderr, `is an attribute set (a package?); pass the path of the file, for example "${pkg}/bin/vllm-timings"`) {
		t.Errorf("a package as binary: got success=%v, stderr %s", ok, stderr)
	}
}

// TestFragmentsNixMessages: fragments.nix's refusals name the argument, the
// value, the problem and the fix, like Go's.
func TestFragmentsNixMessages(t *testing.T) {
	tests := []struct{ expr, want string }{
		{`(fragments { binary = "/b"; mountPath = "patches/vt"; }).cmdPrefix`, `mountPath "patches/vt": is not an absolute path; docker run -v needs absolute paths`},
		{`(fragments { binary = "/b/x\ny"; }).dockerArgs`, `binary "/b/x\ny": contains a newline`},
		{`(fragments { binary = "/b"; patchsets = [ "/p/a:b" ]; }).dockerArgs`, `patchsets "/p/a:b": contains ":"`},
		{`(fragments { binary = "/b/\${PORT}"; }).dockerArgs`, `contains ${PORT}, which llama-swap would replace`},
		{`(fragments { binary = "/b"; onFailure = "ignore"; }).cmdPrefix`, `onFailure "ignore": must be "warn" or "abort".`},
		{`(fragments { binary = "/b"; }).mkCmd { image = "i"; serveArgs = [ "\${ctx}" ]; }`, `serveArgs "${ctx}": uses the unknown macro ${ctx}`},
		{`(fragments { binary = "/b"; }).mkCmd { image = "i"; macros.ctx = "a b"; }`, `macros.ctx "a b": has a value that cannot be quoted safely`},
		{`(fragments { binary = "/b"; }).mkCmd { image = "i"; env."1X" = "y"; }`, `env "1X": is not a valid environment variable name`},
		{`(fragments { binary = "/b"; }).mkCmd { image = ""; }`, `image "": is missing`},
		{`(fragments { binary = "/b"; }).mkCmd { image = "i"; serveArg = [ ]; }`, `unexpected argument 'serveArg'; did you mean 'serveArgs'?`},
		{`(fragments { binary = "/b"; }).mkCmd { image = "i"; serveArgs = [ "\${X:+--x}" ]; }`, `serveArgs "${X:+--x}": holds a bash expansion, which would reach vLLM unexpanded, because serve arguments are quoted. To let bash expand it, pass the argument raw: (vt.raw "${X:+--x}")`},
		{`(fragments { binary = "/b"; }).mkCmd { image = "i"; serveArgs = [ "\${X}" ]; }`, `pass the argument raw and without braces: (vt.raw "$X")`},
		{`(fragments { binary = "/b"; }).mkCmd { image = "i"; before = [ "set -e;" ]; }`, `before "set -e;": ends in ";"; vllm-timings ends every statement with ";" itself, so drop yours.`},
		{`(fragments { binary = "/b"; }).mkCmd { image = "i"; before = [ "sleep 1 &" ]; }`, `put the background command in braces: "{ sleep 1 & }"`},
		{`(fragments { binary = "/b"; }).mkCmd { image = "i"; before = [ "a # b" ]; }`, `holds a comment`},
		{`(fragments { binary = "/b"; }).mkCmd { image = "i"; publish = "1:1"; }`, `publish "1:1": does not publish ${PORT}`},
		{`(fragments { binary = "/b"; }).mkCmd { image = "i"; entrypoint = [ ]; }`, `entrypoint []: must be a non-empty list of words`},
		{`(fragments { binary = "/b"; }).mkCmd { image = "i"; entrypoint = [ "x" ]; before = [ "true" ]; }`, `before "true": needs bash -c, but entrypoint runs the command directly`},
		{`(fragments { binary = "/b"; }).mkCmd { venv = "/v"; image = "i"; serveArgs = [ "\${PORT}" ]; }`, `does not apply with venv`},
		{`(fragments { binary = "/b"; }).mkCmd { venv = "/v"; }`, `venv "/v": runs vLLM on this host, but no serve argument uses ${PORT}`},
		{`(fragments { binary = "/b"; }).mkModel { image = "i"; cmd = "x"; }`, `mkModel: cmd is what mkModel builds`},
		{`(fragments { binary = "/b"; }).mkCmd { image = "i"; env = [ "A=1" ]; }`, `env "list": must be an attribute set: the container's environment.`},
	}
	// One nix-instantiate each (an error ends the evaluation), in parallel.
	for i, tt := range tests {
		t.Run(strconv.Itoa(i), func(t *testing.T) {
			t.Parallel()
			_, stderr, ok := nixEvalExpr(t, tt.expr)
			if ok || !strings.Contains(stderr, tt.want) {
				t.Errorf("%s: success=%v, stderr lacks %q:\n%s", tt.expr, ok, tt.want, stderr)
			}
		})
	}
}
