"""Print level 1's sample response with its timings and usage side by side.

    python3 show_body.py VERIFY_JSON BODIES_JSON
"""

import json
import sys

bodies = json.load(open(sys.argv[2]))
body = bodies.get("chat (sample)")
if not body:
    sys.exit("no sample body")
print("A real response of the patched `vllm serve` (level 1, /v1/chat/completions):\n")
print(json.dumps(body, indent=1))
t, u = body.get("timings", {}), body.get("usage", {})
cached = (u.get("prompt_tokens_details") or {}).get("cached_tokens")
rows = [
    ("prompt_n + cache_n", f"{t['prompt_n']} + {t['cache_n']} = {t['prompt_n'] + t['cache_n']}", "prompt_tokens", u.get("prompt_tokens")),
    ("cache_n", t["cache_n"], "prompt_tokens_details.cached_tokens", cached),
    ("predicted_n", t["predicted_n"], "completion_tokens", u.get("completion_tokens")),
    ("prompt_ms, prompt_per_second", f"{t['prompt_ms']:.3f}, {t['prompt_per_second']:.1f}", "", ""),
    ("predicted_ms, predicted_per_second", f"{t['predicted_ms']:.3f}, {t['predicted_per_second']:.1f}", "", ""),
]
print(f"\n{'timings':38} {'':>22}   {'usage':38} {'':>6}")
for a, b, c, d in rows:
    print(f"{a:38} {str(b):>22}   {c:38} {str(d):>6}")
