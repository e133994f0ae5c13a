"""Drive the serving generators of a vLLM fixture tree with fake engine output.

    python3 drive_serving.py SITE_DIR [--per-request-metrics]
    python3 drive_serving.py --batch < JOBS.json

imports vllm from SITE_DIR (a fixture tree, patched or not), runs a fixed set
of requests through OpenAIServingChat and OpenAIServingCompletion with fake
RequestOutputs whose RequestStateStats carry chosen timestamps, and prints
one JSON object: scenario name -> list of response bodies (a full response
is one body; a stream is the JSON of each data: line). The Go tests compare
a patched tree's output with the unpatched one, check the timings, and send
the bodies through the real llama-swap.

--per-request-metrics builds the serving classes with
enable_per_request_metrics=True, as `vllm serve --enable-per-request-metrics`
does, where the fixture's classes take it (the v0.25-on shapes).

The "_truth" entry gives, per scenario, what the engine did: whether it is a
stream, the prompt tokens (counted once for n>1), the cached ones, the
tokens generated, the draft counts where reported, and each engine
request's (scheduled_ts, first_token_ts, last_token_ts).

The driver adapts to the fixture's layout:
  - serving code in chat_completion/ and completion/ packages (v0.15 on) or
    in serving_chat.py and serving_completion.py (before);
  - a fixture with a v1 output processor (vllm/v1/engine/output_processor.py)
    makes the RequestOutputs: the engine feeds it EngineCoreOutputs and the
    serving code sees whatever it builds, metrics included (or not, as in
    v0.10). Without one, the driver builds RequestOutputs itself, with
    metrics;
  - a fixture whose vllm/outputs.py CompletionOutput has spec_decode_metrics
    gets per-sequence draft counts on finished outputs in the *_spec
    scenarios; other fixtures get none (that vLLM has no such attribute).
The "_driver" entry describes what was found, for the Go test.

--batch reads a JSON list of [SITE_DIR, per_request_metrics, OUT_FILE] from
stdin and drives each tree into its file, each in a child forked from one
process that has imported pydantic once (see batch()): the Go tests drive
fourteen trees, and the interpreter's start and pydantic's import were half
of each run.
"""

import asyncio
import dataclasses
import importlib
import inspect
import json
import os
import sys
import traceback
from types import SimpleNamespace

# FakeMonotonic: scripts/real-vllm.d/testkit.py, shared with level 2 of scripts/real-vllm.
sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "scripts", "real-vllm.d"))
from testkit import FakeMonotonic  # noqa: E402

# Set by load() for the tree being driven.
OpenAIServingChat = OpenAIServingCompletion = None
EngineCoreOutput = OutputProcessor = None
DRAFTS = PER_REQUEST_METRICS = False


def load(site, per_request_metrics):
    """Import the serving classes (and the output processor, where there is
    one) of the vllm in site."""
    global OpenAIServingChat, OpenAIServingCompletion, EngineCoreOutput, OutputProcessor, DRAFTS, PER_REQUEST_METRICS
    PER_REQUEST_METRICS = per_request_metrics
    sys.path.insert(0, site)
    try:
        from vllm.entrypoints.openai.chat_completion.serving import OpenAIServingChat
        from vllm.entrypoints.openai.completion.serving import OpenAIServingCompletion
    except ImportError:
        from vllm.entrypoints.openai.serving_chat import OpenAIServingChat
        from vllm.entrypoints.openai.serving_completion import OpenAIServingCompletion

    try:
        from vllm.v1.engine import EngineCoreOutput
        from vllm.v1.engine.output_processor import OutputProcessor
    except ImportError:
        OutputProcessor = None
    try:
        from vllm import _llamacpp_timings

        _llamacpp_timings.time = CLOCK
    except ImportError:
        pass  # not patched

    try:
        from vllm.outputs import CompletionOutput

        DRAFTS = "spec_decode_metrics" in {f.name for f in dataclasses.fields(CompletionOutput)}
    except (ImportError, TypeError):
        DRAFTS = False


# Per-sequence draft counts, like vLLM's RequestSpecDecodeMetrics: with k=2,
# verify steps that accepted 0, 1 and 2 drafts happened 1, 2 and 1 times:
# 4 of 8 proposed draft tokens accepted.
SPEC = dict(num_spec_tokens=2, histogram=[1, 2, 1], num_draft_tokens=8)
DRAFT_N, DRAFT_N_ACCEPTED = 8, 4


STEP = 0.05  # seconds between a choice's tokens


def stats(scheduled, first):
    return SimpleNamespace(scheduled_ts=scheduled, first_token_ts=first, last_token_ts=first)


TRUTH = {}


def truth(name, stream, prompt, cached, generated, requests, drafts=None):
    """Record what the engine did for scenario name; requests are
    (scheduled, first token, tokens) per engine request."""
    TRUTH[name] = {
        "stream": stream,
        "prompt_tokens": prompt,
        "cached_tokens": cached,
        "generated": generated,
        "drafts": list(drafts) if drafts and DRAFTS else None,
        "requests": [[s, f, f + STEP * (n - 1)] for s, f, n in requests],
    }


def per_child(value, n):
    """One value per child: value itself if it is a list, else n copies."""
    return list(value) if isinstance(value, (list, tuple)) else [value] * n


def fake_engine(request_id, prompt_len, cached, metrics, tokens, n, final_only, spec):
    """RequestOutputs one token at a time for n choices, as the engine does
    in streaming (DELTA) mode; the stats object is updated in place. tokens
    and cached may give one value per child."""
    outs = []
    tokens, cached = per_child(tokens, n), per_child(cached, n)
    for step in range(max(tokens)):
        for idx in range(n):
            if step >= tokens[idx]:
                continue
            m = metrics[idx] if metrics else None
            if m is not None:
                m.last_token_ts = m.first_token_ts + STEP * step
            finish = "stop" if step == tokens[idx] - 1 else None
            choice = SimpleNamespace(index=idx, text=f"t{step}", token_ids=[step], finish_reason=finish)
            if spec and finish:
                choice.spec_decode_metrics = SimpleNamespace(**SPEC)
            outs.append(
                SimpleNamespace(
                    request_id=request_id,
                    prompt_token_ids=list(range(prompt_len)),
                    num_cached_tokens=cached[idx],
                    metrics=m,
                    outputs=[choice],
                )
            )
    if final_only:
        # The full generator keeps only the last output; give it all tokens.
        last = outs[-1]
        last.outputs = [
            SimpleNamespace(index=i, text="x" * tokens[i], token_ids=list(range(tokens[i])), finish_reason="stop")
            for i in range(n)
        ]
        if spec:
            for c in last.outputs:
                c.spec_decode_metrics = SimpleNamespace(**SPEC)
        outs = [last]
    return outs


# The clock the patched module reads where vLLM keeps no stats:
# processor_engine sets it to the engine's own times.
CLOCK = FakeMonotonic()


def processor_engine(request_id, prompt_len, cached, metrics, tokens, n, final_only):
    """The same requests through the fixture's v1 output processor: it keeps
    the stats and builds the RequestOutputs. metrics gives each child's
    (scheduled, first token) times, or None for --disable-log-stats: then
    the times are (100.0, 100.25), on CLOCK."""
    proc = OutputProcessor(log_stats=metrics is not None)
    tokens, cached = per_child(tokens, n), per_child(cached, n)
    for idx in range(n):
        CLOCK.now = metrics[idx].scheduled_ts if metrics else 100.0
        proc.add_request(f"{idx}_{request_id}", request_id, idx, list(range(prompt_len)), cached[idx], final_only)
    outs = []
    for step in range(max(tokens)):
        for idx in range(n):
            if step >= tokens[idx]:
                continue
            scheduled, first = (metrics[idx].scheduled_ts, metrics[idx].first_token_ts) if metrics else (100.0, 100.25)
            CLOCK.now = first + STEP * step
            eco = EngineCoreOutput(
                request_id=f"{idx}_{request_id}",
                new_token_ids=[step],
                finish_reason="stop" if step == tokens[idx] - 1 else None,
                scheduled_ts=scheduled if step == 0 else None,
            )
            outs += proc.process_outputs([eco], first + STEP * step)
    return outs


def engine(request_id, prompt_len, cached, metrics, tokens, n=1, final_only=False, spec=False):
    if OutputProcessor is not None:
        return processor_engine(request_id, prompt_len, cached, metrics, tokens, n, final_only)
    return fake_engine(request_id, prompt_len, cached, metrics, tokens, n, final_only, spec and DRAFTS)


async def agen(items):
    for item in items:
        yield item


async def collect(gen):
    bodies = []
    async for line in gen:
        assert line.startswith("data: "), line
        payload = line[len("data: "):].strip()
        if payload != "[DONE]":
            bodies.append(json.loads(payload))
    return bodies


def req(**kw):
    base = dict(n=1, include_usage=False, stream=False)
    base.update(kw)
    return SimpleNamespace(**base)


def processor_links_metrics():
    """Whether a RequestOutput from the fixture's processor carries the
    request's stats object itself (None without a processor)."""
    if OutputProcessor is None:
        return None
    proc = OutputProcessor(log_stats=True)
    proc.add_request("0_r", "r", 0, [1, 2], 0)
    state = proc.request_states["0_r"]
    (out,) = proc.process_outputs([EngineCoreOutput(request_id="0_r", new_token_ids=[7], finish_reason="stop", scheduled_ts=1.0)], 2.0)
    pooling = OutputProcessor(log_stats=True)
    pooling.add_request("0_p", "p", 0, [1], 0)
    (pout,) = pooling.process_outputs([EngineCoreOutput(request_id="0_p", new_token_ids=[], finish_reason="stop", pooling_output=[0.5])], 2.0)
    return {"metrics_is_stats": out.metrics is state.stats, "pooling_has_metrics": hasattr(pout, "metrics")}


def build(cls, **kw):
    """cls(**kw), with enable_per_request_metrics where the class takes it."""
    if PER_REQUEST_METRICS and "enable_per_request_metrics" in inspect.signature(cls.__init__).parameters:
        kw["enable_per_request_metrics"] = True
    return cls(**kw)


async def main():
    chat = build(OpenAIServingChat, system_fingerprint="fp_fixture")
    cmpl = build(OpenAIServingCompletion)
    out = {"_driver": [{"processor": processor_links_metrics(), "drafts": DRAFTS}]}

    def one(n=1, with_stats=True, cached=4, tokens=3, final_only=False, spec=False):
        metrics = [stats(100.0 + i * 0.01, 100.25 + i * 0.01) for i in range(n)] if with_stats else None
        return engine("chat-1", 10, cached, metrics, tokens, n=n, final_only=final_only, spec=spec)

    def one_truth(name, stream, n=1, cached=4, tokens=3, spec=False):
        reqs = [(100.0 + i * 0.01, 100.25 + i * 0.01, tokens) for i in range(n)]
        truth(name, stream, 10, cached, n * tokens, reqs, (8 * n, 4 * n) if spec else None)

    async def full(name, **kw):
        res = await chat.chat_completion_full_generator(req(), agen(one(final_only=True, **kw)), "chat-1", "m")
        out[name] = [json.loads(res.model_dump_json())]

    async def stream(name, request, **kw):
        out[name] = await collect(chat.chat_completion_stream_generator(request, agen(one(**kw)), "chat-1", "m"))

    await full("chat_full")
    one_truth("chat_full", False)
    await full("chat_full_no_stats", with_stats=False)
    if OutputProcessor is not None:  # the patched processor's clock stands in for stats
        one_truth("chat_full_no_stats", False)
    await full("chat_full_spec", spec=True)
    one_truth("chat_full_spec", False, spec=True)
    await stream("chat_stream_usage", req(include_usage=True))
    one_truth("chat_stream_usage", True)
    await stream("chat_stream_no_usage", req())
    one_truth("chat_stream_no_usage", True)
    await stream("chat_stream_n2", req(n=2), n=2)
    one_truth("chat_stream_n2", True, n=2)
    await stream("chat_stream_no_stats", req(include_usage=True), with_stats=False)
    if OutputProcessor is not None:
        one_truth("chat_stream_no_stats", True)
    await stream("chat_stream_one_token", req(), tokens=1)
    one_truth("chat_stream_one_token", True, tokens=1)
    await stream("chat_stream_n2_spec", req(n=2, include_usage=True), n=2, spec=True)
    one_truth("chat_stream_n2_spec", True, n=2, spec=True)
    # n=2 children that differ as vLLM's do with prefix caching (the second
    # reuses what the first computed) and in length: the first output is
    # child 0's, with 4 cached tokens, the usage's count; child 1, with 8,
    # finishes first. cache_n must be the first output's, as in the usage.
    await stream("chat_stream_n2_cached", req(n=2, include_usage=True), n=2, cached=[4, 8], tokens=[3, 2])
    truth("chat_stream_n2_cached", True, 10, 4, 5, [(100.0, 100.25, 3), (100.01, 100.26, 2)])

    def prompts(with_stats=True, final_only=False, spec=False, count=2):
        items = []
        a = engine("cmpl-0", 8, 2, [stats(50.0, 50.2)] if with_stats else None, 2, final_only=final_only, spec=spec)
        b = engine("cmpl-1", 6, 0, [stats(50.0, 50.3)] if with_stats else None, 4, final_only=final_only, spec=spec)
        if count == 1:
            return [(0, o) for o in a]
        # interleave the two prompts as merge_async_iterators would
        for k in range(max(len(a), len(b))):
            if k < len(a):
                items.append((0, a[k]))
            if k < len(b):
                items.append((1, b[k]))
        return items

    def prompts_truth(name, stream, spec=False, count=2):
        if count == 1:
            truth(name, stream, 8, 2, 2, [(50.0, 50.2, 2)], (8, 4) if spec else None)
        else:
            truth(name, stream, 14, 2, 6, [(50.0, 50.2, 2), (50.0, 50.3, 4)], (16, 8) if spec else None)

    async def cmpl_full(name, count=2, **kw):
        res = await cmpl.create_completion(req(), agen(prompts(final_only=True, count=count, **kw)), count)
        out[name] = [json.loads(res.model_dump_json())]

    async def cmpl_stream(name, request, count=2, **kw):
        out[name] = await collect(await cmpl.create_completion(request, agen(prompts(count=count, **kw)), count))

    await cmpl_full("completion_full_2_prompts")
    prompts_truth("completion_full_2_prompts", False)
    await cmpl_full("completion_full_no_stats", with_stats=False)
    if OutputProcessor is not None:
        truth("completion_full_no_stats", False, 14, 2, 6, [(100.0, 100.25, 2), (100.0, 100.25, 4)])
    await cmpl_full("completion_full_spec", spec=True)
    prompts_truth("completion_full_spec", False, spec=True)
    await cmpl_full("completion_full", count=1)
    prompts_truth("completion_full", False, count=1)
    await cmpl_stream("completion_stream_usage", req(stream=True, include_usage=True))
    prompts_truth("completion_stream_usage", True)
    await cmpl_stream("completion_stream_usage_1_prompt", req(stream=True, include_usage=True), count=1)
    prompts_truth("completion_stream_usage_1_prompt", True, count=1)
    await cmpl_stream("completion_stream_no_usage", req(stream=True))
    prompts_truth("completion_stream_no_usage", True)
    await cmpl_stream("completion_stream_spec", req(stream=True), spec=True)
    prompts_truth("completion_stream_spec", True, spec=True)

    def merged_final():
        # n=2, and vLLM hands over both choices' last tokens in one
        # RequestOutput (its collector merges what a slow client has not
        # taken): both finish reasons arrive before either chunk is built.
        outs = engine("cmpl-m", 8, 0, [stats(50.0, 50.2), stats(50.0, 50.25)], 2, n=2)
        outs[-2].outputs = list(outs[-2].outputs) + list(outs[-1].outputs)
        return [(0, o) for o in outs[:-1]]

    out["completion_stream_n2_merged"] = await collect(
        await cmpl.create_completion(req(stream=True, n=2), agen(merged_final()), 1))
    truth("completion_stream_n2_merged", True, 8, 0, 4, [(50.0, 50.2, 2), (50.0, 50.25, 2)])
    out["_truth"] = [TRUTH]
    return out


def drive(site, per_request_metrics, dest):
    """Drive the vllm in site and write the JSON to the file dest."""
    load(site, per_request_metrics)
    out = asyncio.run(main())
    json.dump(out, dest, indent=1, sort_keys=False)
    dest.write("\n")
    dest.flush()


def batch(jobs):
    """Run each job [site, per_request_metrics, out_path] in a child forked
    from this process, which has imported what the trees share (pydantic
    and the standard library) but no vllm, so every tree is imported in a
    fresh child as in a process of its own. As many children run at once as
    there are CPUs. Returns the number of jobs that failed; a child's
    traceback goes to stderr."""
    try:
        importlib.import_module("pydantic")  # what every fixture's protocol imports
    except ImportError:
        pass
    running, failed = {}, 0
    pending = list(jobs)
    while pending or running:
        while pending and len(running) < (os.cpu_count() or 1):
            site, per_request, path = pending.pop(0)
            pid = os.fork()
            if pid == 0:
                code = 1
                try:
                    with open(path, "w") as f:
                        drive(site, per_request, f)
                    code = 0
                except BaseException:  # noqa: BLE001 - reported, the child ends
                    sys.stderr.write("drive_serving.py %s%s:\n%s" % (site, " --per-request-metrics" if per_request else "", traceback.format_exc()))
                finally:
                    sys.stderr.flush()
                    os._exit(code)
            running[pid] = site
        pid, status = os.wait()
        if running.pop(pid, None) is not None and status != 0:
            failed += 1
    return failed


if __name__ == "__main__":
    if sys.argv[1:2] == ["--batch"]:
        sys.exit(1 if batch(json.load(sys.stdin)) else 0)
    drive(sys.argv[1], sys.argv[2:] == ["--per-request-metrics"], sys.stdout)
