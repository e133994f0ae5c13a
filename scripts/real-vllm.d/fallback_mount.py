"""The fallback mounted by a real vLLM's own code, without a GPU or engine.

    python fallback_mount.py MODULE_DIR:PLUGIN_DIR

The directories are what vllm-timings exec writes (go run
./patcher/fallback/internal/writefallback DIR prints them). Run with the
interpreter of a vLLM installation (scripts/real-vllm's level 3), this
checks, with vLLM's own code wherever vLLM has it:

  1. vLLM's load_stat_logger_plugin_factories() finds the stat logger in
     the vllm.stat_logger_plugins group from the dist-info on sys.path,
     as a subclass of vLLM's StatLoggerBase, and it can be made the way
     vLLM's per-engine adapter makes it;
  2. it takes the FinishedRequestStats that vLLM's own
     IterationStats.update_from_finished_request() builds from a
     RequestStateStats with chosen engine timestamps, in a record() call
     shaped as StatLoggerManager's (a chat request, and a completion's
     engine request "cmpl-X-0");
  3. vLLM's own argument parser takes --middleware
     vllm_timings_fallback.TimingsMiddleware, --enable-force-include-usage
     and --enable-prompt-tokens-details, and vLLM's own build_app() adds
     the middleware to the FastAPI app;
  4. through that app (vLLM's routers, its other middleware, Starlette's
     JSONResponse and StreamingResponse), a chat completion and a
     completion, full and streamed, answered with vLLM's own response
     classes by stand-in serving objects get timings: a full response from
     the engine
     stats of step 2 (prompt_ms = first_token_ts - scheduled_ts,
     predicted_ms = last_token_ts - first_token_ts, exactly), the stream's
     final usage chunk from the API server's clock, and every other byte
     and event as vLLM sent it;
  5. with the routes exec gives it beside a patch that covers chat and
     completions (VLLM_TIMINGS_FALLBACK_ROUTES="/v1/responses
     /v1/messages"), a chat completion goes through that app untouched.

Prints one "ok" line per check; exits 1 at the first failure.
"""

import asyncio
import inspect
import json
import sys
import time


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def ok(msg):
    print("ok: " + msg)


def call(fn, **kwargs):
    """fn with the keyword arguments it takes (vLLM's signatures move)."""
    params = inspect.signature(fn).parameters
    return fn(**{k: v for k, v in kwargs.items() if k in params})


def main(dirs):
    sys.path[:0] = dirs.split(":")

    # 1. The plugin, as vLLM loads it.
    from vllm.v1.metrics.loggers import StatLoggerBase, load_stat_logger_plugin_factories

    factories = [f for f in load_stat_logger_plugin_factories() if f.__module__ == "vllm_timings_fallback"]
    if len(factories) != 1 or not issubclass(factories[0], StatLoggerBase):
        fail(f"vLLM's loader found {factories}, want vllm_timings_fallback.StatLogger")
    logger = factories[0](vllm_config=None, engine_index=0)
    import vllm_timings_fallback as fb

    if not (fb._STATS["active"] and fb._STATS["ids"]):
        fail(f"the stat logger did not start, or this vLLM's stats carry no request id: {fb._STATS}")
    ok("vLLM's load_stat_logger_plugin_factories() loads the stat logger from the dist-info on sys.path")

    # 2. A finished request, as vLLM's output processor records it.
    from vllm.v1.metrics.stats import IterationStats, RequestStateStats
    from vllm.v1.engine import FinishReason

    now = time.monotonic()
    rs = RequestStateStats(arrival_time=time.time())
    rs.queued_ts, rs.scheduled_ts, rs.first_token_ts, rs.last_token_ts = now - 0.5, now - 0.4, now - 0.3125, now - 0.0625
    rs.num_generation_tokens = 16
    it = IterationStats()
    call(it.update_from_finished_request, finish_reason=FinishReason.LENGTH, request_id="chatcmpl-vtmount",
         num_prompt_tokens=40, max_tokens_param=16, req_stats=rs, num_cached_tokens=16)
    cs = RequestStateStats(arrival_time=time.time())
    cs.queued_ts, cs.scheduled_ts, cs.first_token_ts, cs.last_token_ts = now - 0.25, now - 0.2, now - 0.1875, now - 0.0625
    cs.num_generation_tokens = 8
    call(it.update_from_finished_request, finish_reason=FinishReason.LENGTH, request_id="cmpl-vtmount-0",
         num_prompt_tokens=40, max_tokens_param=8, req_stats=cs, num_cached_tokens=16)
    logger.record(scheduler_stats=None, iteration_stats=it, mm_cache_stats=None, engine_idx=0)
    if "chatcmpl-vtmount" not in fb._RECORDS or "cmpl-vtmount-0" not in fb._RECORDS:
        fail(f"the records of vLLM's FinishedRequestStats are not kept: {dict(fb._RECORDS)}")
    want = {
        "chat": ((rs.first_token_ts - rs.scheduled_ts) * 1000, (rs.last_token_ts - rs.first_token_ts) * 1000),
        "completion": ((cs.first_token_ts - cs.scheduled_ts) * 1000, (cs.last_token_ts - cs.first_token_ts) * 1000),
    }
    ok("the stat logger keeps the FinishedRequestStats vLLM builds (request ids chatcmpl-vtmount, cmpl-vtmount-0)")

    # 3. The middleware, as vLLM mounts it.
    try:
        from vllm.entrypoints.common.cli_args import make_arg_parser
    except ImportError:
        from vllm.entrypoints.openai.cli_args import make_arg_parser
    try:
        from vllm.utils.argparse_utils import FlexibleArgumentParser
    except ImportError:
        from vllm.utils import FlexibleArgumentParser
    try:
        from vllm.entrypoints.launchers.app import build_app
    except ImportError:
        from vllm.entrypoints.openai.api_server import build_app
    args = make_arg_parser(FlexibleArgumentParser()).parse_args(
        ["--model", "tiny", "--middleware", "vllm_timings_fallback.TimingsMiddleware",
         "--enable-force-include-usage", "--enable-prompt-tokens-details"])
    if not (args.enable_force_include_usage and args.enable_prompt_tokens_details):
        fail("vLLM's parser dropped the flags the fallback adds")
    app = call(build_app, args=args, supported_tasks=("generate",))
    mounted = [m.cls for m in app.user_middleware]
    if fb.TimingsMiddleware not in mounted:
        fail(f"vLLM's build_app did not add the middleware: {mounted}")
    ok(f"vLLM's parser takes --middleware and both flags; build_app adds TimingsMiddleware ({len(mounted)} middleware in all)")

    # 4. Requests through the app.
    asyncio.run(through_app(app, want))


async def through_app(app, want):
    import httpx
    from vllm.entrypoints.openai.chat_completion.protocol import (
        ChatCompletionResponse, ChatCompletionResponseChoice, ChatCompletionResponseStreamChoice,
        ChatCompletionStreamResponse, ChatMessage)
    import importlib

    def find(name):
        """A protocol class, wherever this vLLM defines it."""
        for mod in ("vllm.entrypoints.openai.chat_completion.protocol", "vllm.entrypoints.serve.engine.protocol",
                    "vllm.entrypoints.generate.base.protocol", "vllm.entrypoints.openai.engine.protocol",
                    "vllm.entrypoints.openai.protocol"):
            try:
                cls = getattr(importlib.import_module(mod), name, None)
            except ImportError:
                continue
            if cls is not None:
                return cls
        fail(f"no {name} in this vLLM's protocol modules")

    DeltaMessage, UsageInfo, PromptTokenUsageInfo = find("DeltaMessage"), find("UsageInfo"), find("PromptTokenUsageInfo")

    usage = UsageInfo(prompt_tokens=40, completion_tokens=16, total_tokens=56,
                      prompt_tokens_details=PromptTokenUsageInfo(cached_tokens=16))

    class Serving:
        """Answers as OpenAIServingChat does, with vLLM's own classes."""

        async def create_chat_completion(self, request, raw_request=None):
            if not request.stream:
                return ChatCompletionResponse(
                    id="chatcmpl-vtmount", model="tiny", usage=usage,
                    choices=[ChatCompletionResponseChoice(index=0, message=ChatMessage(role="assistant", content="hi"),
                                                          finish_reason="length")])

            async def gen():
                def chunk(**kw):
                    return ChatCompletionStreamResponse(id="chatcmpl-vtstream", model="tiny", **kw)
                await asyncio.sleep(0.05)
                yield "data: " + chunk(choices=[ChatCompletionResponseStreamChoice(
                    index=0, delta=DeltaMessage(role="assistant", content=""))]).model_dump_json(exclude_unset=True) + "\n\n"
                for k in range(3):
                    await asyncio.sleep(0.02)
                    yield "data: " + chunk(choices=[ChatCompletionResponseStreamChoice(
                        index=0, delta=DeltaMessage(content=f"w{k}"),
                        finish_reason="length" if k == 2 else None)]).model_dump_json(exclude_unset=True) + "\n\n"
                final = chunk(choices=[], usage=usage)
                yield "data: " + final.model_dump_json(exclude_unset=True, exclude_none=True) + "\n\n"
                yield "data: [DONE]\n\n"
            return gen()

    try:
        from vllm.entrypoints.openai.completion.protocol import (
            CompletionResponse, CompletionResponseChoice, CompletionResponseStreamChoice, CompletionStreamResponse)
    except ImportError:
        from vllm.entrypoints.openai.protocol import (
            CompletionResponse, CompletionResponseChoice, CompletionResponseStreamChoice, CompletionStreamResponse)
    cusage = UsageInfo(prompt_tokens=40, completion_tokens=8, total_tokens=48,
                       prompt_tokens_details=PromptTokenUsageInfo(cached_tokens=16))

    class CompletionServing:
        """Answers as OpenAIServingCompletion does, with vLLM's own classes."""

        async def create_completion(self, request, raw_request=None):
            if not request.stream:
                return CompletionResponse(
                    id="cmpl-vtmount", model="tiny", usage=cusage,
                    choices=[CompletionResponseChoice(index=0, text="hi", finish_reason="length")])

            async def gen():
                await asyncio.sleep(0.05)
                for k in range(3):
                    await asyncio.sleep(0.02)
                    yield "data: " + CompletionStreamResponse(id="cmpl-vtstream", model="tiny", choices=[
                        CompletionResponseStreamChoice(index=0, text=f"w{k}", finish_reason="length" if k == 2 else None)
                    ]).model_dump_json(exclude_unset=True) + "\n\n"
                final = CompletionStreamResponse(id="cmpl-vtstream", model="tiny", choices=[], usage=cusage)
                yield "data: " + final.model_dump_json(exclude_unset=True, exclude_none=True) + "\n\n"
                yield "data: [DONE]\n\n"
            return gen()

    app.state.openai_serving_chat = Serving()
    app.state.openai_serving_completion = CompletionServing()
    for name in ("enable_server_load_tracking", "server_load_metrics"):
        if not hasattr(app.state, name):
            setattr(app.state, name, False if name.startswith("enable") else 0)
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://vllm") as client:
        await endpoint_through_app(client, "/v1/chat/completions",
                                   {"model": "tiny", "messages": [{"role": "user", "content": "x"}], "max_tokens": 16},
                                   want["chat"], predicted_n=16, stream_events=5, what="chat")
        await endpoint_through_app(client, "/v1/completions", {"model": "tiny", "prompt": "x", "max_tokens": 8},
                                   want["completion"], predicted_n=8, stream_events=4, what="completion")

        r = await client.get("/v1/models")  # 500 here: no engine state; no header either way
        if "x-vllm-timings" in r.headers:
            fail("a GET route got the header")
        ok("other routes are left alone")

        # 5. The routes exec names beside a patch that covers chat. The
        # module read VLLM_TIMINGS_FALLBACK_ROUTES (unset here) when vLLM
        # imported it; its routes are set as that value would have set them.
        fb = sys.modules["vllm_timings_fallback"]
        every = fb._ROUTES
        fb._ROUTES, problem = fb._routes("/v1/responses /v1/messages")
        try:
            if problem is not None or "/v1/chat/completions" in fb._ROUTES:
                fail(f"the routes of '/v1/responses /v1/messages': {fb._ROUTES}, {problem}")
            r = await client.post("/v1/chat/completions",
                                  json={"model": "tiny", "messages": [{"role": "user", "content": "x"}], "max_tokens": 16})
            if r.status_code != 200 or "x-vllm-timings" in r.headers or "timings" in r.json():
                fail(f"a chat completion outside the routes: HTTP {r.status_code}, x-vllm-timings "
                     f"{r.headers.get('x-vllm-timings')}: {r.text[:300]}")
        finally:
            fb._ROUTES = every
        ok("with VLLM_TIMINGS_FALLBACK_ROUTES='/v1/responses /v1/messages', a chat completion goes through vLLM's app untouched")


async def endpoint_through_app(client, path, body, want, predicted_n, stream_events, what):
    """One endpoint, full and streamed, through the app: the full response's
    timings are the engine's FinishedRequestStats (want: prompt_ms,
    predicted_ms) with counts from usage; the stream's are on its usage chunk
    only, from the API server's clock; nothing else in either changes."""
    r = await client.post(path, json=body)
    if r.status_code != 200:
        fail(f"the full {what}: HTTP {r.status_code}: {r.text[:300]}")
    got = r.json()
    t = got.get("timings")
    if not t or r.headers.get("x-vllm-timings") != "engine":
        fail(f"the full {what} has no engine timings (x-vllm-timings {r.headers.get('x-vllm-timings')}): {r.text[:300]}")
    if abs(t["prompt_ms"] - want[0]) > 1e-6 or abs(t["predicted_ms"] - want[1]) > 1e-6:
        fail(f"the {what}'s engine timings {t['prompt_ms']}, {t['predicted_ms']}; want {want[0]}, {want[1]}")
    if (t["prompt_n"], t["cache_n"], t["predicted_n"]) != (24, 16, predicted_n) or int(r.headers["content-length"]) != len(r.content):
        fail(f"the {what}'s counts or Content-Length wrong: {t}, {r.headers.get('content-length')} for {len(r.content)} bytes")
    del got["timings"]
    if "timings" in json.dumps(got):
        fail(f"timings elsewhere in the {what}")
    ok(f"a full {what} through vLLM's app: timings from vLLM's FinishedRequestStats, prompt_ms "
       f"{t['prompt_ms']:.2f} and predicted_ms {t['predicted_ms']:.2f} exactly, counts from usage, Content-Length right")

    body = dict(body, stream=True)
    events = []
    async with client.stream("POST", path, json=body) as r:
        if r.status_code != 200 or r.headers.get("x-vllm-timings") != "stream":
            fail(f"the {what} stream: HTTP {r.status_code}, x-vllm-timings {r.headers.get('x-vllm-timings')}")
        async for line in r.aiter_lines():
            if line.startswith("data: {"):
                events.append(json.loads(line[6:]))
    with_t = [e for e in events if "timings" in e]
    if len(events) != stream_events or len(with_t) != 1 or with_t[0].get("choices") != []:
        fail(f"want timings on the {what} stream's usage chunk only, of {stream_events} events: {events}")
    t = with_t[0]["timings"]
    if not (0 < t["predicted_ms"] and 0 < t["prompt_ms"] and t["predicted_n"] == predicted_n):
        fail(f"the {what} stream's clock timings: {t}")
    ok(f"a {what} stream through vLLM's app: every chunk as sent, timings on the usage chunk from the API "
       f"server's clock (prompt_ms {t['prompt_ms']:.1f}, predicted_ms {t['predicted_ms']:.1f})")


if __name__ == "__main__":
    if any(a in ("-h", "--help") for a in sys.argv[1:]):
        print(__doc__.strip())
        sys.exit(0)
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
