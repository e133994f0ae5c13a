package fallback

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// importCheck finds the module as the server's `import` will (its
// sys.path, from the same PYTHONPATH and interpreter flags) and compiles
// it, without importing it: that would import asyncio and logging, tens of
// milliseconds at every start for nothing the compile does not show.
const importCheck = `import importlib.util as u, sys
s = u.find_spec("` + Module + `")
if s is None or not s.origin:
    sys.exit("not found on sys.path")
with open(s.origin, "rb") as f:
    compile(f.read(), s.origin, "exec")
`

// Importable runs interp (the server's Python: its path and the flags its
// #! line gives it) with env and reports whether it finds and compiles the
// module there. A -I or -E among the flags ignores PYTHONPATH, and the
// server then could not import the middleware it is told to mount.
func Importable(ctx context.Context, interp []string, env []string) error {
	if len(interp) == 0 {
		return fmt.Errorf("no Python interpreter to check the module with")
	}
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	args := append(append([]string{}, interp[1:]...), "-c", importCheck)
	cmd := exec.CommandContext(ctx, interp[0], args...)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		msg := strings.TrimSpace(string(out))
		if i := strings.LastIndexByte(msg, '\n'); i >= 0 {
			msg = msg[i+1:]
		}
		if msg == "" {
			return fmt.Errorf("%s cannot import %s: %v", interp[0], Module, err)
		}
		return fmt.Errorf("%s cannot import %s: %s", interp[0], Module, msg)
	}
	return nil
}
