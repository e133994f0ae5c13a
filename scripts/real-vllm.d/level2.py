"""Level 2: vLLM's own serving classes, patched, with a fake engine client.

    python level2.py run OUT.json [SITE_DIR] [--per-request-metrics]
    python level2.py check PATCHED.json UNPATCHED.json

SITE_DIR, if given, is put first on sys.path: a directory holding a vllm/
(a wheel's Python files), run with the dependencies of the interpreter's
environment; without it the installed vllm is used. --per-request-metrics
builds the serving classes with enable_per_request_metrics=True, as `vllm
serve --enable-per-request-metrics` does (vLLM 0.25 on).

"run" builds the real OpenAIServingChat and OpenAIServingCompletion of the
installed vLLM (their own __init__, with a fake engine client, model config
and model registry), replaces only the prompt rendering (the online renderer, which needs a
tokenizer and chat template) by a stub returning token-id prompts, and calls the public create_chat_completion / create_completion
with real ChatCompletionRequest / CompletionRequest objects. The fake
engine client's generate() yields real vllm.outputs.RequestOutput objects
carrying real RequestStateStats with chosen timestamps, one step at a time
(stats updated in place, as the engine does), or only the final output for
a non-streaming request. Every scenario's response is written to OUT.json:
a full response as model_dump() (what the server returns), a stream as the
list of its data: events; and under "truth", each scenario's endpoint,
whether it streams, and the timings it must get (null: none), which
patcher's TestLlamaSwapLevel2 uses to check what llama-swap records.

"check" compares the two runs (the same vLLM, patched and then reverted):
  * each patched response carries exactly the expected timings dict, where
    llama-swap reads it (full body; final usage chunk with include_usage;
    else the chunk with the last finish_reason) and nowhere else;
  * it agrees with the response's own usage: prompt_n + cache_n ==
    usage.prompt_tokens, predicted_n == usage.completion_tokens;
  * without stats (--disable-log-stats), there are no timings;
  * where a response carries vLLM's own metrics as well, the patch has
    cleared their time_to_first_token_ms and mean_itl_ms, whose unpatched
    values are prompt_ms and generation_time_ms / (tokens - 1);
  * with the timings removed (and those two fields as vLLM sent them),
    every patched response equals the unpatched one (a stream's events as
    a multiset: how two prompts' events interleave is up to vLLM's merge of
    the engine streams): the patch changes nothing else.
The same run also drives vLLM's OpenAIServingResponses and
AnthropicServingMessages (ENDPOINT_SCENARIOS, under "endpoints" and
"endpoint_truth"; a vLLM without one of them skips its scenarios), with the
renderer stub answering what they ask, and "check" asks of them:
  * Responses: timings on the non-streamed response, and in a stream only
    on the terminal event (response.completed, or from 0.33
    response.incomplete when cut short): at its top level (llama-swap) and
    the same inside its response (the openai SDK's stream helper);
    prompt_n + cache_n == usage.input_tokens, cache_n ==
    input_tokens_details.cached_tokens, predicted_n == output_tokens;
  * Messages: timings on the message, and in a stream only on the
    message_delta event; prompt_n + cache_n == input_tokens +
    cache_read_input_tokens + cache_creation_input_tokens (absent: 0),
    cache_n == cache_read_input_tokens where present, predicted_n ==
    output_tokens;
  * the exact timings, none without stats, and every body otherwise
    unchanged (events in order).
Exit status 0 when everything passes.
"""

import asyncio
import inspect
import json
import os
import sys
from types import SimpleNamespace

from testkit import FakeMonotonic

# Engine clock (monotonic seconds). Multiples of 1/16 s, so every duration
# below is exact in binary floating point and the expected dicts are exact.
STEP = 0.0625


def expected(prompt, cached, generated, prompt_ms, predicted_ms):
    """The timings dict llama-server would send for these numbers."""
    prompt_n = prompt - cached

    def rates(n, ms):
        return (ms / n, n * 1000.0 / ms) if n > 0 and ms > 0 else (0.0, 0.0)

    ppt, pps = rates(prompt_n, prompt_ms)
    gpt, gps = rates(generated, predicted_ms)
    return {
        "prompt_n": prompt_n,
        "prompt_ms": prompt_ms,
        "prompt_per_token_ms": ppt,
        "prompt_per_second": pps,
        "predicted_n": generated,
        "predicted_ms": predicted_ms,
        "predicted_per_token_ms": gpt,
        "predicted_per_second": gps,
        "cache_n": cached,
    }


# Each scenario: endpoint, request fields, and the engine requests behind it
# (one per prompt): prompt length, cached tokens, tokens per choice, and per
# choice (scheduled_ts, first_token_ts); the i-th token of a choice comes at
# first_token_ts + i*STEP. "stats": False is a server run with
# --disable-log-stats: the patched vLLM's output processor then gives each
# request a RequestClock on the API server's clock, which the fake engine
# plays here with the same times, so the timings are those of the stats
# (unpatched: none). "merge_final": the choices' last tokens come in one
# RequestOutput (vLLM's output collector merges outputs a slow consumer has
# not taken yet), otherwise each choice's output comes in its own.
# "expect" is the timings dict, None for no timings.
SCENARIOS = {
    "chat full": dict(
        chat=True, req={}, prompts=[dict(len=10, cached=4, tokens=3, sched=[(100.0, 100.25)])],
        expect=expected(10, 4, 3, 250.0, 2 * STEP * 1000)),
    "chat full no stats": dict(
        chat=True, req={}, stats=False, prompts=[dict(len=10, cached=4, tokens=3, sched=[(100.0, 100.25)])],
        expect=expected(10, 4, 3, 250.0, 2 * STEP * 1000)),
    "chat full one token": dict(
        chat=True, req={}, prompts=[dict(len=10, cached=0, tokens=1, sched=[(100.0, 100.5)])],
        expect=expected(10, 0, 1, 500.0, 0.0)),
    "chat full all cached": dict(
        chat=True, req={}, prompts=[dict(len=32, cached=32, tokens=4, sched=[(100.0, 100.125)])],
        expect=expected(32, 32, 4, 125.0, 3 * STEP * 1000)),
    "chat stream+usage": dict(
        chat=True, req={"stream": True, "stream_options": {"include_usage": True}},
        prompts=[dict(len=10, cached=4, tokens=3, sched=[(100.0, 100.25)])],
        expect=expected(10, 4, 3, 250.0, 2 * STEP * 1000)),
    "chat stream": dict(
        chat=True, req={"stream": True}, prompts=[dict(len=10, cached=4, tokens=3, sched=[(100.0, 100.25)])],
        expect=expected(10, 4, 3, 250.0, 2 * STEP * 1000)),
    "chat stream+usage no stats": dict(
        chat=True, req={"stream": True, "stream_options": {"include_usage": True}}, stats=False,
        prompts=[dict(len=10, cached=4, tokens=3, sched=[(100.0, 100.25)])], expect=expected(10, 4, 3, 250.0, 2 * STEP * 1000)),
    "chat stream no stats": dict(
        chat=True, req={"stream": True}, stats=False,
        prompts=[dict(len=10, cached=4, tokens=3, sched=[(100.0, 100.25)])], expect=expected(10, 4, 3, 250.0, 2 * STEP * 1000)),
    # n=2: two children, the second scheduled with the first but its first
    # token one step later; 4 tokens each. The span, 100.0 to the last token
    # at 100.5, splits into prompt time (the union of the two [scheduled,
    # first token] intervals: 312.5 ms) and the rest; counts are both choices'.
    "chat stream+usage n=2": dict(
        chat=True, req={"n": 2, "stream": True, "stream_options": {"include_usage": True}},
        prompts=[dict(len=16, cached=0, tokens=4, sched=[(100.0, 100.25), (100.0, 100.3125)])],
        expect=expected(16, 0, 8, 312.5, 500.0 - 312.5)),
    "chat stream n=2": dict(
        chat=True, req={"n": 2, "stream": True},
        prompts=[dict(len=16, cached=0, tokens=4, sched=[(100.0, 100.25), (100.0, 100.3125)])],
        expect=expected(16, 0, 8, 312.5, 500.0 - 312.5)),
    "chat stream n=2 merged final": dict(
        chat=True, req={"n": 2, "stream": True}, merge_final=True,
        prompts=[dict(len=16, cached=0, tokens=4, sched=[(100.0, 100.25), (100.0, 100.3125)])],
        expect=expected(16, 0, 8, 312.5, 500.0 - 312.5)),
    # A full n=2 response gets one RequestOutput, with one stats object (the
    # first child's, as RequestOutput.add keeps it).
    "chat full n=2": dict(
        chat=True, req={"n": 2},
        prompts=[dict(len=16, cached=0, tokens=4, sched=[(100.0, 100.25), (100.0, 100.3125)])],
        expect=expected(16, 0, 8, 250.0, 3 * STEP * 1000)),
    "completion full": dict(
        chat=False, req={}, prompts=[dict(len=12, cached=8, tokens=5, sched=[(50.0, 50.125)])],
        expect=expected(12, 8, 5, 125.0, 4 * STEP * 1000)),
    "completion full no stats": dict(
        chat=False, req={}, stats=False, prompts=[dict(len=12, cached=8, tokens=5, sched=[(50.0, 50.125)])],
        expect=expected(12, 8, 5, 125.0, 4 * STEP * 1000)),
    "completion stream+usage": dict(
        chat=False, req={"stream": True, "stream_options": {"include_usage": True}},
        prompts=[dict(len=12, cached=8, tokens=5, sched=[(50.0, 50.125)])],
        expect=expected(12, 8, 5, 125.0, 4 * STEP * 1000)),
    "completion stream": dict(
        chat=False, req={"stream": True}, prompts=[dict(len=12, cached=8, tokens=5, sched=[(50.0, 50.125)])],
        expect=expected(12, 8, 5, 125.0, 4 * STEP * 1000)),
    "completion stream no stats": dict(
        chat=False, req={"stream": True, "stream_options": {"include_usage": True}}, stats=False,
        prompts=[dict(len=12, cached=8, tokens=5, sched=[(50.0, 50.125)])], expect=expected(12, 8, 5, 125.0, 4 * STEP * 1000)),
    # Two prompts: 8 (2 cached) and 6 (none) tokens; 2 and 4 generated. Both
    # scheduled at 50.0; prompt time is the union of [50.0, 50.1875] and
    # [50.0, 50.3125], generation the rest of the span to 50.5.
    "completion full 2 prompts": dict(
        chat=False, req={}, prompts=[
            dict(len=8, cached=2, tokens=2, sched=[(50.0, 50.1875)]),
            dict(len=6, cached=0, tokens=4, sched=[(50.0, 50.3125)])],
        expect=expected(14, 2, 6, 312.5, (50.3125 + 3 * STEP - 50.0) * 1000 - 312.5)),
    "completion stream+usage 2 prompts": dict(
        chat=False, req={"stream": True, "stream_options": {"include_usage": True}}, prompts=[
            dict(len=8, cached=2, tokens=2, sched=[(50.0, 50.1875)]),
            dict(len=6, cached=0, tokens=4, sched=[(50.0, 50.3125)])],
        expect=expected(14, 2, 6, 312.5, (50.3125 + 3 * STEP - 50.0) * 1000 - 312.5)),
    "completion stream 2 prompts": dict(
        chat=False, req={"stream": True}, prompts=[
            dict(len=8, cached=2, tokens=2, sched=[(50.0, 50.1875)]),
            dict(len=6, cached=0, tokens=4, sched=[(50.0, 50.3125)])],
        expect=expected(14, 2, 6, 312.5, (50.3125 + 3 * STEP - 50.0) * 1000 - 312.5)),
    "completion stream n=2": dict(
        chat=False, req={"n": 2, "stream": True},
        prompts=[dict(len=16, cached=0, tokens=4, sched=[(100.0, 100.25), (100.0, 100.3125)])],
        expect=expected(16, 0, 8, 312.5, 500.0 - 312.5)),
    "completion stream n=2 merged final": dict(
        chat=False, req={"n": 2, "stream": True}, merge_final=True,
        prompts=[dict(len=16, cached=0, tokens=4, sched=[(100.0, 100.25), (100.0, 100.3125)])],
        expect=expected(16, 0, 8, 312.5, 500.0 - 312.5)),
}

# /v1/responses and /v1/messages (vLLM's OpenAIServingResponses and
# AnthropicServingMessages). "finish" is the engine's finish reason: "stop"
# unless said otherwise; with "length" a Responses stream ends with
# response.incomplete instead of response.completed (0.33 on). The Messages
# API runs vLLM's chat code with include_usage, so its timings are the chat
# ones. They are kept apart from SCENARIOS (their own "endpoints" and
# "endpoint_truth" in OUT.json), whose truth patcher's TestLlamaSwapLevel2
# reads for chat and completions.
ENDPOINT_SCENARIOS = {
    "responses full": dict(
        api="responses", req={}, prompts=[dict(len=10, cached=4, tokens=3, sched=[(100.0, 100.25)])],
        expect=expected(10, 4, 3, 250.0, 2 * STEP * 1000)),
    "responses full no stats": dict(
        api="responses", req={}, stats=False, prompts=[dict(len=10, cached=4, tokens=3, sched=[(100.0, 100.25)])],
        expect=expected(10, 4, 3, 250.0, 2 * STEP * 1000)),
    "responses full all cached": dict(
        api="responses", req={}, prompts=[dict(len=32, cached=32, tokens=4, sched=[(100.0, 100.125)])],
        expect=expected(32, 32, 4, 125.0, 3 * STEP * 1000)),
    "responses full incomplete": dict(
        api="responses", req={}, finish="length", prompts=[dict(len=10, cached=0, tokens=2, sched=[(100.0, 100.5)])],
        expect=expected(10, 0, 2, 500.0, STEP * 1000)),
    "responses stream": dict(
        api="responses", req={"stream": True}, prompts=[dict(len=10, cached=4, tokens=3, sched=[(100.0, 100.25)])],
        expect=expected(10, 4, 3, 250.0, 2 * STEP * 1000)),
    "responses stream one token": dict(
        api="responses", req={"stream": True}, prompts=[dict(len=10, cached=0, tokens=1, sched=[(100.0, 100.5)])],
        expect=expected(10, 0, 1, 500.0, 0.0)),
    "responses stream incomplete": dict(
        api="responses", req={"stream": True}, finish="length",
        prompts=[dict(len=12, cached=8, tokens=5, sched=[(50.0, 50.125)])],
        expect=expected(12, 8, 5, 125.0, 4 * STEP * 1000)),
    "responses stream no stats": dict(
        api="responses", req={"stream": True}, stats=False,
        prompts=[dict(len=10, cached=4, tokens=3, sched=[(100.0, 100.25)])], expect=expected(10, 4, 3, 250.0, 2 * STEP * 1000)),
    "messages full": dict(
        api="messages", req={}, prompts=[dict(len=10, cached=4, tokens=3, sched=[(100.0, 100.25)])],
        expect=expected(10, 4, 3, 250.0, 2 * STEP * 1000)),
    "messages full no cache": dict(
        api="messages", req={}, prompts=[dict(len=10, cached=0, tokens=3, sched=[(100.0, 100.25)])],
        expect=expected(10, 0, 3, 250.0, 2 * STEP * 1000)),
    "messages full no stats": dict(
        api="messages", req={}, stats=False, prompts=[dict(len=10, cached=4, tokens=3, sched=[(100.0, 100.25)])],
        expect=expected(10, 4, 3, 250.0, 2 * STEP * 1000)),
    "messages stream": dict(
        api="messages", req={"stream": True}, prompts=[dict(len=12, cached=8, tokens=5, sched=[(50.0, 50.125)])],
        expect=expected(12, 8, 5, 125.0, 4 * STEP * 1000)),
    "messages stream one token": dict(
        api="messages", req={"stream": True}, prompts=[dict(len=10, cached=0, tokens=1, sched=[(100.0, 100.5)])],
        expect=expected(10, 0, 1, 500.0, 0.0)),
    "messages stream no stats": dict(
        api="messages", req={"stream": True}, stats=False,
        prompts=[dict(len=12, cached=8, tokens=5, sched=[(50.0, 50.125)])], expect=expected(12, 8, 5, 125.0, 4 * STEP * 1000)),
}


# ---------------------------------------------------------------- the fake engine

def _engine_types():
    """vLLM's CompletionOutput, RequestOutput and RequestStateStats (imported
    when first asked for: "check" runs without vLLM)."""
    from vllm.outputs import CompletionOutput, RequestOutput
    from vllm.v1.metrics.stats import RequestStateStats

    return CompletionOutput, RequestOutput, RequestStateStats


def timings_module():
    """The patched vLLM's vllm._llamacpp_timings, or None (unpatched)."""
    try:
        from vllm import _llamacpp_timings
    except ImportError:
        return None
    return _llamacpp_timings if hasattr(_llamacpp_timings, "start_clock") else None


def engine_clocks(p, n):
    """What the patched output processor does without stats, for each of the
    n children of engine request p: a RequestClock started when the request
    is handed over (scheduled_ts here) and told of each output with tokens,
    on a clock that reads the engine's times. [] when unpatched."""
    lt = timings_module()
    if lt is None:
        return []
    clock = lt.time = FakeMonotonic()
    clocks = []
    for sched, first in p["sched"][:n]:
        clock.now = sched
        c = lt.start_clock(None)
        for t in range(p["tokens"]):
            clock.now = first + t * STEP
            c.tokens([t])
        clocks.append(c)
    return clocks


class EngineRequest:
    """One engine request of a scenario (prompt p, its first n choices):
    the prompt's token ids, a RequestStateStats per choice with p's
    (scheduled_ts, first_token_ts), and, when the server keeps no stats,
    the RequestClock the patched output processor gives each choice."""

    def __init__(self, rid, p, with_stats, n):
        _, _, RequestStateStats = _engine_types()
        self.rid, self.p, self.with_stats = rid, p, with_stats
        self.ids = list(range(1, p["len"] + 1))
        self.stats = []
        for sched, first in p["sched"][:n]:
            s = RequestStateStats(scheduled_ts=sched, queued_ts=sched, arrival_time=1.8e9)
            s.first_token_ts = first
            self.stats.append(s)
        self.clocks = [] if with_stats else engine_clocks(p, n)

    def output(self, outs, finished, metrics):
        """A RequestOutput of these completion outputs; metrics is the
        choice's stats (None on the wire without stats, where the patched
        output processor links the choice's clock instead)."""
        _, RequestOutput, _ = _engine_types()
        r = RequestOutput(
            request_id=self.rid, prompt=None, prompt_token_ids=self.ids, prompt_logprobs=None,
            outputs=outs, finished=finished, metrics=metrics if self.with_stats else None,
            num_cached_tokens=self.p["cached"],
        )
        if self.clocks:  # the patched output processor links the child's clock
            timings_module().link_clock(r, self.clocks[next(i for i, s in enumerate(self.stats) if s is metrics)])
        return r


def completion_output(idx, toks, finish):
    """Choice idx's CompletionOutput of tokens toks (text "t0t1...")."""
    CompletionOutput, _, _ = _engine_types()
    return CompletionOutput(
        index=idx, text="".join(f"t{t}" for t in toks), token_ids=list(toks),
        cumulative_logprob=None, logprobs=None, finish_reason=finish,
    )


def outputs_for(rid, p, stream, with_stats, n, merge_final, finish="length"):
    """The RequestOutputs one engine request yields."""
    req = EngineRequest(rid, p, with_stats, n)
    if not stream:
        return final_only_outputs(req, n, finish)
    return delta_outputs(req, n, merge_final, finish)


def final_only_outputs(req, n, finish):
    """FINAL_ONLY: one output with everything; the engine has set the last
    token time by then."""
    p = req.p
    for s, (_, first) in zip(req.stats, p["sched"][:n]):
        s.last_token_ts = first + (p["tokens"] - 1) * STEP
    outs = [completion_output(i, range(p["tokens"]), finish) for i in range(n)]
    return [req.output(outs, True, req.stats[0])]


def delta_outputs(req, n, merge_final, finish):
    """DELTA: token by token; choice i's token t at first_i + t*STEP, in
    time order. Stats change in place, as the engine updates them."""
    p = req.p
    events = sorted(
        (first + t * STEP, i, t) for i, (_, first) in enumerate(p["sched"][:n]) for t in range(p["tokens"])
    )
    res = []
    for ts, i, t in events:
        last = t == p["tokens"] - 1
        req.stats[i].last_token_ts = ts
        res.append((i, last, req.output([completion_output(i, [t], finish if last else None)], False, req.stats[i])))
    if merge_final and n > 1:
        # The final outputs of all choices, merged into the first of them.
        finals = [r for _, last, r in res if last]
        for r in finals[1:]:
            finals[0].add(r, aggregate=False)
        res = [x for x in res if not x[1]] + [(0, True, finals[0])]
    out = [r for _, _, r in res]
    out[-1].finished = True
    return out


class FakeEngine:
    """Just enough of vLLM's EngineClient for the serving classes. script
    (set before each request) says what its next generate() yields: the
    scenario's prompts (one engine request each, taken in turn), whether
    the output streams, stats on or off, the choices n, merge_final and
    the finish reason."""

    errored = False
    dead_error = RuntimeError("dead")
    is_running = True
    vllm_config = None
    input_processor = None

    def __init__(self):
        self.model_config = SimpleNamespace(
            model="tiny", served_model_name="tiny", max_model_len=4096, hf_config=SimpleNamespace(model_type="llama"),
            hf_text_config=SimpleNamespace(model_type="llama"), generation_config="auto",
            override_generation_config={}, get_diff_sampling_param=lambda: {}, is_encoder_decoder=False,
            is_multimodal_model=False, skip_tokenizer_init=False, logits_processors=None,
            runner_type="generate", trust_remote_code=False, tokenizer="tiny", tokenizer_mode="auto",
            multimodal_config=None, allowed_local_media_path="", allowed_media_domains=None,
        )
        tokenizer = SimpleNamespace(decode=lambda ids, **k: "", eos_token_id=None)
        self.renderer = SimpleNamespace(tokenizer=tokenizer, model_config=self.model_config,
                                        get_tokenizer=lambda: tokenizer)
        self.script = None

    def check_admission(self, n=1):
        return None

    async def is_tracing_enabled(self):
        return False

    def generate(self, engine_input, sampling_params, request_id, **kwargs):
        stream_out = self.script["stream"]
        idx = self.script["next"]
        self.script["next"] += 1
        p = self.script["prompts"][idx]
        outs = outputs_for(request_id, p, stream_out, self.script["stats"], self.script["n"],
                           self.script["merge_final"], self.script.get("finish", "length"))
        return _yield_each(outs)


async def _yield_each(outs):
    """The engine's output stream: each output in turn, letting the serving
    code run between them."""
    for o in outs:
        yield o
        await asyncio.sleep(0)


def script_for(sc):
    """The FakeEngine's script for scenario sc."""
    return dict(prompts=sc["prompts"], stream=sc["req"].get("stream", False), next=0,
                stats=sc.get("stats", True), n=sc["req"].get("n", 1), merge_final=sc.get("merge_final", False),
                finish=sc.get("finish", "stop" if "api" in sc else "length"))


# ---------------------------------------------------------------- vLLM's serving classes on the fake engine

class FakeModels:
    """Stands for OpenAIServingModels where it cannot be built."""

    lora_requests = {}

    def model_name(self, lora_request=None):
        return "tiny"

    def is_base_model(self, name):
        return name == "tiny"


def build(cls, **want):
    """cls(...) through its own __init__, with the arguments it takes."""
    sig = inspect.signature(cls.__init__)
    args = {}
    for name, par in list(sig.parameters.items())[1:]:
        if name in want:
            args[name] = want[name]
        elif par.default is inspect.Parameter.empty and par.kind not in (par.VAR_POSITIONAL, par.VAR_KEYWORD):
            args[name] = None
    return cls(**args)


def serving_models(engine):
    """vLLM's OpenAIServingModels serving "tiny", or FakeModels."""
    try:
        from vllm.entrypoints.openai.models.serving import BaseModelPath, OpenAIServingModels

        return build(OpenAIServingModels, engine_client=engine,
                     base_model_paths=[BaseModelPath(name="tiny", model_path="tiny")])
    except Exception as e:  # noqa: BLE001
        print(f"level 2: using a stand-in for OpenAIServingModels ({type(e).__name__}: {e})")
        return FakeModels()


def _tokens_input():
    """This vLLM's tokens_input (older layouts: the dict it makes)."""
    try:
        from vllm.inputs.engine import tokens_input
    except ImportError:  # older layouts
        def tokens_input(ids):
            return {"type": "token", "prompt_token_ids": ids}
    return tokens_input


class FakeOnlineRenderer:
    """Stands for the renderer (tokenizer + chat template): token-id prompts,
    as long as the engine's script says."""

    reasoning_effort_map = {}

    # The Responses API (0.26 on) and the Messages API ask these too.
    chat_template = None
    trust_request_chat_template = False
    exclude_tools_when_tool_choice_none = False
    chat_template_content_format = "auto"
    default_chat_template_kwargs = None

    def __init__(self, engine):
        self._engine = engine
        self._tokens_input = _tokens_input()

    def _first_prompt(self):
        return self._tokens_input(list(range(1, self._engine.script["prompts"][0]["len"] + 1)))

    async def render_chat(self, request):
        return [{"role": "user", "content": "hi"}], [self._first_prompt()]

    async def render_completion(self, request):
        return [self._tokens_input(list(range(1, p["len"] + 1))) for p in self._engine.script["prompts"]]

    def validate_chat_template(self, **kwargs):
        return None

    async def render_responses(self, request, **kwargs):
        return SimpleNamespace(messages=[], engine_input=self._first_prompt())

    async def preprocess_chat(self, request, messages, **kwargs):
        # The Responses API before 0.33 renders through this.
        return messages, [self._first_prompt()]

    @property
    def renderer(self):
        return self._engine.renderer

    @property
    def model_config(self):
        return self._engine.model_config


def endpoint_servings(common):
    """vLLM's OpenAIServingResponses and AnthropicServingMessages, built like
    the chat class; a name maps to None where this vLLM lacks the module."""
    out = {}
    for api, names, cls_name in (
        ("responses", ("vllm.entrypoints.openai.responses.serving", "vllm.entrypoints.openai.serving_responses"),
         "OpenAIServingResponses"),
        ("messages", ("vllm.entrypoints.anthropic.serving", "vllm.entrypoints.anthropic.serving_messages"),
         "AnthropicServingMessages"),
    ):
        mod = None
        for name in names:
            try:
                mod = _import(name)
                break
            except ModuleNotFoundError as e:
                if not name.startswith(e.name or "?"):
                    raise
        if mod is None:
            out[api] = None
            continue
        kw = dict(common, chat_template=None, chat_template_content_format="auto")
        if api == "messages":
            kw["response_role"] = "assistant"
        out[api] = (mod, build(getattr(mod, cls_name), **kw))
    return out


class Harness:
    """vLLM's own OpenAIServingChat and OpenAIServingCompletion (of the
    given serving modules, by default the imported vLLM's), and its
    Responses and Messages classes where it has them, each built through
    its own __init__ on one FakeEngine. The benches set engine.script (or
    replace engine.generate) and call chat and cmpl themselves; one runs
    a scenario."""

    outputs_for = staticmethod(outputs_for)

    def __init__(self, chat_mod=None, cmpl_mod=None, per_request_metrics=False):
        os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")
        _engine_types()
        chat_mod = chat_mod or _import("vllm.entrypoints.openai.chat_completion.serving")
        cmpl_mod = cmpl_mod or _import("vllm.entrypoints.openai.completion.serving")
        from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest
        from vllm.entrypoints.openai.completion.protocol import CompletionRequest

        self.ChatCompletionRequest, self.CompletionRequest = ChatCompletionRequest, CompletionRequest
        self.engine = FakeEngine()
        common = dict(engine_client=self.engine, models=serving_models(self.engine), request_logger=None,
                      online_renderer=FakeOnlineRenderer(self.engine), enable_prompt_tokens_details=True,
                      enable_per_request_metrics=per_request_metrics)
        self.chat = build(chat_mod.OpenAIServingChat, response_role="assistant", chat_template=None,
                          chat_template_content_format="auto", **common)
        self.cmpl = build(cmpl_mod.OpenAIServingCompletion, **common)
        self.endpoints = endpoint_servings(common)

    async def one(self, name, sc):
        """Scenario sc's response, as OUT.json records it."""
        self.engine.script = script_for(sc)
        if "api" in sc:
            return await endpoint_request(self.endpoints, sc)
        return await self.chat_or_completion(sc)

    async def chat_or_completion(self, sc):
        """A chat or completion scenario's request, and its response: a
        full one as model_dump() and model_dump_json(), a stream as its
        data: events."""
        n = sc["req"].get("n", 1)
        fields = dict(model="tiny", max_tokens=64, temperature=0.0 if n == 1 else 1.0, **sc["req"])
        if sc["chat"]:
            req = self.ChatCompletionRequest(messages=[{"role": "user", "content": "hi"}], **fields)
            res = await self.chat.create_chat_completion(req, None)
        else:
            req = self.CompletionRequest(prompt="p" if len(sc["prompts"]) == 1 else ["p", "q"], **fields)
            res = await self.cmpl.create_completion(req, None)
        if hasattr(res, "model_dump") and not hasattr(res, "__aiter__"):
            kind = type(res).__name__
            return {"kind": kind, "body": json.loads(json.dumps(res.model_dump())),
                    "body_json": json.loads(res.model_dump_json())}
        events = []
        async for line in res:
            _data_events(line, events)
        return {"kind": "stream", "events": events}


def harness(chat_mod=None, cmpl_mod=None, per_request_metrics=False):
    """A Harness (the benches' entry point)."""
    return Harness(chat_mod, cmpl_mod, per_request_metrics)


def _data_events(text, events):
    """Append to events the JSON of each data: line of an SSE chunk, but
    data: [DONE]."""
    for part in text.split("\n"):
        part = part.strip()
        if part.startswith("data: ") and part != "data: [DONE]":
            events.append(json.loads(part[6:]))


async def endpoint_request(endpoints, sc):
    """One /v1/responses or /v1/messages request, serialized as vLLM's API
    router does: a full response as its JSON body, a stream as its data:
    events."""
    import importlib

    api, stream = sc["api"], sc["req"].get("stream", False)
    if endpoints.get(api) is None:
        return {"kind": "absent"}
    mod, serving = endpoints[api]
    if api == "responses":
        proto = importlib.import_module(mod.__name__.rsplit(".", 1)[0] + ".protocol") \
            if mod.__name__.endswith(".serving") else importlib.import_module("vllm.entrypoints.openai.protocol")
        req = proto.ResponsesRequest(model="tiny", input="hi", max_output_tokens=64, temperature=0.0, **sc["req"])
        res = await serving.create_responses(req, None)
        dump = lambda r: r.model_dump(mode="json", by_alias=True)  # noqa: E731
    else:
        proto = importlib.import_module("vllm.entrypoints.anthropic.protocol")
        req = proto.AnthropicMessagesRequest(model="tiny", max_tokens=64, temperature=0.0,
                                             messages=[{"role": "user", "content": "hi"}], **sc["req"])
        res = await serving.create_messages(req, None)
        dump = lambda r: r.model_dump(exclude_none=True)  # noqa: E731
    if not stream or not hasattr(res, "__aiter__"):
        if not hasattr(res, "model_dump"):
            return {"kind": "error", "body": repr(res)}
        return {"kind": type(res).__name__, "body": json.loads(json.dumps(dump(res))),
                "body_json": json.loads(res.model_dump_json())}
    events = []
    async for item in res:
        if not isinstance(item, str):  # Responses events: the router's SSE conversion
            item = f"data: {item.model_dump_json(indent=None, by_alias=True)}\n\n"
        _data_events(item, events)
    return {"kind": "stream", "events": events}


# ---------------------------------------------------------------- run

def run(out_path, per_request_metrics=False):
    """Drive every scenario through the imported vLLM; write OUT.json."""
    h = harness(per_request_metrics=per_request_metrics)
    patched = hasattr(_import("vllm.entrypoints.openai.chat_completion.serving"), "_llamacpp_timings")
    result = asyncio.run(drive(h, patched, per_request_metrics))
    import vllm

    result["vllm"] = vllm.__version__
    with open(out_path, "w") as f:
        json.dump(result, f, indent=1)
    print(f"level 2: drove {len(SCENARIOS) + len(ENDPOINT_SCENARIOS)} scenarios through vLLM {vllm.__version__} "
          f"({'patched' if patched else 'unpatched'}"
          f"{', per-request metrics on' if per_request_metrics else ''}) -> {out_path}")


async def drive(h, patched, per_request_metrics):
    """OUT.json's content but the vLLM version: every scenario's response
    and its truth."""
    # chat_module: where the serving code came from, the tree or an overlay's copy.
    out = {"patched": patched, "per_request_metrics": per_request_metrics,
           "chat_module": _import("vllm.entrypoints.openai.chat_completion.serving").__file__,
           "scenarios": {}, "truth": {}}
    for name, sc in SCENARIOS.items():
        out["scenarios"][name] = await h.one(name, sc)
        out["truth"][name] = {"chat": sc["chat"], "stream": sc["req"].get("stream", False), "timings": sc["expect"]}
    out["endpoints"], out["endpoint_truth"] = {}, {}
    for name, sc in ENDPOINT_SCENARIOS.items():
        out["endpoints"][name] = await h.one(name, sc)
        out["endpoint_truth"][name] = {"api": sc["api"], "path": "/v1/" + sc["api"],
                                       "stream": sc["req"].get("stream", False), "timings": sc["expect"]}
    return out


def _import(name):
    import importlib

    return importlib.import_module(name)


# ---------------------------------------------------------------- check

def _close(a, b):
    return abs(a - b) <= 1e-9 * max(1.0, abs(b))


def _same_timings(got, want):
    if not isinstance(got, dict) or set(got) != set(want):
        return False
    for k, v in want.items():
        g = got[k]
        if k.endswith("_n"):
            if not (isinstance(g, int) and g == v):
                return False
        elif not (isinstance(g, (int, float)) and _close(g, v)):
            return False
    return True


def _normalize(v):
    """Drop what differs between two runs by nature: creation time, ids."""
    if isinstance(v, dict):
        return {k: _normalize(x) for k, x in v.items() if k not in ("created", "created_at", "id", "item_id")}
    if isinstance(v, list):
        return [_normalize(x) for x in v]
    return v


def _strip_timings(v):
    if isinstance(v, dict):
        return {k: _strip_timings(x) for k, x in v.items() if k != "timings"}
    if isinstance(v, list):
        return [_strip_timings(x) for x in v]
    return v


def _racy_cached(event, racy):
    """The event without usage.prompt_tokens_details.cached_tokens when that
    count depends on the order vLLM merged several prompts' streams in."""
    details = (event.get("usage") or {}).get("prompt_tokens_details")
    if not racy or not isinstance(details, dict) or "cached_tokens" not in details:
        return event
    event = dict(event, usage=dict(event["usage"], prompt_tokens_details=dict(details)))
    del event["usage"]["prompt_tokens_details"]["cached_tokens"]
    return event


# vLLM's metrics fields the patch clears where it adds timings.
RATE_SOURCES = ("time_to_first_token_ms", "mean_itl_ms")


def _cleared_metrics(patched, unpatched, fails):
    """Check that the patched body with timings and metrics has the two
    rate sources cleared, and that their unpatched values are still in the
    response (prompt_ms, generation_time_ms / (tokens - 1)); then put them
    back into the patched body for the comparison of everything else."""
    m, orig, t = patched.get("metrics"), unpatched.get("metrics"), patched.get("timings")
    if not isinstance(m, dict) or not isinstance(t, dict):
        return
    if not isinstance(orig, dict):
        fails.append("metrics on the patched response only")
        return
    for k in RATE_SOURCES:
        if m.get(k) is not None:
            fails.append(f"metrics.{k} = {m[k]} kept beside timings: llama-swap would recompute speeds from it")
    ttft, itl, gen = orig.get("time_to_first_token_ms"), orig.get("mean_itl_ms"), orig.get("generation_time_ms")
    if ttft is not None and not _close(ttft, t["prompt_ms"]):
        fails.append(f"vLLM's time_to_first_token_ms {ttft} != prompt_ms {t['prompt_ms']}")
    if itl is not None and not _close(itl, gen / (t["predicted_n"] - 1)):
        fails.append(f"vLLM's mean_itl_ms {itl} != generation_time_ms / (predicted_n - 1)")
    for k in RATE_SOURCES:
        if k in orig:
            m[k] = orig[k]


def _full_body(p, u, fails, other):
    """A non-streamed scenario's checks: vLLM's rate fields cleared where
    timings is set, the two serializations agreeing on timings (body is
    OTHER's, body_json model_dump_json's), and nothing else changed.
    Returns the timings, the usage and whether the rest is unchanged."""
    _cleared_metrics(p["body"], u["body"], fails)
    _cleared_metrics(p["body_json"], u["body_json"], fails)
    got = p["body"].get("timings")
    if p["body_json"].get("timings") != got:
        fails.append(f"model_dump_json and {other} disagree on timings")
    same = (_normalize(_strip_timings(p["body"])) == _normalize(u["body"])
            and _normalize(_strip_timings(p["body_json"])) == _normalize(u["body_json"]))
    return got, p["body"].get("usage"), same


def check(patched_path, unpatched_path):
    with open(patched_path) as f:
        pat = json.load(f)
    with open(unpatched_path) as f:
        unp = json.load(f)
    if not pat["patched"] or unp["patched"] or pat.get("per_request_metrics") != unp.get("per_request_metrics"):
        print(f"FAIL: {patched_path} must come from a patched vLLM and {unpatched_path} from an unpatched one, in the same mode")
        return 1
    bad = 0
    mode = ", per-request metrics on" if pat.get("per_request_metrics") else ""
    print(f"vLLM {pat['vllm']}{mode}: {len(SCENARIOS)} chat and completion scenarios and {len(ENDPOINT_SCENARIOS)} responses and messages ones, patched against unpatched")
    for name, sc in SCENARIOS.items():
        p, u = pat["scenarios"][name], unp["scenarios"][name]
        fails = []
        if p["kind"] == "stream":
            events = p["events"]
            errors = [e for e in events if "error" in e or e.get("object") == "error"]
            if errors:
                fails.append(f"error event: {errors[0]}")
            with_t = [i for i, e in enumerate(events) if "timings" in e]
            usage = next((e["usage"] for e in reversed(events) if e.get("usage")), None)
            include_usage = sc["req"].get("stream_options", {}).get("include_usage")
            if sc["expect"] is not None and with_t:
                if include_usage:
                    where = [i for i, e in enumerate(events) if e.get("usage") and not e.get("choices")]
                else:
                    where = [i for i, e in enumerate(events) for c in e.get("choices", []) if c.get("finish_reason")]
                if not where or with_t[-1] != where[-1]:
                    fails.append(f"timings on event {with_t[-1]}, expected on {where[-1:] or 'none'}")
            # vLLM's metrics ride only on the final usage chunk.
            own, own_u = [e for e in events if e.get("metrics")], [e for e in u["events"] if e.get("metrics")]
            if len(own) != len(own_u) or len(own) > 1:
                fails.append(f"{len(own)} events carry vLLM's metrics, {len(own_u)} unpatched")
            for e, ue in zip(own, own_u):
                _cleared_metrics(e, ue, fails)
            bodies = [events[i] for i in with_t]
            got = bodies[-1]["timings"] if bodies else None
            if len(with_t) > 1:
                fails.append(f"timings on {len(with_t)} events: {with_t}")
            # Counts of a stream without usage: prompt once, every token.
            if usage is None:
                n_prompt = sum(pp["len"] for pp in sc["prompts"])
                n_gen = sum(len(c.get("token_ids") or []) or 1 for e in events for c in e.get("choices", [])
                            if c.get("text") or c.get("delta", {}).get("content"))
                usage = {"prompt_tokens": n_prompt, "completion_tokens": n_gen, "_counted": True}
            # Order-insensitive: with two prompts, how their events interleave
            # depends on vLLM's merge of the two engine streams, not on the patch.
            # So does the usage chunk's cached_tokens: vLLM reports the
            # num_cached_tokens of whichever prompt's output it merged last
            # (0.30.0 gave 2 patched and 0 unpatched in one sweep).
            racy = len(sc["prompts"]) > 1
            same = (sorted(json.dumps(_racy_cached(e, racy), sort_keys=True) for e in _normalize(_strip_timings(events)))
                    == sorted(json.dumps(_racy_cached(e, racy), sort_keys=True) for e in _normalize(u["events"])))
        else:
            got, usage, same = _full_body(p, u, fails, "model_dump")
        if not same:
            fails.append("apart from timings, the patched response differs from the unpatched one")
        want = sc["expect"]
        if want is None:
            if got is not None:
                fails.append(f"timings without stats: {got}")
        elif got is None:
            fails.append("no timings")
        else:
            if not _same_timings(got, want):
                fails.append(f"timings {got} != expected {want}")
            if usage and got["prompt_n"] + got["cache_n"] != usage["prompt_tokens"]:
                fails.append(f"prompt_n + cache_n = {got['prompt_n'] + got['cache_n']} != usage.prompt_tokens {usage['prompt_tokens']}")
            if usage and not usage.get("_counted") and got["predicted_n"] != usage["completion_tokens"]:
                fails.append(f"predicted_n {got['predicted_n']} != usage.completion_tokens {usage['completion_tokens']}")
        shown = "" if got is None else (f"prompt_n={got['prompt_n']} cache_n={got['cache_n']} "
                                        f"predicted_n={got['predicted_n']} prompt_ms={got['prompt_ms']:g} "
                                        f"predicted_ms={got['predicted_ms']:g}")
        status = "FAIL" if fails else "ok  "
        print(f"{status} {name}: {shown or 'no timings'}"
              + (f" | usage {usage.get('prompt_tokens')}/{usage.get('completion_tokens')}" if usage else ""))
        for f in fails:
            print(f"     {f}")
        bad += bool(fails)
    ebad, skipped = check_endpoints(pat, unp)
    total = len(SCENARIOS) + len(ENDPOINT_SCENARIOS) - skipped
    print(f"{total - bad - ebad} passed, {bad + ebad} failed" + (f", {skipped} skipped" if skipped else ""))
    return 1 if bad or ebad else 0


def check_endpoints(pat, unp):
    """The /v1/responses and /v1/messages scenarios: (failed, skipped)."""
    bad = skipped = 0
    for name, sc in ENDPOINT_SCENARIOS.items():
        p, u = pat["endpoints"][name], unp["endpoints"][name]
        if p["kind"] == "absent" and u["kind"] == "absent":
            print(f"skip {name}: this vLLM does not serve /v1/{sc['api']}")
            skipped += 1
            continue
        fails, got, usage = check_endpoint(sc, p, u)
        want = sc["expect"]
        if want is None and got is not None:
            fails.append(f"timings without stats: {got}")
        elif want is not None and got is None:
            fails.append("no timings")
        elif want is not None and not _same_timings(got, want):
            fails.append(f"timings {got} != expected {want}")
        bad += report(name, got, usage, fails)
    return bad, skipped


def report(name, got, usage, fails):
    """Print one scenario's line (and its failures); 1 if it failed."""
    shown = "" if got is None else (f"prompt_n={got['prompt_n']} cache_n={got['cache_n']} "
                                    f"predicted_n={got['predicted_n']} prompt_ms={got['prompt_ms']:g} "
                                    f"predicted_ms={got['predicted_ms']:g}")
    status = "FAIL" if fails else "ok  "
    print(f"{status} {name}: {shown or 'no timings'}" + (f" | usage {usage}" if usage else ""))
    for f in fails:
        print(f"     {f}")
    return int(bool(fails))


def _usage_counts(api, usage):
    """(total prompt tokens, cached tokens or None, generated tokens) from a
    Responses or Messages usage dict, in the endpoint's own meaning:
    Responses' input_tokens is the whole prompt, cached ones included;
    Anthropic's input_tokens excludes cache_read_input_tokens and
    cache_creation_input_tokens (absent: 0)."""
    if api == "responses":
        details = usage.get("input_tokens_details") or {}
        return usage.get("input_tokens"), details.get("cached_tokens"), usage.get("output_tokens")
    total = usage.get("input_tokens", 0) + (usage.get("cache_read_input_tokens") or 0) \
        + (usage.get("cache_creation_input_tokens") or 0)
    return total, usage.get("cache_read_input_tokens"), usage.get("output_tokens")


def check_endpoint(sc, p, u):
    """Where a /v1/responses or /v1/messages response carries timings, and
    whether the rest of it is unchanged. Returns (failures, timings or None,
    usage shown)."""
    api, fails = sc["api"], []
    if p["kind"] in ("absent", "error") or p["kind"] != u["kind"]:
        return [f"patched {p['kind']}, unpatched {u['kind']}: {p.get('body', '')}"[:300]], None, None
    if p["kind"] == "stream":
        events = p["events"]
        errors = [e for e in events if e.get("type") == "error" or "error" in e]
        if errors:
            fails.append(f"error event: {errors[0]}")
        if api == "responses":
            # The terminal event: response.completed, or from 0.33 on
            # response.incomplete when the output was cut short.
            terminal = ("response.completed", "response.incomplete")
            where = [i for i, e in enumerate(events) if e.get("type") in terminal]
            want_type = events[where[-1]]["type"] if where else "response.completed"
            if sc.get("finish") != "length" and want_type != "response.completed":
                fails.append(f"a complete response ends with {want_type}")
            body = events[where[-1]] if where else {}
            usage = (body.get("response") or {}).get("usage")
            inner = [i for i, e in enumerate(events) if "timings" in (e.get("response") or {})]
            top = [i for i, e in enumerate(events) if "timings" in e]
            if inner != top:
                fails.append(f"timings inside the response on events {inner}, at the top level on {top}")
            elif inner and body.get("timings") != (body.get("response") or {}).get("timings"):
                fails.append(f"{want_type}: timings inside its response {body['response']['timings']} "
                             f"!= at its top level {body.get('timings')}")
        else:
            want_type = "message_delta"
            where = [i for i, e in enumerate(events) if e.get("type") == want_type and e.get("usage")]
            usage = events[where[-1]]["usage"] if where else None
        if len(where) != 1:
            fails.append(f"{len(where)} {want_type} events, want 1")
        with_t = [i for i, e in enumerate(events) if "timings" in e]
        if len(with_t) > 1 or (with_t and with_t != where[-1:]):
            fails.append(f"timings on events {with_t} ({[events[i].get('type') for i in with_t]}), "
                         f"want only on the {want_type} event {where[-1:]}")
        got = events[with_t[-1]]["timings"] if with_t else None
        same = ([json.dumps(e, sort_keys=True) for e in _normalize(_strip_timings(events))]
                == [json.dumps(e, sort_keys=True) for e in _normalize(u["events"])])
    else:
        # A Responses body with vLLM's own metrics (0.31 on): cleared as on chat.
        got, usage, same = _full_body(p, u, fails, "the router's serialization")
    if not same:
        fails.append("apart from timings, the patched response differs from the unpatched one")
    shown = None
    if usage:
        prompt, cached, generated = _usage_counts(api, usage)
        shown = f"{api} input {prompt} (cached {cached}) / output {generated}"
        if got is not None:
            if got["prompt_n"] + got["cache_n"] != prompt:
                fails.append(f"prompt_n + cache_n = {got['prompt_n'] + got['cache_n']} != {prompt} prompt tokens in usage")
            if cached is not None and got["cache_n"] != cached:
                fails.append(f"cache_n {got['cache_n']} != {cached} cached tokens in usage")
            if got["predicted_n"] != generated:
                fails.append(f"predicted_n {got['predicted_n']} != output_tokens {generated}")
    elif got is not None:
        fails.append("timings on a response without usage")
    return fails, got, shown


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--per-request-metrics"]
    if len(args) in (2, 3) and args[0] == "run":
        if len(args) == 3:
            sys.path.insert(0, args[2])
        run(args[1], per_request_metrics=len(args) < len(sys.argv) - 1)
    elif len(args) == 3 and args[0] == "check":
        sys.exit(check(args[1], args[2]))
    else:
        sys.exit(__doc__)
