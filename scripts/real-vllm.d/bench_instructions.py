"""One variant of the serving-cost count: real vLLM's chat or completion
generators, unpatched or patched, with level 2's fake engine, run inside
one C function (vt_bench_region in LIB) so that callgrind counts only
them (--collect-atstart=no --toggle-collect=vt_bench_region).

    python bench_instructions.py ORIG_SITE PATCHED_SITE LIB VARIANT API MODE STATS N T [LAYOUTS [SEED]]

VARIANT: unpatched | patched; API: chat | completion; MODE: stream | full;
STATS: on | off (off: RequestOutput.metrics is None and, patched, each
output carries the RequestClock the patched output processor would link);
N responses of T tokens, counted under each of LAYOUTS (default 1) type-cache
layouts drawn from seeds SEED, SEED+1, ... (see relayout). vLLM is imported from ORIG_SITE; the patched
variant loads the patched serving module and vllm/_llamacpp_timings.py from
PATCHED_SITE beside it (as bench_serving.py does); the unpatched variant
loads ORIG_SITE's serving module the same way. Each request is
served as vLLM's api_router serves it: the stream through starlette's
StreamingResponse, a full response as JSONResponse(content=
response.model_dump()), sent over ASGI to a send that keeps the bodies.
Prints the lines (chunks) sent, as a check that both variants did the same
work, and "parts:" with what each callgrind part (OUT.1, OUT.2, ...) counted.

BENCH_FALLBACK=PATH (the fallback's vllm_timings_fallback.py) counts, in
each layout, the app alone ("app") and under the fallback's
TimingsMiddleware ("fallback"), in turns; with stats on, vLLM calls the
fallback's stat logger once an engine output (engine step), the last one
with the request's FinishedRequestStats, as vLLM would.

The patched variant must send timings and the unpatched one must not;
BENCH_NOCHECK=1 drops that check, to count a hand-edited PATCHED_SITE
whose calls do nothing (how docs/figures.md splits the cost between
the per-chunk call, observe and attach).
"""

import asyncio
import ctypes
import gc
import os
import sys
from types import SimpleNamespace

from testkit import load


# Throw-away types, one tag each at their lookup: how _align_tags uses up tags.
_SPARE = []


def _tag(t):
    """Look a missing name up on t, which gives it a tag if it has none."""
    try:
        type.__getattribute__(t, "__vt_layout_probe__")
    except AttributeError:
        pass
    except Exception:  # noqa: BLE001 - a type with an odd metaclass keeps its lazy tag
        pass


def _align_tags(modified):
    """Invalidate every type's tag (PyType_ClearCache, which returns the
    last tag handed out) so that the next tag handed out is 1 modulo the
    method cache's size, by tagging spare types. What this code itself
    tags on the way (a few types it looks up) is measured in the first
    round and allowed for in the second. The spares it tagged lose their
    tags again, so that in the layout they take their places as in the
    other variant, whose count of spares used differs."""
    counter = ctypes.pythonapi.PyType_ClearCache
    counter.restype = ctypes.c_uint
    last, overhead = counter(), 0
    for _ in range(3):
        if (last + 1) % 4096 == 1:
            break
        need = (1 - (last + 1) - overhead) % 4096
        for t in _SPARE[:need]:
            _tag(t)
        now = counter()
        overhead = (now - last - need) % 4096
        last = now
    else:
        sys.exit("bench: could not align the type version tags")
    for t in _SPARE:
        modified(t)


def relayout(seed, last=()):
    """Give every type a new version tag, in an order drawn from seed.

    CPython's method cache (4,096 entries) is indexed by a type's version
    tag and the address of the attribute's name, and tags are handed out in
    the order types are first looked up. So code that merely looks up one
    more type early (the patch's StreamTracker) moves every later type's
    tag, and with it which hot (type, name) pairs collide in the cache. On
    vLLM 0.33's chat stream that alone changed the count per token by over
    1 %, in either direction, an effect of layout, not of work: a real
    server's layout is different again. Each layout here invalidates every
    type's tag, clears the cache and tags all types in a shuffled order;
    the counts are summed over several layouts, so that both variants are
    measured over the same spread of layouts.

    The two variants get the same layout for the same seed (common random
    numbers): each type's place comes from a hash of the seed and its name,
    not from a shuffle of the whole list, so the types both variants have
    come in the same order; the types of the modules in ``last`` (the
    patch's own, which only the patched variant has) are tagged after all
    the others; and tagging starts from the same counter value modulo the
    cache size, the only part of a tag the cache index uses (3.11:
    ``(tag ^ (address of name >> 3)) & 4095``), by using up tags on a
    throw-away type first. With the names interned at the same addresses
    (both variants import the same modules in the same order before the
    serving module under test), the method cache then starts each layout
    the same way in both, and the patched-minus-unpatched difference of a
    layout is the patch's work plus its own lookups' collisions, without
    the spread from two unrelated layouts.
    """
    import hashlib

    if not _SPARE:
        _SPARE.extend(type(f"_vt_spare_{i}", (), {}) for i in range(4096))
    types, todo = [], [object]
    seen = set()
    while todo:
        t = todo.pop()
        if id(t) in seen:
            continue
        seen.add(id(t))
        types.append(t)
        try:
            todo.extend(type.__subclasses__(t))
        except TypeError:
            pass

    def place(t):
        module = str(type.__getattribute__(t, "__module__"))
        name = f"{seed}:{module}:{type.__getattribute__(t, '__qualname__')}"
        return module in last, hashlib.blake2b(name.encode(), digest_size=8).digest()

    types.sort(key=place)  # stable: types of one name keep the order found
    modified = ctypes.pythonapi.PyType_Modified
    modified.argtypes = [ctypes.py_object]
    modified.restype = None
    for t in types:
        modified(t)  # tag 0: a new one at its next lookup
    sys._clear_type_cache()
    _align_tags(modified)
    for t in types:
        _tag(t)


def main():
    orig, patched_site, lib, variant, api, mode, stats, n, tokens = sys.argv[1:10]
    layouts, first_seed = (int(x) for x in (sys.argv[10:12] + ["1", "0"][len(sys.argv[10:12]):]))
    n, tokens, stream, with_stats = int(n), int(tokens), mode == "stream", stats == "on"
    fallback = os.environ.get("BENCH_FALLBACK") or None
    os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")
    sys.path.insert(0, os.path.abspath(orig))
    here = os.path.dirname(os.path.abspath(__file__))
    level2 = load("level2", os.path.join(here, "level2.py"))

    import vllm

    rel = {"chat": ("chat_completion", "vllm.entrypoints.openai.chat_completion.serving"),
           "completion": ("completion", "vllm.entrypoints.openai.completion.serving")}[api]
    # Everything both variants use is imported first, by a harness of vLLM's
    # own serving modules, so that the names hot in the requests are
    # interned at the same addresses in both (see relayout); only then what
    # differs: the patch's module and the serving module under test. Both
    # variants load the latter the same way, from a file under one module
    # name, so that the only difference is the patch.
    level2.harness()
    site = patched_site if variant == "patched" else orig
    pvllm = os.path.join(os.path.abspath(site), "vllm")
    if variant == "patched":
        vllm._llamacpp_timings = load("vllm._llamacpp_timings", os.path.join(pvllm, "_llamacpp_timings.py"))
    mod = load(rel[1] + "_bench", os.path.join(pvllm, "entrypoints", "openai", rel[0], "serving.py"))
    if hasattr(mod, "_llamacpp_timings") != (variant == "patched"):
        sys.exit(f"bench: {site} is {'' if variant == 'unpatched' else 'not '}patched")
    from vllm.entrypoints.openai.completion.protocol import CompletionRequest

    h = level2.harness(**{"chat_mod" if api == "chat" else "cmpl_mod": mod})
    prompt = dict(len=64, cached=16, tokens=tokens, sched=[(100.0, 100.25)])
    h.engine.script = dict(prompts=[prompt], stream=stream, next=0, stats=with_stats, n=1, merge_final=False)
    outs = h.outputs_for("bench", prompt, stream, with_stats, 1, False)

    # The fallback's stat logger, where it counts (stats on, in the
    # fallback's regions): vLLM calls its record() once an engine step, with
    # the finished requests' stats in the step that finishes them.
    fb, stat_logger, logger = None, None, [None]
    if fallback:
        # The routes exec gives the fallback: every one over unpatched vLLM;
        # beside a patch that covers chat and completions, the others
        # (VLLM_TIMINGS_FALLBACK_ROUTES set in the environment wins: all
        # five paths count --fallback always).
        if variant == "patched":
            os.environ.setdefault("VLLM_TIMINGS_FALLBACK_ROUTES", "/v1/responses /v1/messages")
        else:
            os.environ.pop("VLLM_TIMINGS_FALLBACK_ROUTES", None)
        fb = load("vllm_timings_fallback", fallback)
        if with_stats:
            from vllm.v1.metrics.stats import FinishedRequestStats
            stat_logger = fb.StatLogger()
    final_step = len(outs) - 1

    # vLLM builds the IterationStats of each step with stats on, stat logger
    # plugins or not: only the one that finishes the request is built here
    # (its id is the request's), the others share one made outside the count.
    unfinished = SimpleNamespace(finished_requests=[])

    def generate(engine_input, sampling_params, request_id, **kw):
        async def gen():
            for i, o in enumerate(outs):
                if logger[0] is not None:
                    it = unfinished
                    if i == final_step:
                        it = SimpleNamespace(finished_requests=[FinishedRequestStats(
                            finish_reason=None, request_id=request_id, prefill_time=0.25, decode_time=0.5,
                            num_cached_tokens=16, num_generation_tokens=tokens)])
                    logger[0].record(None, it, mm_cache_stats=None, engine_idx=0)
                yield o
        return gen()

    h.engine.generate = generate
    fields = dict(model="tiny", max_tokens=tokens, temperature=0.0, stream=stream)
    if stream:
        fields["stream_options"] = {"include_usage": True}

    # What vLLM's api_router does with the result: a StreamingResponse of
    # the stream generator, or JSONResponse(content=response.model_dump()),
    # sent through ASGI, as the only app (app) or under the fallback's
    # middleware (TimingsMiddleware(app)), to a send that keeps the bodies.
    from starlette.responses import JSONResponse, StreamingResponse

    scope = {"type": "http", "method": "POST", "asgi": {"spec_version": "2.4"}, "root_path": "", "headers": [],
             "path": "/v1/chat/completions" if api == "chat" else "/v1/completions"}
    bodies = []

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        body = message.get("body")
        if body:
            bodies.append(body)

    async def app(scope, receive, send):
        if api == "chat":
            res = await h.chat.create_chat_completion(
                h.ChatCompletionRequest(messages=[{"role": "user", "content": "hi"}], **fields), None)
        else:
            res = await h.cmpl.create_completion(CompletionRequest(prompt="p", **fields), None)
        if stream:
            response = StreamingResponse(content=res, media_type="text/event-stream")
        else:
            response = JSONResponse(content=res.model_dump())
        await response(scope, receive, send)

    served = {"app": app}
    if fb is not None:
        served["fallback"] = fb.TimingsMiddleware(app)

    async def one(which):
        logger[0] = stat_logger if which == "fallback" else None
        bodies.clear()
        await served[which](scope, receive, send)
        return [b.decode() for b in bodies]

    lines = []
    timed = []

    async def run(k, which):
        for _ in range(k):
            lines.append(await one(which))

    loop = asyncio.new_event_loop()
    for which in served:
        loop.run_until_complete(run(3, which))  # warm-up: imports, caches
        has = any('"timings"' in x for x in lines[-1])
        # The fallback gives a full response timings only from engine stats.
        want = variant == "patched" or which == "fallback" and (stream or with_stats)
        if has != want and not os.environ.get("BENCH_NOCHECK"):
            sys.exit(f"bench: {variant} variant {'sends' if has else 'lacks'} timings ({which})")

    order = []
    for seed in range(first_seed, first_seed + layouts):
        relayout(seed, last=("vllm._llamacpp_timings", "vllm_timings_fallback"))
        # In a layout, the app alone and under the fallback's middleware,
        # in turns (which goes first alternates), paired by layout.
        for which in list(served)[:: 1 if seed % 2 == 0 else -1]:
            loop.run_until_complete(run(2, which))  # warm-up again: re-specialize for the new tags
            lines.clear()

            @ctypes.CFUNCTYPE(None)
            def region():
                loop.run_until_complete(run(n, which))
                timed.append(True)

            gc.collect()
            gc.disable()
            ctypes.CDLL(lib).vt_bench_region(region)
            gc.enable()
            order.append(which)
    if len(timed) != len(order):
        sys.exit("bench: the region did not run")
    print(f"{variant} {api} {mode} stats={stats}: {n} responses, {sum(len(x) for x in lines)} lines")
    print("parts:", " ".join(order))


if __name__ == "__main__":
    main()
