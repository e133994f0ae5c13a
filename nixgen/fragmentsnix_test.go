package nixgen

import (
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
		{`(fragments { binary = "/b"; }).mkCmd { image = "i"; serveArg = [ ]; }`, `unexpected argument 'serveArg'`},
	}
	for _, tt := range tests {
		_, stderr, ok := nixEvalExpr(t, tt.expr)
		if ok || !strings.Contains(stderr, tt.want) {
			t.Errorf("%s: success=%v, stderr lacks %q:\n%s", tt.expr, ok, tt.want, stderr)
		}
	}
}
