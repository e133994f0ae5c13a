"""Unit tests of vllm_timings_fallback, the module vllm-timings writes for
vLLM's --middleware and vllm.stat_logger_plugins.

Run by the Go tests of patcher/fallback (TestPythonFallbackModule) as
    python3 -m unittest discover -s patcher/fallback/testdata
with VLLM_TIMINGS_FALLBACK pointing at the module. They drive the ASGI
middleware with small ASGI apps that send what vLLM sends (the shapes in
vllm_shapes.py) and check every message that leaves it. Standard library
only: no Starlette, no vLLM.
"""

import asyncio
import importlib.util
import json
import os
import random
import sys
import tempfile
import types
import unittest
from types import SimpleNamespace

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import vllm_shapes as shapes  # noqa: E402


def load(env=None):
    """A fresh copy of the module (its state is per process)."""
    old = dict(os.environ)
    os.environ.update(env or {})
    try:
        spec = importlib.util.spec_from_file_location("vllm_timings_fallback", os.environ["VLLM_TIMINGS_FALLBACK"])
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
    finally:
        os.environ.clear()
        os.environ.update(old)
    return mod


class Clock:
    """A monotonic clock the test moves."""

    def __init__(self, t=1000.0):
        self.t = t

    def __call__(self):
        return self.t


def run(coro):
    return asyncio.run(coro)


class App:
    """An ASGI app that answers with given messages, moving the clock
    before each, and checks that each reached the client before it sends
    the next (nothing is held back beyond the event at hand)."""

    def __init__(self, messages, clock=None, steps=None, check_streaming=True):
        self.messages = messages
        self.clock = clock
        self.steps = steps or [0.0] * len(messages)
        self.check_streaming = check_streaming
        self.scope = None
        self.send = None

    async def __call__(self, scope, receive, send):
        self.scope = scope
        self.send = send
        for n, (message, step) in enumerate(zip(self.messages, self.steps)):
            if self.clock is not None:
                self.clock.t += step
            await send(message)
            if self.check_streaming and self.client is not None and message["type"] == "http.response.body":
                if self.streaming and message.get("more_body"):
                    assert len(self.client.messages) == n + 1, "event %d held back" % n

    client = None
    streaming = False


class Client:
    def __init__(self):
        self.messages = []

    async def __call__(self, message):
        self.messages.append(message)

    def start(self):
        return self.messages[0]

    def header(self, name):
        return [v for k, v in self.start()["headers"] if k == name]

    def body(self):
        return b"".join(m.get("body", b"") for m in self.messages[1:])


async def receive():
    return {"type": "http.request", "body": b"", "more_body": False}


def scope(path="/v1/chat/completions", method="POST", typ="http", root_path=""):
    return {"type": typ, "method": method, "path": path, "root_path": root_path, "headers": []}


def drive(mod, app, sc=None, streaming=False):
    client = Client()
    app.client = client
    app.streaming = streaming
    mw = mod.TimingsMiddleware(app)
    run(mw(sc or scope(), receive, client))
    return client


def full(body, headers=None, status=200):
    hs = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    return [
        {"type": "http.response.start", "status": status, "headers": hs + (headers or [])},
        {"type": "http.response.body", "body": body, "more_body": False},
    ]


def stream(events):
    msgs = [{"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream; charset=utf-8")]}]
    for e in events:
        msgs.append({"type": "http.response.body", "body": e.encode(), "more_body": True})
    msgs.append({"type": "http.response.body", "body": b"", "more_body": False})
    return msgs


def without_timings(text):
    """text with every ',"timings":{...}' the middleware inserted removed."""
    out = text
    while ',"timings":{' in out:
        i = out.index(',"timings":{')
        j = out.index("}", i) + 1
        out = out[:i] + out[j:]
    return out


def finished_stats(rid, prefill, decode, cached=0, generated=16):
    return SimpleNamespace(
        request_id=rid, prefill_time=prefill, decode_time=decode, num_cached_tokens=cached, num_generation_tokens=generated
    )


class Parse(unittest.TestCase):
    """_parse, one json.loads where no position is needed, against _members,
    which decodes member by member and knows every member's position."""

    BODIES = [
        '{}', ' { } ', '{"a":1}', '\n{"id":"x","choices":[],"usage":{"prompt_tokens":3}}\r\n',
        '{"a":1,"a":2}', '{"s":"}\\"}", "n":null,"f":1.5e3}', '{"x":NaN}', '{"é":"\u00e9"}',
        '{"metrics":null,"object":"chat.completion"}', '{"response":"not an object"}',
        '{"metrics":{"time_to_first_token_ms":1.0},"object":"chat.completion"}',
        '{"type":"response.completed","response":{"id":"r","usage":{}}}',
    ]
    BAD = ['', '[]', '"s"', '1', '{', '{"a":1}x', '{"a" 1}', '{"a":1,}', '{1:2}', 'null']

    def setUp(self):
        self.fb = load()

    def test_same_as_members(self):
        for text in self.BODIES:
            with self.subTest(text=text):
                members, brace = self.fb._members(text)
                got, got_brace = self.fb._parse(text)
                self.assertEqual(got_brace, brace)
                self.assertEqual(text[got_brace], "}")
                self.assertEqual(json.dumps({k: v[0] for k, v in got.items()}),
                                 json.dumps({k: v[0] for k, v in members.items()}))
                if isinstance(members.get("metrics", (None,))[0], dict) or \
                        isinstance(members.get("response", (None,))[0], dict):
                    self.assertEqual(got, members)  # positions where they are edited

    def test_refuses_what_members_refuses(self):
        for text in self.BAD:
            with self.subTest(text=text):
                with self.assertRaises(ValueError):
                    self.fb._members(text)
                with self.assertRaises(ValueError):
                    self.fb._parse(text)


class Passthrough(unittest.TestCase):
    def setUp(self):
        self.mod = load()

    def test_other_scopes_and_routes_get_the_original_send(self):
        cases = [
            scope(typ="websocket", path="/v1/realtime"),
            scope(typ="lifespan"),
            scope(method="GET", path="/v1/models"),
            scope(method="GET", path="/metrics"),
            scope(path="/v1/embeddings"),
            scope(path="/v1/audio/transcriptions"),
            scope(path="/tokenize"),
            scope(path="/v1/responses/resp_1/cancel"),
            scope(path="/v1/messages/count_tokens"),
            scope(path="/v1/chat/completions/render"),
        ]
        for sc in cases:
            app = App(full(b'{"object":"chat.completion","id":"x","usage":{"prompt_tokens":1,"completion_tokens":1}}'))
            client = Client()
            run(self.mod.TimingsMiddleware(app)(sc, receive, client))
            self.assertIs(app.send, client, sc)
            self.assertIs(app.scope, sc)

    def test_only_the_routes_it_was_given(self):
        body = b'{"object":"chat.completion","id":"x","usage":{"prompt_tokens":1,"completion_tokens":1}}'
        mod = load({"VLLM_TIMINGS_FALLBACK_ROUTES": "/v1/responses,/v1/messages"})
        self.assertEqual(set(mod._ROUTES), {"/v1/responses", "/v1/messages", "/invocations"})
        for path in ("/v1/chat/completions", "/v1/completions"):
            app = App(full(body))
            client = Client()
            run(mod.TimingsMiddleware(app)(scope(path=path), receive, client))
            self.assertIs(app.send, client, path)  # straight to the app: no exchange
        for path in ("/v1/responses", "/v1/messages", "/invocations"):
            app = App(full(body))
            client = Client()
            run(mod.TimingsMiddleware(app)(scope(path=path), receive, client))
            self.assertIsNot(app.send, client, path)
        # Under a root path too.
        app = App(full(body))
        client = Client()
        run(mod.TimingsMiddleware(app)(scope("/api/v1/chat/completions", root_path="/api"), receive, client))
        self.assertIs(app.send, client)
        app = App(full(body))
        client = Client()
        run(mod.TimingsMiddleware(app)(scope("/api/v1/responses", root_path="/api"), receive, client))
        self.assertIsNot(app.send, client)

    def test_a_route_it_serves_is_served_as_without_the_variable(self):
        mod = load({"VLLM_TIMINGS_FALLBACK_ROUTES": "/v1/chat/completions /v1/completions"})
        for path, body in (("/v1/chat/completions", shapes.chat_full(metrics=True)),
                           ("/invocations", shapes.chat_full(metrics=True)),
                           ("/v1/chat/completions", shapes.chat_full(timings=True))):
            got = drive(mod, App(full(body.encode())), scope(path))
            want = drive(self.mod, App(full(body.encode())), scope(path))
            self.assertEqual(got.body(), want.body(), path)
            self.assertEqual(got.messages[0], want.messages[0], path)
            self.assertIn("timings", json.loads(got.body()), path)

    def test_routes_unset_empty_or_unknown(self):
        every = {"/v1/chat/completions", "/v1/completions", "/v1/responses", "/v1/messages", "/invocations"}
        self.assertEqual(set(self.mod._ROUTES), every)
        self.assertIsNone(self.mod._ROUTES_PROBLEM)
        self.assertEqual(set(load({"VLLM_TIMINGS_FALLBACK_ROUTES": "/v1/chat/completions /v1/completions"})._ROUTES),
                         {"/v1/chat/completions", "/v1/completions", "/invocations"})
        # What exec writes under --fallback always: every route.
        mod = load({"VLLM_TIMINGS_FALLBACK_ROUTES": "/v1/chat/completions /v1/completions /v1/responses /v1/messages"})
        self.assertEqual(set(mod._ROUTES), every)
        self.assertIsNone(mod._ROUTES_PROBLEM)
        # A value it cannot use: every route, as without it, and one warning
        # when vLLM makes the middleware.
        for value, named in (("/v1/chat/completions /v1/chats", "/v1/chats"), ("", "names no route"), (" , ", "names no route")):
            mod = load({"VLLM_TIMINGS_FALLBACK_ROUTES": value})
            self.assertEqual(set(mod._ROUTES), every, repr(value))
            with self.assertLogs("vllm.vllm_timings_fallback", "WARNING") as logs:
                mod.TimingsMiddleware(App(full(b"{}")))
            warnings = [r for r in logs.records if r.levelname == "WARNING"]
            self.assertEqual(len(warnings), 1, logs.output)
            self.assertIn(named, warnings[0].getMessage())
            self.assertIn("serving every route", warnings[0].getMessage())
            app = App(full(b"{}"))
            client = Client()
            with self.assertNoLogs("vllm.vllm_timings_fallback", "WARNING"):
                mw = mod.TimingsMiddleware(app)  # once a process
            run(mw(scope(), receive, client))
            self.assertIsNot(app.send, client, repr(value))

    def test_patched_response_is_untouched(self):
        body = shapes.chat_full(timings=True).encode()
        client = drive(self.mod, App(full(body)))
        self.assertEqual(client.body(), body)
        self.assertEqual(client.header(b"content-length"), [str(len(body)).encode()])
        self.assertEqual(client.header(b"x-vllm-timings"), [b"patch"])

    def test_full_response_without_a_source_is_untouched(self):
        for body in (shapes.chat_full(), shapes.completion_full(), shapes.responses_full(), shapes.message_full()):
            client = drive(self.mod, App(full(body.encode())))
            self.assertEqual(client.body(), body.encode())
            self.assertEqual(client.header(b"x-vllm-timings"), [b"none"])

    def test_errors_and_other_content_pass(self):
        err = b'{"error":{"message":"bad","type":"BadRequestError","code":400}}'
        for msgs in (
            full(err, status=400),
            full(b"not json"),
            full(b'{"object":"chat.completion","usage":'),
            full(shapes.chat_full(metrics=True).encode(), headers=[(b"content-encoding", b"gzip")]),
            [{"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]},
             {"type": "http.response.body", "body": b"hello", "more_body": False}],
        ):
            client = drive(self.mod, App(msgs))
            self.assertEqual(client.body(), msgs[-1]["body"])
            self.assertEqual([m["type"] for m in client.messages], [m["type"] for m in msgs])

    def test_app_raising_after_start_sends_what_it_sent(self):
        async def app(scope, receive, send):
            await send(full(b"{}")[0])
            await send({"type": "http.response.body", "body": b'{"a":', "more_body": True})
            raise RuntimeError("boom")

        client = Client()
        with self.assertRaises(RuntimeError):
            run(self.mod.TimingsMiddleware(app)(scope(), receive, client))
        self.assertEqual(client.messages[0]["type"], "http.response.start")
        self.assertEqual(client.body(), b'{"a":')

    def test_app_raising_before_start(self):
        async def app(scope, receive, send):
            raise ValueError("early")

        client = Client()
        with self.assertRaises(ValueError):
            run(self.mod.TimingsMiddleware(app)(scope(), receive, client))
        self.assertEqual(client.messages, [])


class FullResponses(unittest.TestCase):
    def setUp(self):
        self.mod = load()

    def check_only_timings_added(self, before, after, nulls=False):
        text = without_timings(after.decode())
        if nulls:
            before = json.loads(before)
            before["metrics"]["time_to_first_token_ms"] = None
            before["metrics"]["mean_itl_ms"] = None
            self.assertEqual(json.loads(text), before)
        else:
            self.assertEqual(text, before)

    def test_per_request_metrics(self):
        body = shapes.chat_full(metrics=True, cached=128)
        client = drive(self.mod, App(full(body.encode())))
        out = client.body()
        self.assertEqual(client.header(b"content-length"), [str(len(out)).encode()])
        self.assertEqual(client.header(b"x-vllm-timings"), [b"metrics"])
        t = json.loads(out)["timings"]
        m = json.loads(body)["metrics"]
        self.assertEqual(t["prompt_ms"], m["time_to_first_token_ms"])
        self.assertEqual(t["predicted_ms"], m["generation_time_ms"])
        self.assertEqual(t["prompt_n"] + t["cache_n"], json.loads(body)["usage"]["prompt_tokens"])
        self.assertEqual(t["cache_n"], 128)
        self.assertEqual(t["predicted_n"], json.loads(body)["usage"]["completion_tokens"])
        self.assertIsNone(json.loads(out)["metrics"]["time_to_first_token_ms"])
        self.assertIsNone(json.loads(out)["metrics"]["mean_itl_ms"])
        self.check_only_timings_added(body, out, nulls=True)

    def test_engine_stats(self):
        mod = self.mod
        mod._STATS.update(active=True, ids=True)
        body = shapes.chat_full(rid="chatcmpl-abc", cached=None)
        mod._record_finished([finished_stats("chatcmpl-abc", 0.012, 0.25, cached=32)], 5.0)
        client = drive(mod, App(full(body.encode())))
        t = json.loads(client.body())["timings"]
        self.assertEqual(t["prompt_ms"], 12.0)
        self.assertEqual(t["predicted_ms"], 250.0)
        self.assertEqual(t["cache_n"], 32)  # usage has none: the engine's count
        self.assertEqual(client.header(b"x-vllm-timings"), [b"engine"])
        self.check_only_timings_added(body, client.body())
        self.assertNotIn("chatcmpl-abc", mod._RECORDS)

    def test_usage_cached_count_wins(self):
        mod = self.mod
        mod._STATS.update(active=True, ids=True)
        body = shapes.chat_full(rid="chatcmpl-abc", cached=64)
        mod._record_finished([finished_stats("chatcmpl-abc", 0.012, 0.25, cached=32)], 5.0)
        t = json.loads(drive(mod, App(full(body.encode()))).body())["timings"]
        self.assertEqual(t["cache_n"], 64)

    def test_without_a_cached_count_no_prompt_speed(self):
        body = shapes.chat_full(metrics=True, cached=None)
        t = json.loads(drive(self.mod, App(full(body.encode()))).body())["timings"]
        self.assertNotIn("cache_n", t)
        self.assertEqual(t["prompt_n"], json.loads(body)["usage"]["prompt_tokens"])
        self.assertEqual(t["prompt_per_second"], 0.0)
        self.assertGreater(t["predicted_per_second"], 0.0)

    def test_several_engine_requests(self):
        mod = self.mod
        mod._STATS.update(active=True, ids=True)
        body = shapes.completion_full(rid="cmpl-xyz", choices=2)
        # two prompts: one recorded at 10.0 (prompt 9.7-9.8, decode 9.8-10.0),
        # one at 10.1 (prompt 9.75-9.85, decode to 10.1)
        mod._record_finished([finished_stats("cmpl-xyz-0", 0.1, 0.2)], 10.0)
        mod._record_finished([finished_stats("cmpl-xyz-1", 0.1, 0.25)], 10.1)
        t = json.loads(drive(mod, App(full(body.encode()))).body())["timings"]
        self.assertAlmostEqual(t["prompt_ms"], 150.0)  # 9.7 .. 9.85
        self.assertAlmostEqual(t["predicted_ms"], 250.0)  # 9.85 .. 10.1
        self.assertEqual(t["cache_n"], 0)

    def test_several_prompts_cached_from_the_engine(self):
        # vLLM's usage counts one prompt's cached tokens; the engine has
        # each prompt's (the smaller of its choices').
        mod = self.mod
        mod._STATS.update(active=True, ids=True)
        body = shapes.completion_full(rid="cmpl-c", choices=3, cached=128, prompt_tokens=300)
        mod._record_finished([finished_stats("cmpl-c-0", 0.1, 0.2, cached=128),
                              finished_stats("cmpl-c-0", 0.1, 0.2, cached=144)], 10.0)
        mod._record_finished([finished_stats("cmpl-c-1", 0.1, 0.2, cached=112)], 10.1)
        t = json.loads(drive(mod, App(full(body.encode()))).body())["timings"]
        self.assertEqual(t["cache_n"], 240)
        self.assertEqual(t["prompt_n"] + t["cache_n"], json.loads(body)["usage"]["prompt_tokens"])

    def test_too_many_records_is_no_source(self):
        mod = self.mod
        mod._STATS.update(active=True, ids=True)
        body = shapes.chat_full(rid="chatcmpl-dup")
        mod._record_finished([finished_stats("chatcmpl-dup", 0.1, 0.2), finished_stats("chatcmpl-dup", 0.1, 0.2)], 10.0)
        client = drive(mod, App(full(body.encode())))
        self.assertEqual(client.body(), body.encode())
        self.assertEqual(client.header(b"x-vllm-timings"), [b"none"])

    def test_record_arriving_after_the_body(self):
        mod = self.mod
        mod._STATS.update(active=True, ids=True)
        body = shapes.chat_full(rid="chatcmpl-late")

        async def main():
            client = Client()
            app = App(full(body.encode()))

            async def later():
                await asyncio.sleep(0.01)
                mod._record_finished([finished_stats("chatcmpl-other", 0.1, 0.1)], 1.0)
                await asyncio.sleep(0.01)
                mod._record_finished([finished_stats("chatcmpl-late", 0.03, 0.3)], 1.0)

            task = asyncio.ensure_future(later())
            await mod.TimingsMiddleware(app)(scope(), receive, client)
            await task
            return client

        client = run(main())
        t = json.loads(client.body())["timings"]
        self.assertAlmostEqual(t["prompt_ms"], 30.0)

    def test_records_that_never_come(self):
        mod = self.mod
        mod._STATS.update(active=True, ids=True)
        mod._STATS_WAIT_S = 0.05
        body = shapes.chat_full(rid="chatcmpl-never")
        client = drive(mod, App(full(body.encode())))
        self.assertEqual(client.body(), body.encode())

    def test_no_wait_without_ids(self):
        mod = self.mod
        mod._STATS.update(active=True, ids=False)
        mod._STATS_WAIT_S = 30.0
        body = shapes.chat_full(rid="chatcmpl-x")
        client = drive(mod, App(full(body.encode())))  # would hang 30 s
        self.assertEqual(client.body(), body.encode())

    def test_responses_and_messages(self):
        mod = self.mod
        mod._STATS.update(active=True, ids=True)
        mod._record_finished([finished_stats("resp_1_0", 0.02, 0.2, cached=5)], 3.0)
        body = shapes.responses_full(rid="resp_1", metrics=True)
        client = drive(mod, App(full(body.encode())), scope("/v1/responses"))
        out = json.loads(client.body())
        # per-request metrics come first
        self.assertEqual(out["timings"]["prompt_ms"], json.loads(body)["metrics"]["time_to_first_token_ms"])
        self.assertEqual(out["timings"]["cache_n"], 16)
        self.assertEqual(out["timings"]["prompt_n"] + 16, out["usage"]["input_tokens"])

        mod._record_finished([finished_stats("chatcmpl-m", 0.02, 0.2)], 3.0)
        body = shapes.message_full(rid="chatcmpl-m", cache_read=10, cache_creation=4, input_tokens=6)
        client = drive(mod, App(full(body.encode())), scope("/v1/messages"))
        t = json.loads(client.body())["timings"]
        self.assertEqual((t["prompt_n"], t["cache_n"]), (10, 10))
        self.assertEqual(t["prompt_ms"], 20.0)

    def test_responses_tool_loop_gets_nothing_from_stats(self):
        mod = self.mod
        mod._STATS.update(active=True, ids=True)
        mod._record_finished([finished_stats("resp_2_0", 0.02, 0.2), finished_stats("resp_2_1", 0.02, 0.2)], 3.0)
        body = shapes.responses_full(rid="resp_2")
        client = drive(mod, App(full(body.encode())), scope("/v1/responses"))
        self.assertEqual(client.body(), body.encode())

    def test_chunked_body_and_root_path_and_invocations(self):
        body = shapes.chat_full(metrics=True).encode()
        msgs = full(body)
        msgs = [msgs[0], {"type": "http.response.body", "body": body[:10], "more_body": True},
                {"type": "http.response.body", "body": body[10:], "more_body": False}]
        client = drive(self.mod, App(msgs), scope("/api/v1/chat/completions", root_path="/api"))
        self.assertIn("timings", json.loads(client.body()))
        self.assertEqual(len(client.messages), 2)
        client = drive(self.mod, App(full(body)), scope("/invocations"))
        self.assertIn("timings", json.loads(client.body()))

    def test_no_tokens_no_timings(self):
        body = shapes.chat_full(metrics=True, completion_tokens=0)
        client = drive(self.mod, App(full(body.encode())))
        self.assertEqual(client.body(), body.encode())

    def test_non_ascii_bytes_kept(self):
        body = shapes.chat_full(metrics=True, content="héllo \u2603 \\\"q\\\" }{")
        out = drive(self.mod, App(full(body.encode()))).body()
        self.check_only_timings_added(body, out, nulls=True)
        self.assertEqual(json.loads(out)["choices"][0]["message"]["content"], json.loads(body)["choices"][0]["message"]["content"])


class Streams(unittest.TestCase):
    def setUp(self):
        self.mod = load()
        self.clock = Clock()
        self.mod._monotonic = self.clock

    def drive_stream(self, events, steps, path="/v1/chat/completions"):
        msgs = stream(events)
        app = App(msgs, clock=self.clock, steps=[0.0] + steps + [0.0])
        return drive(self.mod, app, scope(path), streaming=True), msgs

    def test_chat_clock(self):
        events = shapes.chat_stream(rid="chatcmpl-s", tokens=4)
        # arrival at 1000.0; role chunk +0.05; tokens every 0.01; finish; usage; [DONE]
        steps = [0.05] + [0.01] * (len(events) - 1)
        client, msgs = self.drive_stream(events, steps)
        self.assertEqual(client.header(b"x-vllm-timings"), [b"stream"])
        out = [m["body"].decode() for m in client.messages[1:-1]]
        self.assertEqual(len(out), len(events))
        final = [n for n, e in enumerate(events) if '"choices":[]' in e][0]
        for n, (a, b) in enumerate(zip(events, out)):
            if n != final:
                self.assertEqual(a, b)
        chunk = json.loads(out[final][len("data: "):])
        t = chunk["timings"]
        self.assertAlmostEqual(t["prompt_ms"], 50.0)
        last_content = final - 1
        self.assertAlmostEqual(t["predicted_ms"], 10.0 * (last_content - 0))
        self.assertEqual(t["predicted_n"], chunk["usage"]["completion_tokens"])
        self.assertEqual(without_timings(out[final]), events[final])

    def test_chat_engine_stats_n2(self):
        mod = self.mod
        mod._STATS.update(active=True, ids=True)
        events = shapes.chat_stream(rid="chatcmpl-n2", tokens=3, n=2)
        mod._record_finished([finished_stats("chatcmpl-n2", 0.01, 0.1)], 1000.2)
        mod._record_finished([finished_stats("chatcmpl-n2", 0.01, 0.12)], 1000.25)
        client, _ = self.drive_stream(events, [0.01] * len(events))
        final = [json.loads(m["body"][6:]) for m in client.messages[1:-1] if b'"choices":[]' in m["body"]][0]
        # 1000.09-1000.1 and 1000.12-1000.13 prompt; whole 1000.09-1000.25
        self.assertAlmostEqual(final["timings"]["prompt_ms"], 20.0)
        self.assertAlmostEqual(final["timings"]["predicted_ms"], 140.0)

    def test_patched_stream_untouched(self):
        events = shapes.chat_stream(rid="chatcmpl-p", tokens=3, timings=True)
        client, _ = self.drive_stream(events, [0.01] * len(events))
        self.assertEqual([m["body"].decode() for m in client.messages[1:-1]], events)

    def test_stream_without_usage_chunk_untouched(self):
        events = [e for e in shapes.chat_stream(rid="chatcmpl-q", tokens=3) if '"choices":[]' not in e]
        client, _ = self.drive_stream(events, [0.01] * len(events))
        self.assertEqual([m["body"].decode() for m in client.messages[1:-1]], events)

    def test_completion_stream_two_prompts(self):
        events = shapes.completion_stream(rid="cmpl-s", tokens=3, prompts=2)
        client, _ = self.drive_stream(events, [0.02] * len(events), path="/v1/completions")
        final = [json.loads(m["body"][6:]) for m in client.messages[1:-1] if b'"choices":[]' in m["body"]][0]
        self.assertAlmostEqual(final["timings"]["prompt_ms"], 20.0)
        self.assertEqual(final["timings"]["predicted_n"], 6)

    def test_responses_stream(self):
        events = shapes.responses_stream(rid="resp_s", deltas=3)
        # created, in_progress at +0.001 each; first output event at +0.04
        steps = [0.001, 0.001, 0.04] + [0.01] * (len(events) - 3)
        client, _ = self.drive_stream(events, steps, path="/v1/responses")
        out = [m["body"].decode() for m in client.messages[1:-1]]
        done = [o for o in out if o.startswith("event: response.completed")][0]
        data = json.loads(done.split("data: ", 1)[1])
        self.assertEqual(data["timings"], data["response"]["timings"])
        self.assertAlmostEqual(data["timings"]["prompt_ms"], 42.0)
        last = len(events) - 2  # the event before response.completed
        self.assertAlmostEqual(data["timings"]["predicted_ms"], 10.0 * (last - 2))
        self.assertEqual(data["timings"]["cache_n"], 16)
        for a, b in zip(events, out):
            if not a.startswith("event: response.completed"):
                self.assertEqual(a, b)
        self.assertEqual(without_timings(done), [e for e in events if e.startswith("event: response.completed")][0])

    def test_messages_stream_engine(self):
        mod = self.mod
        mod._STATS.update(active=True, ids=True)
        mod._record_finished([finished_stats("chatcmpl-ms", 0.02, 0.3)], 1.0)
        events = shapes.message_stream(rid="chatcmpl-ms", deltas=3)
        client, _ = self.drive_stream(events, [0.01] * len(events), path="/v1/messages")
        out = [m["body"].decode() for m in client.messages[1:-1]]
        delta = [o for o in out if o.startswith("event: message_delta")][0]
        t = json.loads(delta.split("data: ", 1)[1])["timings"]
        self.assertEqual((t["prompt_ms"], t["predicted_ms"]), (20.0, 300.0))

    def test_messages_stream_clock(self):
        events = shapes.message_stream(rid="chatcmpl-mc", deltas=3)
        client, _ = self.drive_stream(events, [0.03] + [0.01] * (len(events) - 1), path="/v1/messages")
        delta = [m["body"].decode() for m in client.messages[1:-1] if m["body"].startswith(b"event: message_delta")][0]
        t = json.loads(delta.split("data: ", 1)[1])["timings"]
        self.assertAlmostEqual(t["prompt_ms"], 30.0)

    def test_keep_alive_comments_are_no_output(self):
        # vLLM's --sse-keep-alive-interval sends ": keep-alive" comments
        # while the engine works: they neither start the clock's first
        # output nor end it.
        events = shapes.responses_stream(rid="resp_k", deltas=2)
        events = events[:2] + [": keep-alive\n\n"] + events[2:-1] + [": keep-alive\n\n"] + events[-1:]
        steps = [0.001, 0.001, 0.02, 0.02] + [0.01] * (len(events) - 6) + [0.5, 0.01]
        client, _ = self.drive_stream(events, steps, path="/v1/responses")
        done = [m["body"].decode() for m in client.messages[1:-1] if m["body"].startswith(b"event: response.completed")][0]
        t = json.loads(done.split("data: ", 1)[1])["timings"]
        self.assertAlmostEqual(t["prompt_ms"], 42.0)
        self.assertAlmostEqual(t["predicted_ms"], 10.0 * (len(events) - 6))

    def test_invocations_stream(self):
        events = shapes.responses_stream(rid="resp_i", deltas=2)
        client, _ = self.drive_stream(events, [0.01] * len(events), path="/invocations")
        self.assertTrue(any(b'"timings"' in m.get("body", b"") for m in client.messages))

    def test_text_that_looks_like_a_final_event(self):
        events = shapes.message_stream(rid="chatcmpl-tx", deltas=2, text="event: message_delta\n\ndata: {}")
        client, _ = self.drive_stream(events, [0.01] * len(events), path="/v1/messages")
        out = [m["body"].decode() for m in client.messages[1:-1]]
        self.assertEqual(sum('"timings"' in o for o in out), 1)
        self.assertTrue([o for o in out if '"timings"' in o][0].startswith("event: message_delta"))

    def test_two_events_in_one_body(self):
        events = shapes.chat_stream(rid="chatcmpl-2", tokens=2)
        joined = events[:-2] + [events[-2] + events[-1]]
        client, _ = self.drive_stream(joined, [0.01] * len(joined))
        last = client.messages[-2]["body"].decode()
        self.assertTrue(last.endswith("data: [DONE]\n\n"))
        self.assertIn('"timings"', last)

    def test_fuzzed_events_never_raise(self):
        rnd = random.Random(7)
        for _ in range(200):
            events = shapes.chat_stream(rid="chatcmpl-f", tokens=2)
            n = rnd.randrange(len(events))
            e = bytearray(events[n].encode())
            for _ in range(rnd.randint(1, 5)):
                e[rnd.randrange(len(e))] = rnd.randrange(256)
            events[n] = bytes(e).decode("utf-8", "replace")
            client, msgs = self.drive_stream(events, [0.01] * len(events))
            self.assertEqual(len(client.messages), len(msgs))


class StatLoggerPlugin(unittest.TestCase):
    def fake_vllm(self, with_ids=True, extra_abstract=False):
        import abc
        import dataclasses

        class StatLoggerBase(abc.ABC):
            @abc.abstractmethod
            def __init__(self, vllm_config, engine_index=0): ...

            @abc.abstractmethod
            def record(self, scheduler_stats, iteration_stats, mm_cache_stats=None, engine_idx=0): ...

            @abc.abstractmethod
            def log_engine_initialized(self): ...

            if extra_abstract:
                @abc.abstractmethod
                def record_something_new(self, x): ...

        fields = [("finish_reason", str)] + ([("request_id", str)] if with_ids else [])
        FinishedRequestStats = dataclasses.make_dataclass("FinishedRequestStats", fields)
        mods = {
            "vllm": types.ModuleType("vllm"),
            "vllm.v1": types.ModuleType("vllm.v1"),
            "vllm.v1.metrics": types.ModuleType("vllm.v1.metrics"),
            "vllm.v1.metrics.loggers": types.ModuleType("vllm.v1.metrics.loggers"),
            "vllm.v1.metrics.stats": types.ModuleType("vllm.v1.metrics.stats"),
        }
        mods["vllm.v1.metrics.loggers"].StatLoggerBase = StatLoggerBase
        mods["vllm.v1.metrics.stats"].FinishedRequestStats = FinishedRequestStats
        return mods, StatLoggerBase

    def test_plugin_records(self):
        for extra in (False, True):
            mods, base = self.fake_vllm(extra_abstract=extra)
            saved = {k: sys.modules.get(k) for k in mods}
            sys.modules.update(mods)
            try:
                mod = load()
                cls = mod.StatLogger
                self.assertTrue(issubclass(cls, base))
                logger = cls(object(), 0)
                self.assertTrue(mod._STATS["active"] and mod._STATS["ids"])
                it = SimpleNamespace(finished_requests=[finished_stats("chatcmpl-1", 0.1, 0.2)])
                logger.record(None, it, mm_cache_stats=None, engine_idx=0)
                logger.record(scheduler_stats=None, iteration_stats=SimpleNamespace(
                    finished_requests=[finished_stats("chatcmpl-2", 0.1, 0.2)]))
                logger.record(None, None)
                logger.record(None, object())
                logger.record(None, None, None, 0, "a later argument", later_keyword=1)
                logger.log_engine_initialized()
                self.assertEqual(sorted(mod._RECORDS), ["chatcmpl-1", "chatcmpl-2"])
            finally:
                for k, v in saved.items():
                    if v is None:
                        sys.modules.pop(k, None)
                    else:
                        sys.modules[k] = v

    def test_no_ids(self):
        mods, _ = self.fake_vllm(with_ids=False)
        saved = {k: sys.modules.get(k) for k in mods}
        sys.modules.update(mods)
        try:
            mod = load()
            mod.StatLogger(None, 0)
            self.assertFalse(mod._STATS["ids"])
        finally:
            for k, v in saved.items():
                if v is None:
                    sys.modules.pop(k, None)
                else:
                    sys.modules[k] = v

    def test_without_vllm_the_attribute_fails(self):
        mod = load()
        saved = sys.modules.pop("vllm", None)
        try:
            with self.assertRaises(ImportError):
                mod.StatLogger
        finally:
            if saved is not None:
                sys.modules["vllm"] = saved

    def test_records_are_bounded(self):
        mod = load()
        mod._MAX_RECORDS = 10
        for i in range(50):
            mod._record_finished([finished_stats("r%d" % i, 0.1, 0.1)], float(i))
        self.assertEqual(len(mod._RECORDS), 10)
        mod._record_finished([finished_stats("late", 0.1, 0.1)], 10000.0)
        self.assertEqual(list(mod._RECORDS), ["late"])


class Log(unittest.TestCase):
    def test_every_source_logged_beside_the_patch(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "log")
            mod = load({"VLLM_TIMINGS_FALLBACK_LOG": path})
            mod._STATS.update(active=True, ids=True)
            mod._record_finished([finished_stats("chatcmpl-L", 0.01, 0.2)], 1.0)
            body = shapes.chat_full(rid="chatcmpl-L", timings=True, metrics=True)
            client = drive(mod, App(full(body.encode())))
            self.assertEqual(client.body(), body.encode())
            with open(path) as f:
                line = json.loads(f.read())
            self.assertEqual(line["id"], "chatcmpl-L")
            self.assertEqual(line["patch"], json.loads(body)["timings"])
            self.assertEqual(sorted(line["sources"]), ["engine", "metrics"])
            self.assertFalse(line["stream"])


if __name__ == "__main__":
    unittest.main()
