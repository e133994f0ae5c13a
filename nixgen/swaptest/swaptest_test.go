package swaptest

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestLoaderRules pins the llama-swap rules that nixgen is written for,
// with llama-swap's own loader: macros and ${PORT} are substituted as text;
// bash's ${VAR:+x}, ${VAR:-x} and $VAR pass unchanged; an unknown ${NAME}
// is a load error; lines ending in "\" are joined and the cmd is split
// without a shell.
func TestLoaderRules(t *testing.T) {
	cfg := `{"startPort": 5800, "models": {
  "m1": {"cmd": "run --name ${MODEL_ID} -p ${PORT} ${ctx} \\\n  -c \"a ${VAR:+--flag} ${VAR:-x} $VAR 'q r'\"", "macros": {"ctx": "75000"}, "env": ["VAR=1"]}
}}`
	models, err := Load(t, []byte(cfg))
	if err != nil {
		t.Fatal(err)
	}
	got := models["m1"]
	want := []string{"run", "--name", "m1", "-p", "5800", "75000", "-c", `a ${VAR:+--flag} ${VAR:-x} $VAR 'q r'`}
	if diff := cmp.Diff(want, got.Argv); diff != "" {
		t.Errorf("argv (-want +got):\n%s", diff)
	}
	if got.Proxy != "http://localhost:5800" || !cmp.Equal(got.Env, []string{"VAR=1"}) {
		t.Errorf("proxy %q, env %q", got.Proxy, got.Env)
	}

	_, err = Load(t, []byte(`{"models": {"m1": {"cmd": "run ${VAR}", "proxy": "http://127.0.0.1:8000"}}}`))
	var r *Refused
	if !errors.As(err, &r) || !strings.Contains(r.Msg, "VAR") {
		t.Errorf("an unknown macro: got %v, want a refusal naming it", err)
	}
}
