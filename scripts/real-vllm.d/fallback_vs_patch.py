"""The fallback's timings beside the patch's, for the same responses.

    python3 fallback_vs_patch.py LOG.jsonl [--markdown]

LOG is what the fallback middleware appends under
VLLM_TIMINGS_FALLBACK_LOG on a server where the patch sets fit and
vllm-timings exec runs with --fallback always: per response, the patch's
timings ("patch", the engine's RequestStateStats) and every source the
fallback had ("sources": "engine" from the stat logger, "clock" from the
API server's clock on streams, "metrics" from vLLM's own per-request
metrics). For each kind of response (chat and completions, streamed and
full; one engine request or several: n=2, two prompts) and each source
it prints how far the fallback's prompt_ms and
predicted_ms are from the patch's: the median and the worst (largest
absolute) difference, fallback - patch, in ms, and how many responses.
Responses without the patch's timings are counted apart. Exit 1 if a
difference of the engine source for one engine request is over 0.01 ms
(the same timestamps), or if the log is empty. For several requests the
two differ by design: the patch takes a non-streamed n>1 response's
times from the last choice to finish, the fallback the union of all, and
the fallback places each request's interval on the API server's clock at
the moment vLLM recorded it.
"""

import json
import statistics
import sys


def main(path, markdown):
    groups = {}
    skipped = 0
    with open(path) as f:
        for line in f:
            rec = json.loads(line)
            patch = rec.get("patch")
            if not patch:
                skipped += 1
                continue
            kind = rec["kind"]
            if kind not in ("chat", "completion"):
                continue
            shape = "streamed" if rec["stream"] else "full"
            shape += ", 1 request" if rec.get("choices", 1) == 1 else ", several"
            for source, t in rec["sources"].items():
                g = groups.setdefault((kind, shape, source), {"prompt": [], "predicted": []})
                g["prompt"].append(t["prompt_ms"] - patch["prompt_ms"])
                g["predicted"].append(t["predicted_ms"] - patch["predicted_ms"])
    if not groups:
        sys.exit("no response with both the patch's and the fallback's timings in " + path)

    def worst(xs):
        return max(xs, key=abs)

    head = ["response", "source", "n", "prompt_ms median", "prompt_ms worst", "predicted_ms median", "predicted_ms worst"]
    rows = []
    bad = False
    order = {"engine": 0, "metrics": 1, "clock": 2}
    for (kind, shape, source) in sorted(groups, key=lambda k: (k[0], k[1], order.get(k[2], 9))):
        g = groups[(kind, shape, source)]
        p, d = g["prompt"], g["predicted"]
        rows.append([f"{kind} {shape}", source, str(len(p)), f"{statistics.median(p):+.2f}", f"{worst(p):+.2f}",
                     f"{statistics.median(d):+.2f}", f"{worst(d):+.2f}"])
        if source == "engine" and "1 request" in shape and max(abs(worst(p)), abs(worst(d))) > 0.01:
            bad = True
    if markdown:
        print("| " + " | ".join(head) + " |")
        print("| " + " | ".join("---" for _ in head) + " |")
        for r in rows:
            print("| " + " | ".join(r) + " |")
    else:
        widths = [max(len(r[i]) for r in [head] + rows) for i in range(len(head))]
        for r in [head] + rows:
            print("  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))))
    print(f"(fallback - patch, ms; {skipped} responses without the patch's timings left out)")
    return 1 if bad else 0


if __name__ == "__main__":
    if any(a in ("-h", "--help") for a in sys.argv[1:]):
        print(__doc__.strip())
        sys.exit(0)
    args = [a for a in sys.argv[1:] if a != "--markdown"]
    if len(args) != 1:
        sys.exit(__doc__)
    sys.exit(main(args[0], "--markdown" in sys.argv))
