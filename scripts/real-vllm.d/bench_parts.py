"""Where a full response's timings cost goes: each step counted alone by
callgrind, on a real vLLM response and RequestOutput from level 2's fake
engine, N times per step, so that a step's count per response is exact to
a few instructions (scripts/bench-instructions --parts runs it).

    python bench_parts.py ORIG_SITE PATCHED_SITE LIB API N [LAYOUTS]

API: chat | completion. Prints one line per step: instructions per
response, averaged over LAYOUTS type-cache layouts (bench_instructions.py's
relayout), with the spread between them; the first three less the count
of the bare loop that makes the calls. The steps:

  attach      the patch's call where the response is built (attach_output
              for chat, attach_batch for completions): the timings dict
              and storing it on the response
  build       the dict alone (build_timings with the same arguments)
  store       storing a built dict (_set_timings)
  model_dump  response.model_dump() with timings minus without
  render      what vLLM's api_router sends: starlette's
              JSONResponse(content=response.model_dump()), with timings
              minus without (model_dump, json.dumps and encode)
  dump_json   response.model_dump_json() with timings minus without (how
              vLLM serializes a stream's chunks; the final chunk carries
              the timings)
"""

import asyncio
import copy
import ctypes
import os
import statistics
import sys

from testkit import load


def main():
    orig, patched_site, lib, api, n = sys.argv[1:6]
    layouts = int(sys.argv[6]) if len(sys.argv) > 6 else 1
    n = int(n)
    os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")
    sys.path.insert(0, os.path.abspath(orig))
    here = os.path.dirname(os.path.abspath(__file__))
    level2 = load("level2", os.path.join(here, "level2.py"))
    bench = load("bench_instructions", os.path.join(here, "bench_instructions.py"))
    import vllm
    from starlette.responses import JSONResponse

    h = level2.harness()
    lt = vllm._llamacpp_timings = load("vllm._llamacpp_timings",
                                        os.path.join(os.path.abspath(patched_site), "vllm", "_llamacpp_timings.py"))
    prompt = dict(len=64, cached=16, tokens=64, sched=[(100.0, 100.25)])
    h.engine.script = dict(prompts=[prompt], stream=False, next=0, stats=True, n=1, merge_final=False)
    (final,) = h.outputs_for("bench", prompt, False, True, 1, False)

    def generate(engine_input, sampling_params, request_id, **kw):
        async def gen():
            yield final
        return gen()

    h.engine.generate = generate
    fields = dict(model="tiny", max_tokens=64, temperature=0.0)
    loop = asyncio.new_event_loop()
    if api == "chat":
        base = loop.run_until_complete(h.chat.create_chat_completion(
            h.ChatCompletionRequest(messages=[{"role": "user", "content": "hi"}], **fields), None))

        def attach(r):
            lt.attach_output(r, final)
        stats, cached, drafts = final.metrics, final.num_cached_tokens, None
    else:
        from vllm.entrypoints.openai.completion.protocol import CompletionRequest
        base = loop.run_until_complete(h.cmpl.create_completion(CompletionRequest(prompt="p", **fields), None))

        def attach(r):
            lt.attach_batch(r, [final])
        stats, cached, drafts = [final.metrics], final.num_cached_tokens, None
    if "timings" in base.model_dump():
        sys.exit("bench_parts: the response is from a patched vLLM")
    usage = base.usage
    done = copy.deepcopy(base)
    attach(done)
    t = done.timings

    def fresh():
        return [copy.deepcopy(base) for _ in range(n)]

    def render(r):
        return JSONResponse(content=r.model_dump()).body

    steps = {
        "loop": (fresh, lambda rs: [None for r in rs]),
        "attach": (fresh, lambda rs: [attach(r) for r in rs]),
        "build": (lambda: None, lambda _: [lt.build_timings(stats, usage.prompt_tokens, cached, usage.completion_tokens, drafts)
                                            for _ in range(n)]),
        "store": (fresh, lambda rs: [lt._set_timings(r, t) for r in rs]),
        "model_dump": (lambda: None, lambda _: [done.model_dump() for _ in range(n)]),
        "model_dump-": (lambda: None, lambda _: [base.model_dump() for _ in range(n)]),
        "render": (lambda: None, lambda _: [render(done) for _ in range(n)]),
        "render-": (lambda: None, lambda _: [render(base) for _ in range(n)]),
        "dump_json": (lambda: None, lambda _: [done.model_dump_json() for _ in range(n)]),
        "dump_json-": (lambda: None, lambda _: [base.model_dump_json() for _ in range(n)]),
    }
    region = ctypes.CDLL(lib).vt_bench_region
    order = []
    for seed in range(layouts):
        bench.relayout(seed, last=("vllm._llamacpp_timings",))
        for name, (setup, run) in steps.items():
            run(setup())  # warm-up under this layout
            arg = setup()

            @ctypes.CFUNCTYPE(None)
            def counted():
                run(arg)

            region(counted)
            order.append(name)
    print(" ".join(order))


def report(names_path, parts, n):
    """Per step, from the callgrind parts in order: instructions per
    response (minus the step's '-' twin where it has one), mean and spread
    over layouts."""
    names = open(names_path).read().split()
    counts = {}
    for name, c in zip(names, parts):
        counts.setdefault(name, []).append(c / n)
    for name, cs in counts.items():
        if name.endswith("-"):
            continue
        if name == "loop":
            continue
        if name + "-" in counts:
            cs = [a - b for a, b in zip(cs, counts[name + "-"])]
        elif name in ("attach", "build", "store"):
            cs = [a - b for a, b in zip(cs, counts["loop"])]
        spread = f"± {statistics.stdev(cs):.0f} between layouts" if len(cs) > 1 else ""
        print(f"  {name:<11} {statistics.fmean(cs):9.0f}  {spread}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--report"]:
        report(sys.argv[2], [int(x) for x in sys.argv[4:]], int(sys.argv[3]))
    else:
        main()
