"""Unit tests of the /v1/responses and /v1/messages part of the module
vllm-timings installs as vllm/_llamacpp_timings.py (its last section).

Run with the other unit tests by patcher's Go tests (TestPythonTimingsModule):
    python3 -m unittest discover -s patcher/testdata/python
with LLAMACPP_TIMINGS pointing at patcher/patchsets/llamacpp_timings.py. The
Messages tests build pydantic models shaped like vLLM's Anthropic ones
(plain BaseModel: extra fields ignored) and skip without pydantic.
"""

import gc
import importlib.util
import json
import os
import unittest
from types import SimpleNamespace

_spec = importlib.util.spec_from_file_location("_llamacpp_timings_endpoints", os.environ["LLAMACPP_TIMINGS"])
lt = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(lt)

try:
    import pydantic
except ImportError:  # the Go tests require it under CI=true
    pydantic = None


def stats(scheduled=100.0, first=100.5, last=102.5):
    return SimpleNamespace(scheduled_ts=scheduled, first_token_ts=first, last_token_ts=last)


def output(metrics, cached=None, spec=None):
    """A RequestOutput look-alike: what the engine yields for one request."""
    choice = SimpleNamespace(index=0, token_ids=[1], finish_reason=None)
    if spec is not None:
        choice.spec_decode_metrics = spec
    return SimpleNamespace(metrics=metrics, num_cached_tokens=cached, outputs=[choice])


class Context:
    """Stands for a ConversationContext: any object that can be weakly referenced."""


def usage(input_tokens=100, cached=64, output_tokens=40):
    """ResponseUsage as vLLM builds it from v0.10.1 on."""
    return SimpleNamespace(
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        total_tokens=input_tokens + output_tokens,
        input_tokens_details=SimpleNamespace(cached_tokens=cached),
        output_tokens_details=SimpleNamespace(reasoning_tokens=0),
    )


def response(u=None):
    return SimpleNamespace(usage=usage() if u is None else u, status="completed")


def observed(*outputs):
    ctx = Context()
    for o in outputs:
        lt.observe_turn(ctx, o)
    return ctx


class Responses(unittest.TestCase):
    def test_one_request_counts_from_usage(self):
        s = stats()
        ctx = observed(output(s, 64), output(s, 64), output(s, 64))  # a stream: one stats object
        r = response()
        lt.attach_response(r, ctx)
        self.assertEqual(r.timings, lt.build_timings(s, 100, 64, 40))
        self.assertEqual(r.timings["prompt_n"] + r.timings["cache_n"], r.usage.input_tokens)
        self.assertEqual(r.timings["predicted_n"], r.usage.output_tokens)
        self.assertEqual((r.timings["prompt_n"], r.timings["cache_n"]), (36, 64))
        self.assertAlmostEqual(r.timings["prompt_ms"], 500.0)
        self.assertAlmostEqual(r.timings["predicted_ms"], 2000.0)

    def test_usage_cached_tokens_win_over_the_engine_count(self):
        # usage says 64 cached; the output's own count is not used then.
        r = response()
        lt.attach_response(r, observed(output(stats(), 10)))
        self.assertEqual(r.timings["cache_n"], 64)

    def test_chat_style_usage_of_v0_10_0(self):
        # v0.10.0: UsageInfo, cached tokens only with --enable-prompt-tokens-details.
        u = SimpleNamespace(prompt_tokens=20, completion_tokens=5, total_tokens=25, prompt_tokens_details=None)
        r = SimpleNamespace(usage=u)
        lt.attach_response_output(r, output(stats(), 8))
        self.assertEqual((r.timings["prompt_n"], r.timings["cache_n"], r.timings["predicted_n"]), (12, 8, 5))
        u.prompt_tokens_details = SimpleNamespace(cached_tokens=4)
        r = SimpleNamespace(usage=u)
        lt.attach_response_output(r, output(stats(), 8))
        self.assertEqual((r.timings["prompt_n"], r.timings["cache_n"]), (16, 4))

    def test_usage_as_dict(self):
        r = {"usage": {"input_tokens": 10, "output_tokens": 3, "input_tokens_details": {"cached_tokens": 2}}}
        ev = SimpleNamespace(type="response.completed", response=r)
        lt.attach_response_event(ev, observed(output(stats(), 2)))
        self.assertEqual((ev.timings["prompt_n"], ev.timings["cache_n"], ev.timings["predicted_n"]), (8, 2, 3))
        self.assertEqual(r["timings"], ev.timings)

    def test_several_engine_requests_get_no_timings(self):
        # A built-in tool loop: two turns, each its own engine request.
        ctx = observed(output(stats(100.0, 100.5, 101.0), 0), output(stats(103.0, 103.2, 104.0), 50))
        r = response()
        lt.attach_response(r, ctx)
        self.assertFalse(hasattr(r, "timings"))
        ev = SimpleNamespace(type="response.completed", response=response())
        lt.attach_response_event(ev, ctx)
        self.assertFalse(hasattr(ev, "timings"))
        self.assertFalse(hasattr(ev.response, "timings"))

    def test_no_stats_no_timings(self):
        r = response()
        lt.attach_response(r, observed(output(None, 64), output(None, 64)))
        self.assertFalse(hasattr(r, "timings"))
        r = response()
        lt.attach_response_output(r, output(None, 64))
        self.assertFalse(hasattr(r, "timings"))

    def test_context_never_observed(self):
        r = response()
        lt.attach_response(r, Context())
        self.assertFalse(hasattr(r, "timings"))

    def test_no_token_generated(self):
        r = response(usage(output_tokens=0))
        lt.attach_response(r, observed(output(stats(), 64)))
        self.assertFalse(hasattr(r, "timings"))

    def test_vllm_metrics_lose_the_rate_fields(self):
        # 0.31 on, --enable-per-request-metrics: the response's own metrics
        # lose what llama-swap would recompute speeds from, as chat's do.
        r = response()
        r.metrics = SimpleNamespace(time_to_first_token_ms=500.0, mean_itl_ms=50.0, generation_time_ms=2000.0)
        lt.attach_response(r, observed(output(stats(), 64)))
        self.assertIn("timings", vars(r))
        self.assertEqual((r.metrics.time_to_first_token_ms, r.metrics.mean_itl_ms), (None, None))
        self.assertEqual(r.metrics.generation_time_ms, 2000.0)
        # Without timings they stay.
        r = response()
        r.metrics = SimpleNamespace(time_to_first_token_ms=500.0, mean_itl_ms=50.0)
        lt.attach_response(r, observed(output(None, 64)))
        self.assertEqual(r.metrics.time_to_first_token_ms, 500.0)

    def test_only_terminal_events(self):
        ctx = observed(output(stats(), 64))
        for kind in ("response.created", "response.in_progress", "response.output_text.delta",
                     "response.output_item.done", "error"):
            ev = SimpleNamespace(type=kind, response=response())
            lt.attach_response_event(ev, ctx)
            self.assertFalse(hasattr(ev, "timings"), kind)
        for kind in ("response.completed", "response.incomplete"):
            inner = response()
            inner.metrics = SimpleNamespace(time_to_first_token_ms=500.0, mean_itl_ms=50.0)
            ev = SimpleNamespace(type=kind, response=inner)
            lt.attach_response_event(ev, ctx)
            want = lt.build_timings(ctx_stats(ctx), 100, 64, 40)
            # At the top level for llama-swap, and inside the response for
            # the openai SDK's stream helper and whoever keeps the response.
            self.assertEqual(ev.timings, want, kind)
            self.assertEqual(inner.timings, want, kind)
            self.assertIsNot(inner.timings, ev.timings)
            # vLLM's metrics inside the response stay: llama-swap does not read them there.
            self.assertEqual((inner.metrics.time_to_first_token_ms, inner.metrics.mean_itl_ms), (500.0, 50.0), kind)

    def test_drafts(self):
        spec = SimpleNamespace(num_draft_tokens=8, histogram=[1, 2, 1])
        r = response()
        lt.attach_response(r, observed(output(stats(), 64), output(stats_shared := stats(), 64, spec)))
        # Two stats objects: two engine requests, so nothing at all.
        self.assertFalse(hasattr(r, "timings"))
        s = stats_shared
        r = response()
        lt.attach_response(r, observed(output(s, 64), output(s, 64, spec)))
        self.assertEqual((r.timings["draft_n"], r.timings["draft_n_accepted"]), (8, 4))
        r = response()
        lt.attach_response(r, observed(output(s, 64)))
        self.assertNotIn("draft_n", r.timings)

    def test_never_raises(self):
        class Refuses:
            usage = usage()

            def __setattr__(self, name, value):
                raise ValueError("no extra fields")

        class Explodes:
            @property
            def metrics(self):
                raise RuntimeError("boom")

        ctx = observed(output(stats(), 64))
        lt.attach_response(Refuses(), ctx)
        lt.attach_response(None, ctx)
        lt.attach_response(response(), None)
        lt.attach_response(object(), ctx)
        lt.attach_response_output(response(), Explodes())
        lt.attach_response_output(response(), None)
        lt.attach_response_event(None, ctx)
        lt.attach_response_event(SimpleNamespace(type="response.completed"), ctx)
        lt.observe_turn(SimpleNamespace(), output(stats()))  # cannot be weakly referenced
        lt.observe_turn(None, output(stats()))
        lt.observe_turn(Context(), Explodes())
        lt.observe_turn(Context(), None)
        for odd in ({"input_tokens": "10"}, {"input_tokens": -1, "output_tokens": 3}, {"input_tokens": 1e400}):
            r = SimpleNamespace(usage=odd)
            lt.attach_response(r, ctx)
            if hasattr(r, "timings"):
                json.dumps(r.timings, allow_nan=False)

    def test_context_entries_go_with_the_context(self):
        ctx = observed(output(stats(), 64))
        before = len(lt._TURNS)
        del ctx
        gc.collect()
        self.assertEqual(len(lt._TURNS), before - 1)


def ctx_stats(ctx):
    (s,) = lt._TURNS[ctx].stats.values()
    return s


TIMINGS = lt.build_timings(stats(), 10, 4, 3)


@unittest.skipIf(pydantic is None, "pydantic is not installed")
class Messages(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        from typing import Literal, Optional

        from pydantic import BaseModel, ConfigDict

        # Shaped like vllm/entrypoints/anthropic/protocol.py: plain BaseModels.
        class AnthropicUsage(BaseModel):
            input_tokens: int
            output_tokens: int
            cache_read_input_tokens: Optional[int] = None

        class AnthropicMessagesResponse(BaseModel):
            id: str
            type: Literal["message"] = "message"
            content: list = []
            stop_reason: Optional[str] = None
            usage: Optional[AnthropicUsage] = None

        class AnthropicStreamEvent(BaseModel):
            type: Literal["message_start", "message_delta", "message_stop"]
            usage: Optional[AnthropicUsage] = None
            index: Optional[int] = None

        class Allows(BaseModel):
            model_config = ConfigDict(extra="allow")
            type: str = "message_delta"

        cls.Usage, cls.Message, cls.Event, cls.Allows = AnthropicUsage, AnthropicMessagesResponse, AnthropicStreamEvent, Allows

    def message(self):
        return self.Message(id="m1", content=[{"type": "text", "text": "hi"}], stop_reason="end_turn",
                            usage=self.Usage(input_tokens=6, output_tokens=3, cache_read_input_tokens=4))

    def delta(self):
        return self.Event(type="message_delta", usage=self.Usage(input_tokens=6, output_tokens=3))

    def dumps(self, obj):
        return [obj.model_dump(exclude_none=True), json.loads(obj.model_dump_json(exclude_unset=True)),
                json.loads(obj.model_dump_json(exclude_unset=True, exclude_none=True)), json.loads(obj.model_dump_json())]

    def check_copied(self, plain, got):
        self.assertIsInstance(got, type(plain))
        for before, after in zip(self.dumps(plain), self.dumps(got)):
            self.assertEqual(after.pop("timings"), TIMINGS)
            self.assertEqual(after, before)

    def test_full_message(self):
        plain = self.message()
        self.check_copied(plain, lt.attach_message(self.message(), SimpleNamespace(timings=dict(TIMINGS))))

    def test_message_delta(self):
        plain = self.delta()
        self.check_copied(plain, lt.attach_message_delta(self.delta(), SimpleNamespace(timings=dict(TIMINGS))))

    def test_timings_parsed_from_chat_json(self):
        # Before 0.33 the converter re-parses the chat stream's JSON: the
        # timings arrive as an extra field of a model that allows them.
        chunk = self.Allows.model_validate_json(json.dumps({"type": "x", "timings": TIMINGS}))
        got = lt.attach_message_delta(self.delta(), chunk)
        self.assertEqual(got.model_dump()["timings"], TIMINGS)

    def test_without_chat_timings_the_object_is_returned(self):
        for chat in (SimpleNamespace(), SimpleNamespace(timings=None), SimpleNamespace(timings={"prompt_n": 1}),
                     SimpleNamespace(timings="x"), None):
            m, d = self.message(), self.delta()
            self.assertIs(lt.attach_message(m, chat), m)
            self.assertIs(lt.attach_message_delta(d, chat), d)

    def test_only_message_delta_events(self):
        for kind in ("message_start", "message_stop"):
            ev = self.Event(type=kind)
            self.assertIs(lt.attach_message_delta(ev, SimpleNamespace(timings=dict(TIMINGS))), ev)

    def test_model_that_allows_extra_fields_is_kept(self):
        ev = self.Allows()
        got = lt.attach_message_delta(ev, SimpleNamespace(timings=dict(TIMINGS)))
        self.assertIs(got, ev)
        self.assertEqual(got.model_dump()["timings"], TIMINGS)

    def test_one_subclass_per_class(self):
        a = lt.attach_message(self.message(), SimpleNamespace(timings=dict(TIMINGS)))
        b = lt.attach_message(self.message(), SimpleNamespace(timings=dict(TIMINGS)))
        self.assertIs(type(a), type(b))
        self.assertEqual(type(a).__name__, "AnthropicMessagesResponse")

    def test_later_assignments_still_serialize(self):
        got = lt.attach_message(self.message(), SimpleNamespace(timings=dict(TIMINGS)))
        got.stop_reason = "max_tokens"
        self.assertEqual(got.model_dump(exclude_none=True)["stop_reason"], "max_tokens")

    def test_never_raises(self):
        chat = SimpleNamespace(timings=dict(TIMINGS))
        for odd in (None, object(), SimpleNamespace(type="message_delta"), "message_delta"):
            self.assertIs(lt.attach_message(odd, chat), odd)
            self.assertIs(lt.attach_message_delta(odd, chat), odd)


class MessagesWithoutPydantic(unittest.TestCase):
    def test_plain_objects_are_returned_as_they_are(self):
        chat = SimpleNamespace(timings=dict(TIMINGS))
        m = SimpleNamespace(type="message_delta")
        self.assertIs(lt.attach_message_delta(m, chat), m)
        self.assertFalse(hasattr(m, "timings"))


if __name__ == "__main__":
    unittest.main()
