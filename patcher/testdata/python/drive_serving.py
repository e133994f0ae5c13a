"""Drive the serving generators of a vLLM fixture tree with fake engine output.

    python3 drive_serving.py SITE_DIR

imports vllm from SITE_DIR (a fixture tree, patched or not), runs a fixed set
of requests through OpenAIServingChat and OpenAIServingCompletion with fake
RequestOutputs whose RequestStateStats carry chosen timestamps, and prints
one JSON object: scenario name -> list of response bodies (a full response
is one body; a stream is the JSON of each data: line). The Go test compares
a patched tree's output with the unpatched one and checks the timings.
"""

import asyncio
import json
import sys
from types import SimpleNamespace

sys.path.insert(0, sys.argv[1])

from vllm.entrypoints.openai.chat_completion.serving import OpenAIServingChat  # noqa: E402
from vllm.entrypoints.openai.completion.serving import OpenAIServingCompletion  # noqa: E402


def stats(scheduled, first):
    return SimpleNamespace(scheduled_ts=scheduled, first_token_ts=first, last_token_ts=first)


def engine(request_id, prompt_len, cached, metrics, tokens, n=1, final_only=False):
    """Yield RequestOutputs one token at a time for n choices, as the engine
    does in streaming (DELTA) mode; the stats object is updated in place.
    metrics may be None (stats logging off)."""
    outs = []
    for step in range(tokens):
        for idx in range(n):
            m = metrics[idx] if metrics else None
            if m is not None:
                m.last_token_ts = m.first_token_ts + 0.05 * step
            finish = "stop" if step == tokens - 1 else None
            outs.append(
                SimpleNamespace(
                    request_id=request_id,
                    prompt_token_ids=list(range(prompt_len)),
                    num_cached_tokens=cached,
                    metrics=m,
                    outputs=[
                        SimpleNamespace(index=idx, text=f"t{step}", token_ids=[step], finish_reason=finish)
                    ],
                )
            )
    if final_only:
        # The full generator keeps only the last output; give it all tokens.
        last = outs[-1]
        last.outputs = [
            SimpleNamespace(index=i, text="x" * tokens, token_ids=list(range(tokens)), finish_reason="stop")
            for i in range(n)
        ]
        outs = [last]
    return outs


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


async def main():
    chat = OpenAIServingChat(system_fingerprint="fp_fixture")
    cmpl = OpenAIServingCompletion()
    out = {}

    def one(n=1, with_stats=True, cached=4, tokens=3, final_only=False):
        metrics = [stats(100.0 + i * 0.01, 100.25 + i * 0.01) for i in range(n)] if with_stats else None
        return engine("chat-1", 10, cached, metrics, tokens, n=n, final_only=final_only)

    full = await chat.chat_completion_full_generator(req(), agen(one(final_only=True)), "chat-1", "m")
    out["chat_full"] = [json.loads(full.model_dump_json())]
    full = await chat.chat_completion_full_generator(req(), agen(one(with_stats=False, final_only=True)), "chat-1", "m")
    out["chat_full_no_stats"] = [json.loads(full.model_dump_json())]
    out["chat_stream_usage"] = await collect(
        chat.chat_completion_stream_generator(req(include_usage=True), agen(one()), "chat-1", "m"))
    out["chat_stream_no_usage"] = await collect(
        chat.chat_completion_stream_generator(req(), agen(one()), "chat-1", "m"))
    out["chat_stream_n2"] = await collect(
        chat.chat_completion_stream_generator(req(n=2), agen(one(n=2)), "chat-1", "m"))
    out["chat_stream_no_stats"] = await collect(
        chat.chat_completion_stream_generator(req(include_usage=True), agen(one(with_stats=False)), "chat-1", "m"))
    out["chat_stream_one_token"] = await collect(
        chat.chat_completion_stream_generator(req(), agen(one(tokens=1)), "chat-1", "m"))

    def prompts(with_stats=True, final_only=False):
        items = []
        a = engine("cmpl-0", 8, 2, [stats(50.0, 50.2)] if with_stats else None, 2, final_only=final_only)
        b = engine("cmpl-1", 6, 0, [stats(50.0, 50.3)] if with_stats else None, 4, final_only=final_only)
        # interleave the two prompts as merge_async_iterators would
        for k in range(max(len(a), len(b))):
            if k < len(a):
                items.append((0, a[k]))
            if k < len(b):
                items.append((1, b[k]))
        return items

    full = await cmpl.create_completion(req(), agen(prompts(final_only=True)), 2)
    out["completion_full_2_prompts"] = [json.loads(full.model_dump_json())]
    full = await cmpl.create_completion(req(), agen(prompts(with_stats=False, final_only=True)), 2)
    out["completion_full_no_stats"] = [json.loads(full.model_dump_json())]
    out["completion_stream_usage"] = await collect(
        await cmpl.create_completion(req(stream=True, include_usage=True), agen(prompts()), 2))
    out["completion_stream_no_usage"] = await collect(
        await cmpl.create_completion(req(stream=True), agen(prompts()), 2))
    json.dump(out, sys.stdout, indent=1, sort_keys=False)
    sys.stdout.write("\n")


asyncio.run(main())
