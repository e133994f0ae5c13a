"""Level 1's checks of the timings vLLM gets with --disable-log-stats.

    python3 clock_vs_engine.py CLOCK.jsonl
        The table of a stats-on server run with VLLM_TIMINGS_CLOCK_LOG: for
        each chat or completion response, the timings from vLLM's stats (what
        it sent) beside those the API server's clock gives (what it would have
        sent with --disable-log-stats), and how far apart they are.

    python3 clock_vs_engine.py --speeds VERIFY.json
        Every result of `vllm-timings verify --json` (or `verify --llama-swap
        --json`) has timings with speeds: prompt and generation speed > 0
        (the prompt one where prompt_n > 0), prompt_ms + predicted_ms within
        the wall time the client measured, and, behind llama-swap, an activity
        row with both speeds.

Exit status 1 when a check fails or there is nothing to check.
"""

import json
import statistics
import sys


def table(path):
    with open(path) as f:
        rows = [json.loads(line) for line in f if line.strip()]
    if not rows:
        print(f"FAIL: {path} has no line: no response had both stats and a clock")
        return 1
    head = f"{'RESPONSE':<28} {'N P/C/G':>12} {'PROMPT_MS eng':>13} {'clock':>8} {'diff':>7} {'PRED_MS eng':>11} {'clock':>8} {'diff':>7}"
    print(head)
    dp, dg = [], []
    for r in rows:
        e, c = r["engine"], r["clock"]
        dp.append(c["prompt_ms"] - e["prompt_ms"])
        dg.append(c["predicted_ms"] - e["predicted_ms"])
        counts = f"{e['prompt_n']}/{e['cache_n']}/{e['predicted_n']}"
        print(f"{str(r.get('id'))[:28]:<28} {counts:>12} {e['prompt_ms']:>13.2f} {c['prompt_ms']:>8.2f} {dp[-1]:>+7.2f} "
              f"{e['predicted_ms']:>11.2f} {c['predicted_ms']:>8.2f} {dg[-1]:>+7.2f}")
        if (e["prompt_n"], e["cache_n"], e["predicted_n"]) != (c["prompt_n"], c["cache_n"], c["predicted_n"]):
            print(f"FAIL: {r.get('id')}: the counts differ")
            return 1
    print(f"{len(rows)} responses; clock - engine, prompt_ms: median {statistics.median(dp):+.2f}, "
          f"min {min(dp):+.2f}, max {max(dp):+.2f}; predicted_ms: median {statistics.median(dg):+.2f}, "
          f"min {min(dg):+.2f}, max {max(dg):+.2f}")
    return 0


def speeds(path):
    with open(path) as f:
        report = json.load(f)
    results = report.get("results") or []
    bad = []
    for x in results:
        name, t = x.get("name"), x.get("timings")
        if not isinstance(t, dict):
            bad.append(f"{name}: no timings")
            continue
        if t.get("predicted_per_second", 0) <= 0 or (t.get("prompt_n", 0) > 0 and t.get("prompt_per_second", 0) <= 0):
            bad.append(f"{name}: no speed in {t}")
        if t["prompt_ms"] + t["predicted_ms"] > x["wall_ms"]:
            bad.append(f"{name}: prompt_ms + predicted_ms = {t['prompt_ms'] + t['predicted_ms']:.2f} > wall {x['wall_ms']:.2f}")
        row = (x.get("llama_swap") or {}).get("row")
        if report.get("llama_swap"):
            if not row:
                bad.append(f"{name}: no llama-swap row")
            elif row.get("tokens_per_second", 0) <= 0 or (row.get("input_tokens", 0) > 0 and row.get("prompt_per_second", 0) <= 0):
                bad.append(f"{name}: llama-swap row without speeds: {row}")
    if not results or bad:
        print(f"FAIL: {path}: {len(results)} results" + "".join(f"\n  {b}" for b in bad))
        return 1
    where = "llama-swap rows and timings" if report.get("llama_swap") else "timings"
    print(f"speeds: all {len(results)} {where} have prompt and generation speeds, within the wall time")
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--speeds"] and len(sys.argv) == 3:
        sys.exit(speeds(sys.argv[2]))
    if len(sys.argv) == 2:
        sys.exit(table(sys.argv[1]))
    sys.exit(__doc__)
