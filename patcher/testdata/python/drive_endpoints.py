"""Drive the Responses and Messages serving code of a vLLM fixture tree.

    python3 drive_endpoints.py SITE_DIR

imports vllm from SITE_DIR (an endpoints-* fixture tree, patched or not),
runs fixed requests through its OpenAIServingResponses and
AnthropicServingMessages with fake engine output, and prints one JSON object:
scenario name -> list of bodies, serialized as vLLM's API routers do (a full
response is one body; a stream is the JSON of each data: line). The Go test
(TestEndpointServing) compares a patched tree's output with the unpatched
one and checks the timings.

Engine outputs carry RequestStateStats-like stats with chosen timestamps:
scheduled at 100.0, first token at 100.25, one token every 50 ms; 10 prompt
tokens of which 4 are cached, 3 generated. Where the fixture has a v1 output
processor (the modules fixtures), the outputs come from it, so on v0.10's
shape they carry stats only once the chat part's output-processor edit is
applied. A tool-loop scenario runs two engine requests for one response.
Messages are served the way vLLM serves them: the fixture's chat code runs
the request (full, or streamed with include_usage) and the Messages
converter turns its output into the message or the event stream.
The "_driver" entry says what the fixture serves.
"""

import asyncio
import importlib
import json
import os
import sys
from types import SimpleNamespace

sys.path.insert(0, sys.argv[1])
# FakeMonotonic: scripts/real-vllm.d/testkit.py, shared with level 2 of scripts/real-vllm.
sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "scripts", "real-vllm.d"))
from testkit import FakeMonotonic  # noqa: E402


def first_module(*names):
    for name in names:
        try:
            return importlib.import_module(name)
        except ModuleNotFoundError as e:
            if not name.startswith(e.name or "?"):
                raise
    return None


responses_mod = first_module("vllm.entrypoints.openai.responses.serving", "vllm.entrypoints.openai.serving_responses")
if responses_mod is not None and not hasattr(responses_mod, "OpenAIServingResponses"):
    responses_mod = None  # a responses/ package without serving code (the modules fixtures)
messages_mod = first_module("vllm.entrypoints.anthropic.serving", "vllm.entrypoints.anthropic.serving_messages")
if messages_mod is not None and not hasattr(messages_mod, "AnthropicServingMessages"):
    messages_mod = None
protocol = importlib.import_module("vllm.entrypoints.openai.responses.protocol")

try:
    from vllm.v1.engine import EngineCoreOutput
    from vllm.v1.engine.output_processor import OutputProcessor
except ImportError:
    OutputProcessor = None

STEP = 0.05


# The patched module's time.monotonic, set by turn() to the engine's times:
# a request without stats gets a RequestClock from the patched output
# processor, and it reads exactly what the stats would have.
CLOCK = FakeMonotonic()
try:
    from vllm import _llamacpp_timings

    _llamacpp_timings.time = CLOCK
except ImportError:
    pass  # not patched


def turn(request_id, with_stats, cached=4, prompt_len=10, tokens=3, final_only=False, finish="stop",
         scheduled=100.0, first=100.25):
    """The RequestOutputs of one engine request."""
    if OutputProcessor is not None:
        proc = OutputProcessor(log_stats=with_stats)
        CLOCK.now = scheduled
        proc.add_request(f"0_{request_id}", request_id, 0, list(range(prompt_len)), cached, final_only)
        outs = []
        for step in range(tokens):
            CLOCK.now = first + STEP * step
            eco = EngineCoreOutput(
                request_id=f"0_{request_id}",
                new_token_ids=[step],
                finish_reason=finish if step == tokens - 1 else None,
                scheduled_ts=scheduled if step == 0 else None,
            )
            outs += proc.process_outputs([eco], first + STEP * step)
        return outs
    stats = SimpleNamespace(scheduled_ts=scheduled, first_token_ts=first, last_token_ts=first) if with_stats else None
    outs = []
    for step in range(tokens):
        if stats is not None:
            stats.last_token_ts = first + STEP * step
        last = step == tokens - 1
        choice = SimpleNamespace(index=0, text=f"t{step}", token_ids=[step], finish_reason=finish if last else None)
        outs.append(SimpleNamespace(request_id=request_id, prompt_token_ids=list(range(prompt_len)),
                                    num_cached_tokens=cached, metrics=stats, outputs=[choice], finished=last))
    if final_only:
        last = outs[-1]
        last.outputs = [SimpleNamespace(index=0, text="".join(f"t{s}" for s in range(tokens)),
                                        token_ids=list(range(tokens)), finish_reason=finish)]
        outs = [last]
    return outs


class FakeEngine:
    """Hands out one engine request's outputs per generate() call."""

    def __init__(self, turns):
        self.turns = list(turns)
        self.calls = 0

    def generate(self, prompt, request_id, *args, **kwargs):
        outs = self.turns.pop(0)(request_id)
        self.calls += 1

        async def gen():
            for o in outs:
                yield o
                await asyncio.sleep(0)

        return gen()


def dump_event(event):
    """A Responses event as the router (or, before v0.11, the serving code) sends it."""
    if isinstance(event, str):
        return event
    return f"event: {event.type}\ndata: {event.model_dump_json(indent=None)}\n\n"


async def collect(gen):
    bodies = []
    async for item in gen:
        if not isinstance(item, str):
            item = dump_event(item)
        for line in item.split("\n"):
            if line.startswith("data: ") and line != "data: [DONE]":
                bodies.append(json.loads(line[len("data: "):]))
    return bodies


async def responses(name, stream, with_stats=True, tool_calls=0, finish="stop"):
    turns = [lambda rid: turn(rid, with_stats, final_only=not stream, finish=finish)]
    for k in range(tool_calls):
        # The next turn: the first prompt, the tool call and its output, all cached but the last 6.
        turns.append(lambda rid, k=k: turn(rid, with_stats, cached=16, prompt_len=22, tokens=2,
                                           final_only=not stream, scheduled=101.0 + k, first=101.125 + k))
    engine = FakeEngine(turns)
    serving = responses_mod.OpenAIServingResponses(engine)
    req = protocol.ResponsesRequest(stream=stream, builtin_tool_calls=tool_calls)
    res = await serving.create_responses(req)
    if stream:
        bodies = await collect(res)
    else:
        bodies = [json.loads(json.dumps(res.model_dump(mode="json", by_alias=True)))]
    if engine.calls != 1 + tool_calls:
        raise AssertionError(f"{name}: {engine.calls} engine requests, want {1 + tool_calls}")
    return bodies


def chat_request(stream):
    return SimpleNamespace(n=1, include_usage=stream, stream=stream)


async def messages(stream, with_stats=True):
    serving = messages_mod.AnthropicServingMessages(system_fingerprint="fp_fixture")
    outs = turn("chatcmpl-m", with_stats, final_only=not stream)

    async def agen():
        for o in outs:
            yield o

    if not stream:
        chat = await serving.chat_completion_full_generator(chat_request(False), agen(), "chatcmpl-m", "m")
        return [serving.messages_full_converter(chat).model_dump(exclude_none=True)]
    raw = getattr(serving, "chat_completion_stream_generator_raw", None)
    if raw is not None:  # 0.33 on: the converter takes the chat stream's objects
        chat = raw(chat_request(True), agen(), "chatcmpl-m", "m")
    else:
        chat = serving.chat_completion_stream_generator(chat_request(True), agen(), "chatcmpl-m", "m")
    return await collect(serving.message_stream_converter(chat))


async def main():
    out = {"_driver": [{"responses": responses_mod is not None, "messages": messages_mod is not None,
                        "responses_stream": responses_mod is not None
                        and hasattr(responses_mod.OpenAIServingResponses, "responses_stream_generator"),
                        "processor": OutputProcessor is not None}]}
    if out["_driver"][0]["responses"]:
        out["responses_full"] = await responses("responses_full", False)
        out["responses_full_no_stats"] = await responses("responses_full_no_stats", False, with_stats=False)
        out["responses_full_incomplete"] = await responses("responses_full_incomplete", False, finish="length")
        if hasattr(responses_mod.OpenAIServingResponses, "_generate_with_builtin_tools"):
            # A conversation context and a tool loop (all but v0.10.0).
            out["responses_full_tool_loop"] = await responses("responses_full_tool_loop", False, tool_calls=1)
        if out["_driver"][0]["responses_stream"]:
            out["responses_stream"] = await responses("responses_stream", True)
            out["responses_stream_no_stats"] = await responses("responses_stream_no_stats", True, with_stats=False)
            out["responses_stream_incomplete"] = await responses("responses_stream_incomplete", True, finish="length")
            out["responses_stream_tool_loop"] = await responses("responses_stream_tool_loop", True, tool_calls=1)
    if out["_driver"][0]["messages"]:
        out["messages_full"] = await messages(False)
        out["messages_full_no_stats"] = await messages(False, with_stats=False)
        out["messages_stream"] = await messages(True)
        out["messages_stream_no_stats"] = await messages(True, with_stats=False)
    json.dump(out, sys.stdout, indent=1)
    sys.stdout.write("\n")


asyncio.run(main())
