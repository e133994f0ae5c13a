"""The patch's cost on the serving path: real vLLM's chat stream generator,
patched against unpatched, in one process.

    python bench_serving.py ORIG_SITE PATCHED_SITE [--responses N] [--tokens T] [--rounds R]

ORIG_SITE and PATCHED_SITE each hold a vllm/ (a vLLM's Python files,
unpatched and patched by vllm-timings); the interpreter's environment
supplies the dependencies. vLLM is imported from ORIG_SITE; the patched
chat serving module and vllm/_llamacpp_timings.py are loaded from
PATCHED_SITE beside it, so both OpenAIServingChat classes run in the same
process on the same vLLM, each built through level2.py's harness (its own
__init__, the fake engine client). The fake engine replays N times the same
prebuilt stream of T RequestOutputs (one token each, stats on), so what is
timed is vLLM's create_chat_completion and its SSE generator, with the
patch's tracker, and not the engine. Both variants run in R alternating
rounds of N/R responses (the order flips every round) after a warm-up,
timed in CPU time of the process. Each round gives a ratio, patched time
over unpatched time; the figure is their median, with their interquartile
range as the rounds' spread and a distribution-free 95% interval as the
median's (the machine is shared, so single rounds stray), and
the ratio of the summed times beside it; for streams without and with
include_usage. --control compares the
unpatched module with a second copy of itself, loaded as the patched one
is: how far from 1 the ratio strays by noise alone.
"""

import argparse
import asyncio
import gc
import os
import statistics
import sys
import time

from testkit import load


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("orig")
    ap.add_argument("patched")
    ap.add_argument("--responses", type=int, default=1000)
    ap.add_argument("--tokens", type=int, default=256)
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("--control", action="store_true",
                    help="A/A run: the second variant is the unpatched module too, loaded the same way as the patched one")
    args = ap.parse_args()
    os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")
    sys.path.insert(0, os.path.abspath(args.orig))
    here = os.path.dirname(os.path.abspath(__file__))
    level2 = load("level2", os.path.join(here, "level2.py"))

    import vllm
    import vllm.entrypoints.openai.chat_completion.serving as unpatched

    if hasattr(unpatched, "_llamacpp_timings"):
        sys.exit(f"bench: {args.orig} is patched; give an unpatched tree first")
    pvllm = os.path.join(os.path.abspath(args.patched), "vllm")
    vllm._llamacpp_timings = load("vllm._llamacpp_timings", os.path.join(pvllm, "_llamacpp_timings.py"))
    second = unpatched.__file__ if args.control else os.path.join(pvllm, "entrypoints", "openai", "chat_completion", "serving.py")
    patched = load("vllm.entrypoints.openai.chat_completion._serving_patched", second)
    if not args.control and not hasattr(patched, "_llamacpp_timings"):
        sys.exit(f"bench: {args.patched} is not patched")

    prompt = dict(len=64, cached=16, tokens=args.tokens, sched=[(100.0, 100.25)])
    variants = {}
    for name, mod in (("unpatched", unpatched), ("patched", patched)):
        h = level2.harness(chat_mod=mod)
        h.engine.script = dict(prompts=[prompt], stream=True, next=0, stats=True, n=1, merge_final=False)
        outs = h.outputs_for("bench", prompt, True, True, 1, False)

        def generate(engine_input, sampling_params, request_id, _outs=outs, **kw):
            async def gen():
                for o in _outs:
                    yield o
            return gen()

        h.engine.generate = generate
        variants[name] = h

    def request(h, usage):
        fields = dict(model="tiny", max_tokens=args.tokens, temperature=0.0, stream=True)
        if usage:
            fields["stream_options"] = {"include_usage": True}
        return h.ChatCompletionRequest(messages=[{"role": "user", "content": "hi"}], **fields)

    async def block(h, k, usage):
        gc.collect()
        # CPU time of this process: time other processes take from it (the
        # machine is shared) does not count.
        t0 = time.process_time()
        chunks = 0
        for _ in range(k):
            res = await h.chat.create_chat_completion(request(h, usage), None)
            async for _ in res:
                chunks += 1
        return time.process_time() - t0, chunks

    async def timings_in(h, usage):
        res = await h.chat.create_chat_completion(request(h, usage), None)
        return any(['"timings"' in line async for line in res])

    async def sanity():
        for usage in (False, True):
            if await timings_in(variants["unpatched"], usage) or not await timings_in(variants["patched"], usage):
                sys.exit("bench: the patched variant must send timings and the unpatched one none")

    if not args.control:
        asyncio.run(sanity())

    async def bench(usage):
        per_round = max(1, args.responses // args.rounds)
        for h in variants.values():  # warm-up, and the timings are there
            await block(h, max(1, per_round // 5), usage)
        total = {n: 0.0 for n in variants}
        ratios, chunks = [], {}
        for r in range(args.rounds):
            order = list(variants) if r % 2 == 0 else list(reversed(variants))
            got = {}
            for n in order:
                got[n], chunks[n] = await block(variants[n], per_round, usage)
                total[n] += got[n]
            ratios.append(got["patched"] / got["unpatched"])
        n = per_round * args.rounds
        q1, med, q3 = statistics.quantiles(ratios, n=4)
        # A distribution-free 95% interval for the median: the order
        # statistics at ranks n/2 -+ 1.96 sqrt(n)/2.
        srt, half = sorted(ratios), 0.98 * len(ratios) ** 0.5
        lo = srt[max(0, int(len(srt) / 2 - half))]
        hi = srt[min(len(srt) - 1, int(len(srt) / 2 + half))]
        return total, (med, lo, hi, q1, q3), n, chunks

    print(f"vLLM {vllm.__version__}: chat stream generator, {args.responses} streamed responses of "
          f"{args.tokens} tokens per variant, {args.rounds} alternating rounds, one process")
    print("  ratio = median of the rounds' patched/unpatched CPU-time ratios (its 95% interval; "
          "the rounds' interquartile range); total = ratio of the summed times")
    for usage in (False, True):
        total, (med, lo, hi, q1, q3), n, chunks = asyncio.run(bench(usage))
        u, p = total["unpatched"], total["patched"]
        per_tok = lambda t: t / (n * args.tokens) * 1e6  # noqa: E731
        print(f"  stream{'+usage' if usage else '      '}: ratio {med:.4f} (95% {lo:.4f}-{hi:.4f}; IQR {q1:.4f}-{q3:.4f}), total {p / u:.4f}; "
              f"unpatched {per_tok(u):.2f} us/token, patched {per_tok(p):.2f} us/token "
              f"(+{per_tok(p) - per_tok(u):.3f}); {chunks['patched'] // max(1, n // args.rounds)} lines/response")


if __name__ == "__main__":
    main()
