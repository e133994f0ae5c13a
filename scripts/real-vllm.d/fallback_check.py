"""The fallback level's checks on a `vllm-timings verify --json` report.

    python3 fallback_check.py VERIFY.json stats|nostats

The report is of a vLLM no patch set fits, served through vllm-timings
exec's fallback (scripts/real-vllm --level 1-fallback). Every request
must have been answered by the fallback middleware (its x-vllm-timings
header, "source" in the report) and:

  * with stats: carry timings with both speeds (the prompt speed where
    prompt_n > 0), a full response's from the engine's stats (or vLLM's
    per-request metrics);
  * without stats (--disable-log-stats): a stream carry timings with both
    speeds; a full response carry none (source "none": its split is not
    observable) and no speed;
  * prompt_ms + predicted_ms within the wall time the client measured;
  * behind llama-swap: have an activity row whose tokens are the
    response's usage (input + cached = the prompt, output = the
    completion; verify checked them against the truth already) and whose
    speeds are there exactly where the response has timings.

Exit status 1 when a check fails or there is nothing to check.
"""

import json
import sys


def main(path, mode):
    with open(path) as f:
        report = json.load(f)
    results = report.get("results") or []
    swap = report.get("llama_swap")
    bad = []
    for x in results:
        name, t, src = x.get("name"), x.get("timings"), x.get("source")
        full = not x.get("stream")
        if not src:
            bad.append(f"{name}: no x-vllm-timings header: the fallback did not answer")
            continue
        expect_timings = not (full and mode == "nostats")
        if full and mode == "stats" and src not in ("engine", "metrics"):
            bad.append(f"{name}: a full response's source is {src!r}, want engine (or metrics)")
        if full and mode == "nostats" and src != "none":
            bad.append(f"{name}: a full response's source is {src!r} without stats, want none")
        if expect_timings:
            if not isinstance(t, dict):
                bad.append(f"{name}: no timings")
                continue
            if t.get("predicted_per_second", 0) <= 0 or (t.get("prompt_n", 0) > 0 and t.get("prompt_per_second", 0) <= 0):
                bad.append(f"{name}: no speed in {t}")
            if t["prompt_ms"] + t["predicted_ms"] > x["wall_ms"]:
                bad.append(f"{name}: prompt_ms + predicted_ms = {t['prompt_ms'] + t['predicted_ms']:.2f} > wall {x['wall_ms']:.2f}")
        elif t is not None:
            bad.append(f"{name}: timings on a full response without stats: {t}")
        if not swap:
            continue
        row = (x.get("llama_swap") or {}).get("row")
        usage = x.get("usage") or {}
        if not row:
            bad.append(f"{name}: no llama-swap row")
            continue
        if row.get("output_tokens") != usage.get("completion_tokens"):
            bad.append(f"{name}: llama-swap's output tokens {row.get('output_tokens')} != usage {usage.get('completion_tokens')}")
        if expect_timings and row.get("input_tokens", 0) + max(row.get("cache_tokens", 0), 0) != usage.get("prompt_tokens"):
            bad.append(f"{name}: llama-swap's input + cached tokens != usage's prompt {usage.get('prompt_tokens')}: {row}")
        has_speeds = row.get("tokens_per_second", -1) > 0
        if has_speeds != expect_timings:
            bad.append(f"{name}: llama-swap row speeds {row.get('prompt_per_second')}, {row.get('tokens_per_second')} (timings: {expect_timings})")
    if not results or bad:
        print(f"FAIL: {path}: {len(results)} results" + "".join(f"\n  {b}" for b in bad))
        return 1
    full = sum(1 for x in results if not x.get("stream"))
    print(f"fallback ({mode}): all {len(results)} responses answered by the fallback; "
          + ("every one with both speeds" if mode == "stats" else f"{len(results) - full} streams with both speeds, {full} full responses without (no engine stats)")
          + (", and a llama-swap row each" if swap else "") + ", within the wall time")
    return 0


if __name__ == "__main__":
    if any(a in ("-h", "--help") for a in sys.argv[1:]):
        print(__doc__.strip())
        sys.exit(0)
    if len(sys.argv) != 3 or sys.argv[2] not in ("stats", "nostats"):
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1], sys.argv[2]))
