"""Unit tests of the module vllm-timings installs as vllm/_llamacpp_timings.py.

Run by patcher's Go tests (TestPythonTimingsModule) as
    python3 -m unittest discover -s patcher/testdata/python
with LLAMACPP_TIMINGS pointing at patcher/patchsets/llamacpp_timings.py.
"""

import importlib.util
import json
import math
import os
import random
import unittest
from types import SimpleNamespace

try:
    import pydantic
except ImportError:  # the pydantic tests skip
    pydantic = None

_spec = importlib.util.spec_from_file_location(
    "_llamacpp_timings", os.environ["LLAMACPP_TIMINGS"]
)
lt = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(lt)

ORDER = [
    "prompt_n",
    "prompt_ms",
    "prompt_per_token_ms",
    "prompt_per_second",
    "predicted_n",
    "predicted_ms",
    "predicted_per_token_ms",
    "predicted_per_second",
    "cache_n",
]


def stats(scheduled=100.0, first=100.5, last=102.5):
    """A RequestStateStats look-alike with only the fields the module reads."""
    return SimpleNamespace(scheduled_ts=scheduled, first_token_ts=first, last_token_ts=last)


def finite_and_serializable(testcase, t):
    json.dumps(t, allow_nan=False)
    for k, v in t.items():
        testcase.assertTrue(math.isfinite(v), k)
        testcase.assertGreaterEqual(v, 0, k)


class BuildTimings(unittest.TestCase):
    def test_single_request(self):
        t = lt.build_timings(stats(), 100, 0, 40)
        self.assertEqual(list(t), ORDER)
        self.assertEqual(t["prompt_n"], 100)
        self.assertAlmostEqual(t["prompt_ms"], 500.0)
        self.assertAlmostEqual(t["prompt_per_token_ms"], 5.0)
        self.assertAlmostEqual(t["prompt_per_second"], 200.0)
        self.assertEqual(t["predicted_n"], 40)
        self.assertAlmostEqual(t["predicted_ms"], 2000.0)
        self.assertAlmostEqual(t["predicted_per_token_ms"], 50.0)
        self.assertAlmostEqual(t["predicted_per_second"], 20.0)
        self.assertEqual(t["cache_n"], 0)
        self.assertIsInstance(t["prompt_n"], int)
        self.assertIsInstance(t["prompt_ms"], float)
        finite_and_serializable(self, t)

    def test_cache_split(self):
        t = lt.build_timings(stats(), 100, 64, 10)
        self.assertEqual(t["prompt_n"], 36)
        self.assertEqual(t["cache_n"], 64)
        self.assertEqual(t["prompt_n"] + t["cache_n"], 100)
        self.assertAlmostEqual(t["prompt_per_second"], 36 * 1000 / 500.0)

    def test_cache_unknown_is_zero(self):
        t = lt.build_timings(stats(), 100, None, 10)
        self.assertEqual(t["cache_n"], 0)
        self.assertEqual(t["prompt_n"], 100)

    def test_cache_larger_than_prompt_is_clamped(self):
        t = lt.build_timings(stats(), 10, 50, 3)
        self.assertEqual((t["prompt_n"], t["cache_n"]), (0, 10))
        self.assertEqual(t["prompt_per_second"], 0.0)
        self.assertEqual(t["prompt_per_token_ms"], 0.0)

    def test_multi_request_overlapping_prompts(self):
        # Both prompts evaluated together: prompt time is the union of the
        # [scheduled, first token] intervals, the rest of the span is
        # generation, and the two add up to the whole span.
        a = stats(scheduled=10.0, first=10.2, last=11.0)
        b = stats(scheduled=10.1, first=10.4, last=12.0)
        t = lt.build_timings([a, b], 30, 5, 20)
        self.assertAlmostEqual(t["prompt_ms"], (10.4 - 10.0) * 1000)
        self.assertAlmostEqual(t["predicted_ms"], (12.0 - 10.0) * 1000 - t["prompt_ms"])
        self.assertAlmostEqual(t["prompt_ms"] + t["predicted_ms"], 2000.0)
        self.assertEqual(t["prompt_n"], 25)
        self.assertEqual(t["predicted_n"], 20)

    def test_multi_request_one_after_another(self):
        # --max-num-seqs 1: the second child starts when the first is done.
        # Only the two prompt intervals are prompt time; the first child's
        # generation and the gap before the second are not.
        a = stats(scheduled=10.0, first=10.1, last=10.5)
        b = stats(scheduled=10.6, first=10.8, last=11.0)
        t = lt.build_timings([b, a], 20, 0, 10)
        self.assertAlmostEqual(t["prompt_ms"], 100.0 + 200.0)
        self.assertAlmostEqual(t["predicted_ms"], 1000.0 - 300.0)

    def test_multi_request_nested_and_touching_intervals(self):
        a = stats(scheduled=10.0, first=10.5, last=10.6)
        b = stats(scheduled=10.1, first=10.2, last=10.7)  # inside a's prompt
        c = stats(scheduled=10.5, first=10.9, last=11.0)  # starts as a's ends
        t = lt.build_timings([a, b, c], 30, 0, 9)
        self.assertAlmostEqual(t["prompt_ms"], 900.0)
        self.assertAlmostEqual(t["predicted_ms"], 100.0)

    def test_one_request_is_unchanged_by_the_rule(self):
        t = lt.build_timings([stats(1.0, 1.25, 2.0)], 10, 0, 4)
        self.assertEqual((t["prompt_ms"], t["predicted_ms"]), (250.0, 750.0))

    def test_missing_stamps_of_one_request(self):
        # No scheduled time: no prompt time, generation as before.
        t = lt.build_timings(stats(scheduled=0.0, first=1.5, last=2.0), 10, 0, 4)
        self.assertEqual((t["prompt_ms"], t["predicted_ms"]), (0.0, 500.0))
        # No last token time: no generation time.
        t = lt.build_timings(stats(scheduled=1.0, first=1.5, last=0.0), 10, 0, 4)
        self.assertEqual((t["prompt_ms"], t["predicted_ms"]), (500.0, 0.0))
        # No first token: the request tells nothing; the others still count.
        t = lt.build_timings([stats(1.0, 0.0, 3.0), stats(2.0, 2.5, 2.75)], 10, 0, 4)
        self.assertEqual((t["prompt_ms"], t["predicted_ms"]), (500.0, 250.0))

    def test_multi_request_ignores_missing_entries(self):
        t = lt.build_timings([None, stats()], 10, 0, 2)
        self.assertAlmostEqual(t["prompt_ms"], 500.0)

    def test_missing_stats(self):
        self.assertIsNone(lt.build_timings(None, 10, 0, 5))
        self.assertIsNone(lt.build_timings([], 10, 0, 5))
        self.assertIsNone(lt.build_timings([None, None], 10, 0, 5))

    def test_zero_tokens_generated(self):
        self.assertIsNone(lt.build_timings(stats(), 10, 0, 0))
        self.assertIsNone(lt.build_timings(stats(), 10, 0, None))

    def test_one_token_generated(self):
        t = lt.build_timings(stats(first=100.5, last=100.5), 10, 0, 1)
        self.assertEqual(t["predicted_n"], 1)
        self.assertEqual(t["predicted_ms"], 0.0)
        self.assertEqual(t["predicted_per_second"], 0.0)
        self.assertEqual(t["predicted_per_token_ms"], 0.0)
        finite_and_serializable(self, t)

    def test_odd_values_never_raise_or_nan(self):
        odd = [
            SimpleNamespace(),
            SimpleNamespace(scheduled_ts=None, first_token_ts=None, last_token_ts=None),
            stats(scheduled=0.0, first=0.0, last=0.0),
            stats(scheduled=float("nan"), first=float("inf"), last=-1.0),
            stats(scheduled=5.0, first=4.0, last=3.0),  # clock went backwards
            stats(scheduled="x", first=True, last=[1]),
            object(),
        ]
        for s in odd:
            for prompt, cached, predicted in [(10, 0, 5), (None, None, 5), (-3, -1, 5), (10, 2, 1)]:
                t = lt.build_timings(s, prompt, cached, predicted)
                self.assertIsNotNone(t)
                finite_and_serializable(self, t)

    def test_bad_counts(self):
        self.assertIsNone(lt.build_timings(stats(), 10, 0, -2))
        self.assertIsNone(lt.build_timings(stats(), 10, 0, True))
        self.assertIsNone(lt.build_timings(stats(), 10, 0, 2.5))

    def test_stats_object_that_raises(self):
        class Boom:
            def __getattr__(self, name):
                raise RuntimeError(name)

        self.assertIsNone(lt.build_timings(Boom(), 10, 0, 5))


class Attach(unittest.TestCase):
    def response(self, prompt=12, completion=4):
        return SimpleNamespace(usage=SimpleNamespace(prompt_tokens=prompt, completion_tokens=completion))

    def test_counts_come_from_usage(self):
        r = self.response()
        lt.attach(r, stats(), 2)
        self.assertEqual(r.timings["prompt_n"] + r.timings["cache_n"], r.usage.prompt_tokens)
        self.assertEqual(r.timings["predicted_n"], r.usage.completion_tokens)

    def test_no_stats_leaves_response_untouched(self):
        r = self.response()
        lt.attach(r, None, 0)
        self.assertFalse(hasattr(r, "timings"))

    def test_response_that_refuses_the_attribute(self):
        class Frozen:
            usage = SimpleNamespace(prompt_tokens=1, completion_tokens=1)

            def __setattr__(self, name, value):
                raise ValueError("frozen")

        lt.attach(Frozen(), stats(), 0)  # must not raise

    def test_batch_sums_cached_tokens(self):
        outs = [
            SimpleNamespace(metrics=stats(10.0, 10.1, 10.5), num_cached_tokens=4),
            SimpleNamespace(metrics=stats(10.0, 10.3, 11.0), num_cached_tokens=None),
            SimpleNamespace(metrics=stats(10.0, 10.2, 10.4), num_cached_tokens=6),
        ]
        r = self.response(prompt=30, completion=9)
        lt.attach_batch(r, outs)
        self.assertEqual(r.timings["cache_n"], 10)
        self.assertEqual(r.timings["prompt_n"], 20)
        # Union of the prompt intervals [10.0, 10.3]; the span ends at 11.0.
        self.assertAlmostEqual(r.timings["prompt_ms"], 300.0)
        self.assertAlmostEqual(r.timings["predicted_ms"], 700.0)


def vllm_metrics(**fields):
    """vLLM's per-request metrics object (PerRequestTimingMetrics, v0.25 on;
    PerRequestMetrics later), with the values it computes for stats()."""
    base = dict(time_to_first_token_ms=500.0, generation_time_ms=2000.0, queue_time_ms=1.0,
                mean_itl_ms=2000.0 / 3, tokens_per_second=4 / 2.5)
    base.update(fields)
    return SimpleNamespace(**base)


class VLLMMetrics(unittest.TestCase):
    """A response that carries vLLM's own metrics keeps them, except the two
    fields llama-swap would recompute the speeds from."""

    def response(self, metrics):
        return SimpleNamespace(usage=SimpleNamespace(prompt_tokens=12, completion_tokens=4), metrics=metrics)

    def test_rate_sources_cleared_when_timings_are_set(self):
        m = vllm_metrics()
        r = self.response(m)
        lt.attach(r, stats(), 8)
        self.assertEqual(r.timings["prompt_n"], 4)
        self.assertIsNone(m.time_to_first_token_ms)
        self.assertIsNone(m.mean_itl_ms)
        self.assertEqual((m.generation_time_ms, m.queue_time_ms, m.tokens_per_second), (2000.0, 1.0, 1.6))

    def test_nothing_is_lost(self):
        # What the cleared fields held can be read from the same response.
        m = vllm_metrics()
        r = self.response(m)
        lt.attach(r, stats(), 8)
        self.assertAlmostEqual(r.timings["prompt_ms"], vllm_metrics().time_to_first_token_ms)
        self.assertAlmostEqual(m.generation_time_ms / (r.usage.completion_tokens - 1), vllm_metrics().mean_itl_ms)

    def test_other_entry_points_clear_them_too(self):
        def output():
            return SimpleNamespace(request_id="r", metrics=stats(), num_cached_tokens=8,
                                   outputs=[SimpleNamespace(index=0, finish_reason="stop")])

        def stream(r):
            tr = lt.StreamTracker()
            tr.observe(output())
            tr.attach(r)

        for name, call in [
            ("attach_output", lambda r: lt.attach_output(r, output())),
            ("attach_batch", lambda r: lt.attach_batch(r, [output()])),
            ("StreamTracker.attach", stream),
        ]:
            r = self.response(vllm_metrics())
            call(r)
            self.assertEqual(r.timings["cache_n"], 8, name)
            self.assertIsNone(r.metrics.time_to_first_token_ms, name)
            self.assertIsNone(r.metrics.mean_itl_ms, name)

    def test_no_timings_no_change(self):
        m = vllm_metrics()
        r = self.response(m)
        lt.attach(r, None, 8)
        self.assertFalse(hasattr(r, "timings"))
        self.assertEqual(m.time_to_first_token_ms, 500.0)
        self.assertAlmostEqual(m.mean_itl_ms, 2000.0 / 3)

    def test_metrics_without_the_fields(self):
        # Later vLLMs may send only speculative_decoding in metrics.
        m = SimpleNamespace(speculative_decoding=SimpleNamespace(num_draft_tokens=4))
        r = self.response(m)
        lt.attach(r, stats(), 0)
        self.assertEqual(vars(m), {"speculative_decoding": SimpleNamespace(num_draft_tokens=4)})
        r = self.response(None)
        lt.attach(r, stats(), 0)
        self.assertIsNone(r.metrics)

    def test_metrics_that_refuse_keep_the_timings(self):
        class Frozen:
            time_to_first_token_ms = 1.0

            def __setattr__(self, name, value):
                raise ValueError("frozen")

        r = self.response(Frozen())
        lt.attach(r, stats(), 0)
        self.assertIn("timings", vars(r))


def spec(drafted, histogram):
    """A RequestSpecDecodeMetrics look-alike: draft tokens proposed and the
    verify steps per number of accepted drafts."""
    return SimpleNamespace(num_spec_tokens=len(histogram) - 1, histogram=list(histogram), num_draft_tokens=drafted)


def choice(index=0, finish_reason="stop", spec_metrics=None, with_attr=True):
    c = SimpleNamespace(index=index, finish_reason=finish_reason)
    if with_attr:  # vLLM before 0.29 has no spec_decode_metrics at all
        c.spec_decode_metrics = spec_metrics
    return c


class Drafts(unittest.TestCase):
    def response(self, prompt=12, completion=4):
        return SimpleNamespace(usage=SimpleNamespace(prompt_tokens=prompt, completion_tokens=completion))

    def test_build_with_drafts(self):
        t = lt.build_timings(stats(), 100, 0, 40, (30, 21))
        self.assertEqual(list(t), ORDER + ["draft_n", "draft_n_accepted"])
        self.assertEqual((t["draft_n"], t["draft_n_accepted"]), (30, 21))
        finite_and_serializable(self, t)

    def test_bad_drafts_drop_only_the_draft_fields(self):
        for bad in [(3, 5), (-1, 0), (2.5, 1), (True, 0), (1,), "ab", 7, (None, 1), object()]:
            t = lt.build_timings(stats(), 100, 0, 40, bad)
            self.assertEqual(list(t), ORDER, bad)

    def test_output_with_spec_metrics(self):
        # 4 verify steps with k=3: accepted 0, 2, 3, 1 drafts of 12 proposed.
        res = SimpleNamespace(metrics=stats(), num_cached_tokens=2, outputs=[choice(spec_metrics=spec(12, [1, 1, 1, 1]))])
        r = self.response()
        lt.attach_output(r, res)
        self.assertEqual((r.timings["draft_n"], r.timings["draft_n_accepted"]), (12, 6))
        self.assertEqual(r.timings["cache_n"], 2)
        self.assertEqual(r.timings["prompt_n"], 10)

    def test_versions_without_spec_metrics_have_no_draft_fields(self):
        for c in [choice(with_attr=False), choice(spec_metrics=None)]:
            r = self.response()
            lt.attach_output(r, SimpleNamespace(metrics=stats(), num_cached_tokens=0, outputs=[c]))
            self.assertEqual(list(r.timings), ORDER)

    def test_n_choices_sum_or_nothing(self):
        both = [choice(0, spec_metrics=spec(6, [0, 2, 1])), choice(1, spec_metrics=spec(4, [1, 1, 0]))]
        r = self.response()
        lt.attach_output(r, SimpleNamespace(metrics=stats(), num_cached_tokens=0, outputs=both))
        self.assertEqual((r.timings["draft_n"], r.timings["draft_n_accepted"]), (10, 5))
        # One choice without counts: a partial sum would under-report.
        one = [choice(0, spec_metrics=spec(6, [0, 2, 1])), choice(1)]
        r = self.response()
        lt.attach_output(r, SimpleNamespace(metrics=stats(), num_cached_tokens=0, outputs=one))
        self.assertNotIn("draft_n", r.timings)

    def test_odd_spec_metrics(self):
        for m in [SimpleNamespace(), spec(3, [0, 0, 5]), spec(-1, [1]), SimpleNamespace(num_draft_tokens=3, histogram=None),
                  SimpleNamespace(num_draft_tokens=3, histogram=[1, "x"]), object()]:
            r = self.response()
            lt.attach_output(r, SimpleNamespace(metrics=stats(), num_cached_tokens=0, outputs=[choice(spec_metrics=m)]))
            self.assertEqual(list(r.timings), ORDER, m)

    def test_batch(self):
        outs = [
            SimpleNamespace(metrics=stats(), num_cached_tokens=0, outputs=[choice(spec_metrics=spec(5, [1, 2]))]),
            SimpleNamespace(metrics=stats(), num_cached_tokens=0, outputs=[choice(spec_metrics=spec(4, [0, 3]))]),
        ]
        r = self.response()
        lt.attach_batch(r, outs)
        self.assertEqual((r.timings["draft_n"], r.timings["draft_n_accepted"]), (9, 5))
        outs[1].outputs = [choice()]
        r = self.response()
        lt.attach_batch(r, outs)
        self.assertNotIn("draft_n", r.timings)

    def test_attach_output_never_raises(self):
        class Boom:
            def __getattr__(self, name):
                raise RuntimeError(name)

        r = self.response()
        lt.attach_output(r, Boom())
        lt.attach_output(r, None)
        self.assertFalse(hasattr(r, "timings"))


class LinkMetrics(unittest.TestCase):
    def test_sets_missing_metrics(self):
        s = stats()
        o = SimpleNamespace(metrics=None)
        lt.link_metrics(o, s)
        self.assertIs(o.metrics, s)

    def test_keeps_existing_metrics(self):
        mine, other = stats(), stats()
        o = SimpleNamespace(metrics=mine)
        lt.link_metrics(o, other)
        self.assertIs(o.metrics, mine)

    def test_leaves_outputs_without_the_attribute(self):
        o = SimpleNamespace(request_id="pooling")  # PoolingRequestOutput has no metrics
        lt.link_metrics(o, stats())
        self.assertFalse(hasattr(o, "metrics"))

    def test_no_stats(self):
        o = SimpleNamespace(metrics=None)
        lt.link_metrics(o, None)
        self.assertIsNone(o.metrics)

    def test_never_raises(self):
        class Frozen:
            metrics = None

            def __setattr__(self, name, value):
                raise AttributeError(name)

        lt.link_metrics(Frozen(), stats())
        lt.link_metrics(None, stats())


def out(request_id, metrics, cached, finishes, specs=None):
    outputs = [SimpleNamespace(index=i, finish_reason=f) for i, f in finishes]
    for o, m in zip(outputs, specs or ()):
        o.spec_decode_metrics = m
    return SimpleNamespace(
        request_id=request_id,
        metrics=metrics,
        num_cached_tokens=cached,
        outputs=outputs,
    )


class Tracker(unittest.TestCase):
    def test_stream_of_one_request(self):
        s = stats()
        tr = lt.StreamTracker()
        tr.observe(out("r", s, 3, [(0, None)]))
        tr.observe(out("r", s, 3, [(0, "stop")]))
        self.assertTrue(tr.finish_chunk(1))
        chunk = SimpleNamespace()
        tr.attach(chunk, 10, 5)
        self.assertEqual(chunk.timings["cache_n"], 3)
        self.assertEqual(chunk.timings["prompt_n"], 7)

    def test_n_children_share_cache_count_and_merge_spans(self):
        a, b = stats(1.0, 1.5, 2.0), stats(1.0, 1.6, 3.0)
        tr = lt.StreamTracker()
        tr.observe(out("r", a, 4, [(0, None)]))
        tr.observe(out("r", b, 8, [(1, None)]))
        tr.observe(out("r", a, 4, [(0, "stop")]))
        self.assertFalse(tr.finish_chunk(2))
        tr.observe(out("r", b, 8, [(1, "length")]))
        self.assertTrue(tr.finish_chunk(2))
        chunk = SimpleNamespace(usage=SimpleNamespace(prompt_tokens=10, completion_tokens=6))
        tr.attach(chunk)
        self.assertEqual(chunk.timings["cache_n"], 4)
        self.assertAlmostEqual(chunk.timings["prompt_ms"], 600.0)
        self.assertAlmostEqual(chunk.timings["predicted_ms"], 1400.0)

    def test_merged_final_output_marks_only_the_last_chunk(self):
        # vLLM may deliver both choices' last tokens in one RequestOutput:
        # both finish reasons are observed before either chunk is built.
        s = stats()
        tr = lt.StreamTracker()
        tr.observe(out("r", s, 0, [(0, "stop"), (1, "length")]))
        self.assertEqual([tr.finish_chunk(2), tr.finish_chunk(2)], [False, True])
        self.assertFalse(tr.finish_chunk(2), "a chunk after the last must not get timings")

    def test_multi_prompt_sums_cache_per_request(self):
        tr = lt.StreamTracker()
        tr.observe(out("r-0", stats(), 2, [(0, "stop")]))
        tr.observe(out("r-1", stats(), 5, [(0, "stop")]))
        chunk = SimpleNamespace()
        tr.attach(chunk, 20, 2)
        self.assertEqual(chunk.timings["cache_n"], 7)

    def test_without_stats_no_timings(self):
        tr = lt.StreamTracker()
        tr.observe(out("r", None, 0, [(0, "stop")]))
        chunk = SimpleNamespace()
        tr.attach(chunk, 10, 5)
        self.assertFalse(hasattr(chunk, "timings"))

    def test_stream_draft_counts_come_with_the_finish(self):
        s = stats()
        tr = lt.StreamTracker()
        tr.observe(out("r", s, 0, [(0, None)], [None]))
        tr.observe(out("r", s, 0, [(0, "stop")], [spec(8, [1, 0, 2])]))
        chunk = SimpleNamespace()
        tr.attach(chunk, 10, 5)
        self.assertEqual((chunk.timings["draft_n"], chunk.timings["draft_n_accepted"]), (8, 4))

    def test_stream_drafts_absent_unless_every_choice_has_them(self):
        a, b = stats(), stats()
        tr = lt.StreamTracker()
        tr.observe(out("r", a, 0, [(0, "stop")], [spec(8, [1, 0, 2])]))
        tr.observe(out("r", b, 0, [(1, "stop")]))  # its counts were lost
        chunk = SimpleNamespace()
        tr.attach(chunk, 10, 5)
        self.assertIn("timings", vars(chunk))
        self.assertNotIn("draft_n", chunk.timings)
        tr.observe(out("r", b, 0, [(1, "stop")], [spec(2, [0, 1, 0])]))
        chunk = SimpleNamespace()
        tr.attach(chunk, 10, 5)
        self.assertEqual((chunk.timings["draft_n"], chunk.timings["draft_n_accepted"]), (10, 5))

    def test_spec_counts_are_read_with_the_finish(self):
        # vLLM hands a sequence's spec_decode_metrics over only on its
        # finished output; observe reads them there and nowhere else.
        s = stats()
        tr = lt.StreamTracker()
        tr.observe(out("r", s, 0, [(0, None)], [spec(99, [0, 99])]))
        tr.observe(out("r", s, 0, [(0, "stop")], [spec(8, [1, 0, 2])]))
        chunk = SimpleNamespace()
        tr.attach(chunk, 10, 5)
        self.assertEqual((chunk.timings["draft_n"], chunk.timings["draft_n_accepted"]), (8, 4))

    def test_interleaved_requests_each_counted_once(self):
        # Two prompts' outputs alternate; each request's stats and cached
        # tokens are noted once, however often its stats object comes back.
        a, b = stats(1.0, 1.5, 2.0), stats(1.0, 1.25, 3.0)
        tr = lt.StreamTracker()
        for _ in range(3):
            tr.observe(out("r-0", a, 2, [(0, None)]))
            tr.observe(out("r-1", b, 5, [(0, None)]))
        tr.observe(out("r-0", a, 2, [(0, "stop")]))
        tr.observe(out("r-1", b, 5, [(0, "stop")]))
        chunk = SimpleNamespace()
        tr.attach(chunk, 20, 8)
        self.assertEqual(chunk.timings["cache_n"], 7)
        self.assertAlmostEqual(chunk.timings["prompt_ms"], 500.0)
        self.assertAlmostEqual(chunk.timings["predicted_ms"], 1500.0)

    def test_observe_odd_objects(self):
        tr = lt.StreamTracker()
        tr.observe(None)
        tr.observe(object())
        tr.observe(SimpleNamespace(outputs=None))
        chunk = SimpleNamespace()
        tr.attach(chunk, 10, 5)
        self.assertFalse(hasattr(chunk, "timings"))


class FakeTime:
    """Stands in for the module's time: monotonic() returns now."""

    def __init__(self, now=0.0):
        self.now = now

    def monotonic(self):
        return self.now


class Clock(unittest.TestCase):
    """--disable-log-stats: RequestOutput.metrics is None, and the patched
    output processor links a RequestClock (t0 at hand-over, t1 at the first
    output with tokens, t2 at the last) to the request's outputs."""

    def setUp(self):
        self.time = FakeTime(10.0)
        self._saved = lt.time, lt._CLOCK_LOG
        lt.time, lt._CLOCK_LOG = self.time, None

    def tearDown(self):
        lt.time, lt._CLOCK_LOG = self._saved

    def clock(self, t0, t1, t2, tokens=(7,)):
        """A clock as the output processor leaves it: started at t0, an
        output without tokens, then tokens at t1 and at t2."""
        self.time.now = t0
        c = lt.start_clock(None)
        self.time.now = t0 + 0.001
        c.tokens([])  # an output that carries no token stamps nothing
        self.time.now = t1
        c.tokens(list(tokens))
        self.time.now = t2
        c.tokens(list(tokens))
        return c

    def test_only_without_stats(self):
        self.assertIsNone(lt.start_clock(stats()))
        c = lt.start_clock(None)
        self.assertIsInstance(c, lt.RequestClock)
        self.assertEqual((c.scheduled_ts, c.first_token_ts, c.last_token_ts), (10.0, 0.0, 0.0))

    def test_stamps(self):
        c = self.clock(10.0, 10.25, 10.5)
        self.assertEqual((c.scheduled_ts, c.first_token_ts, c.last_token_ts), (10.0, 10.25, 10.5))

    def test_full_response_from_the_clock(self):
        o = SimpleNamespace(metrics=None, num_cached_tokens=4, outputs=[])
        lt.link_clock(o, self.clock(10.0, 10.25, 10.5))
        r = SimpleNamespace(usage=SimpleNamespace(prompt_tokens=10, completion_tokens=3))
        lt.attach_output(r, o)
        self.assertEqual(list(r.timings), ORDER)
        self.assertEqual((r.timings["prompt_n"], r.timings["cache_n"], r.timings["predicted_n"]), (6, 4, 3))
        self.assertAlmostEqual(r.timings["prompt_ms"], 250.0)
        self.assertAlmostEqual(r.timings["predicted_ms"], 250.0)
        self.assertAlmostEqual(r.timings["prompt_per_second"], 24.0)
        finite_and_serializable(self, r.timings)

    def test_stats_win_over_a_clock(self):
        o = SimpleNamespace(metrics=stats(), num_cached_tokens=0, outputs=[])
        lt.link_clock(o, self.clock(10.0, 10.25, 10.5))
        r = SimpleNamespace(usage=SimpleNamespace(prompt_tokens=10, completion_tokens=3))
        lt.attach_output(r, o)
        self.assertAlmostEqual(r.timings["prompt_ms"], 500.0)

    def test_clock_without_tokens_gives_no_times(self):
        # As with stats that lack a first token: counts, and no time (0,
        # speeds 0: llama-swap's "unknown"), never a made-up one.
        self.time.now = 10.0
        o = SimpleNamespace(metrics=None, num_cached_tokens=0, outputs=[])
        lt.link_clock(o, lt.start_clock(None))
        r = SimpleNamespace(usage=SimpleNamespace(prompt_tokens=10, completion_tokens=3))
        lt.attach_output(r, o)
        self.assertEqual((r.timings["prompt_ms"], r.timings["predicted_ms"], r.timings["prompt_per_second"]), (0.0, 0.0, 0.0))

    def test_no_clock_no_timings(self):
        r = SimpleNamespace(usage=SimpleNamespace(prompt_tokens=10, completion_tokens=3))
        lt.attach_output(r, SimpleNamespace(metrics=None, num_cached_tokens=0, outputs=[]))
        self.assertFalse(hasattr(r, "timings"))

    def test_batch_span_rule(self):
        # Two prompts handed over together; prompt time is the union of
        # [t0, t1], generation the rest of the span.
        a, b = SimpleNamespace(metrics=None, num_cached_tokens=2, outputs=[]), SimpleNamespace(metrics=None, num_cached_tokens=0, outputs=[])
        lt.link_clock(a, self.clock(10.0, 10.25, 10.5))
        lt.link_clock(b, self.clock(10.0, 10.375, 11.0))
        r = SimpleNamespace(usage=SimpleNamespace(prompt_tokens=14, completion_tokens=6))
        lt.attach_batch(r, [a, b])
        self.assertEqual(r.timings["cache_n"], 2)
        self.assertAlmostEqual(r.timings["prompt_ms"], 375.0)
        self.assertAlmostEqual(r.timings["predicted_ms"], 625.0)

    def test_stream_n2(self):
        ca, cb = self.clock(10.0, 10.25, 10.5), self.clock(10.0, 10.3125, 10.75)
        tr = lt.StreamTracker()
        for c, idx in ((ca, 0), (cb, 1), (ca, 0), (cb, 1)):
            o = out("r", None, 4, [(idx, None)])
            lt.link_clock(o, c)
            tr.observe(o)
        chunk = SimpleNamespace(usage=SimpleNamespace(prompt_tokens=10, completion_tokens=6))
        tr.attach(chunk)
        self.assertEqual(chunk.timings["cache_n"], 4)
        self.assertAlmostEqual(chunk.timings["prompt_ms"], 312.5)
        self.assertAlmostEqual(chunk.timings["predicted_ms"], 437.5)

    def test_responses_turn(self):
        class Context:  # weakly referenced, as vLLM's ConversationContext
            pass

        ctx = Context()
        o = SimpleNamespace(metrics=None, num_cached_tokens=4, outputs=[])
        lt.link_clock(o, self.clock(10.0, 10.25, 10.5))
        lt.observe_turn(ctx, o)
        r = SimpleNamespace(usage=SimpleNamespace(input_tokens=10, output_tokens=3,
                                                  input_tokens_details=SimpleNamespace(cached_tokens=4)))
        lt.attach_response(r, ctx)
        self.assertAlmostEqual(r.timings["prompt_ms"], 250.0)

    def test_odd_clocks_never_raise_or_nan(self):
        for t0, t1, t2 in ((10.0, math.inf, math.inf), (math.nan, 10.0, 11.0), (11.0, 10.0, 9.0), (-1.0, -1.0, -1.0)):
            c = lt.RequestClock()
            c.scheduled_ts, c.first_token_ts, c.last_token_ts = t0, t1, t2
            o = SimpleNamespace(metrics=None, num_cached_tokens=0, outputs=[])
            lt.link_clock(o, c)
            r = SimpleNamespace(usage=SimpleNamespace(prompt_tokens=10, completion_tokens=3))
            lt.attach_output(r, o)
            if hasattr(r, "timings"):
                finite_and_serializable(self, r.timings)
        c = lt.start_clock(None)
        c.tokens(None)
        c.tokens(object())  # no len(): swallowed
        lt.link_clock(object(), c)  # refuses the attribute: swallowed
        self.time.monotonic = None  # the clock itself fails
        self.assertIsNone(lt.start_clock(None))
        c.tokens([1])

    def test_clock_log_puts_both_side_by_side(self):
        import tempfile

        with tempfile.TemporaryDirectory() as d:
            lt._CLOCK_LOG = os.path.join(d, "clock.jsonl")
            c = lt.start_clock(stats())
            self.assertIsInstance(c, lt.RequestClock, "the log wants a clock beside the stats")
            self.time.now = 10.25
            c.tokens([1])
            self.time.now = 10.5
            c.tokens([1])
            o = SimpleNamespace(metrics=stats(), num_cached_tokens=0, outputs=[])
            lt.link_clock(o, c)
            r = SimpleNamespace(id="chatcmpl-1", usage=SimpleNamespace(prompt_tokens=10, completion_tokens=3))
            lt.attach_output(r, o)
            tr = lt.StreamTracker()
            tr.observe(o)
            chunk = SimpleNamespace(id="chatcmpl-2", usage=SimpleNamespace(prompt_tokens=10, completion_tokens=3))
            tr.attach(chunk)
            with open(lt._CLOCK_LOG) as f:
                lines = [json.loads(x) for x in f]
        self.assertEqual([x["id"] for x in lines], ["chatcmpl-1", "chatcmpl-2"])
        for x in lines:
            self.assertAlmostEqual(x["engine"]["prompt_ms"], 500.0)
            self.assertAlmostEqual(x["clock"]["prompt_ms"], 250.0)
            self.assertAlmostEqual(x["clock"]["predicted_ms"], 250.0)
        self.assertAlmostEqual(r.timings["prompt_ms"], 500.0, msg="the response keeps the engine's timings")

    def test_unwritable_clock_log_keeps_the_timings(self):
        lt._CLOCK_LOG = "/nonexistent/dir/clock.jsonl"
        o = SimpleNamespace(metrics=stats(), num_cached_tokens=0, outputs=[])
        lt.link_clock(o, self.clock(10.0, 10.25, 10.5))
        r = SimpleNamespace(usage=SimpleNamespace(prompt_tokens=10, completion_tokens=3))
        lt.attach_output(r, o)
        self.assertAlmostEqual(r.timings["prompt_ms"], 500.0)


class Structure(unittest.TestCase):
    """Each function vLLM's serving code calls catches everything once, at
    its top; the helpers under them never catch, so a surprise is handled in
    exactly one place. And every module-level name is used."""

    ENTRY_POINTS = {"build_timings", "attach", "attach_output", "attach_batch", "link_metrics",
                    "start_clock", "link_clock", "RequestClock.tokens",
                    "StreamTracker.observe", "StreamTracker.finish_chunk", "StreamTracker.attach",
                    # /v1/responses and /v1/messages (test_endpoints.py)
                    "observe_turn", "attach_response", "attach_response_output", "attach_response_event",
                    "attach_message", "attach_message_delta"}

    def functions(self):
        import ast

        with open(os.environ["LLAMACPP_TIMINGS"]) as f:
            tree = ast.parse(f.read())
        for node in tree.body:
            if isinstance(node, ast.FunctionDef):
                yield node.name, node
            elif isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, ast.FunctionDef):
                        yield f"{node.name}.{item.name}", item

    def test_one_guard_per_entry_point(self):
        import ast

        seen = set()
        for name, fn in self.functions():
            tries = [n for n in ast.walk(fn) if isinstance(n, ast.Try)]
            if name in self.ENTRY_POINTS:
                seen.add(name)
                body = [n for n in fn.body if not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))]
                self.assertEqual(len(body), 1, f"{name}: the try must be the whole body")
                self.assertIsInstance(body[0], ast.Try, name)
                self.assertEqual(len(tries), 1, f"{name} has {len(tries)} try blocks")
                (handler,) = body[0].handlers
                self.assertEqual(ast.unparse(handler.type), "Exception", name)
            else:
                self.assertEqual(tries, [], f"{name} is not an entry point but catches")
        self.assertEqual(seen, self.ENTRY_POINTS)
        self.assertEqual(set(lt.__all__), {n.split(".")[0] for n in self.ENTRY_POINTS})

    def test_every_private_name_is_used(self):
        import ast

        with open(os.environ["LLAMACPP_TIMINGS"]) as f:
            tree = ast.parse(f.read())
        defined = {t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
        defined |= {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
        used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        unused = {d for d in defined if d.startswith("_") and not d.startswith("__") and d not in used}
        self.assertEqual(unused, set())


class OneSpan(unittest.TestCase):
    """_spans_ms's shortcut for one request, against the general rule."""

    def test_same_values_to_the_bit(self):
        rnd = random.Random(7)
        odd = [0.0, -1.0, float("nan"), float("inf"), None, True, 3, "1.0", 1e308]
        for _ in range(5000):
            if rnd.random() < 0.5:  # stamps close together: the subtractions are exact
                a = 1000.0 + rnd.random() * 1e6
                values = [a, a + rnd.random() * 10, a + rnd.random() * 100]
            else:  # far apart: they round, and the order of operations shows
                values = sorted(10 ** rnd.uniform(-3, 9) for _ in range(3))
            if rnd.random() < 0.3:
                rnd.shuffle(values)
            if rnd.random() < 0.2:
                values[rnd.randrange(3)] = rnd.choice(odd)
            s = stats(*values)
            with self.subTest(values=values):
                self.assertEqual(lt._spans_ms([s]), lt._union_spans_ms([s]))

    def test_overflow_goes_the_general_way(self):
        s = stats(1e-300, 1e-300, 1.7e308)
        self.assertEqual(lt._spans_ms([s]), lt._union_spans_ms([s]))



class OneRequest(unittest.TestCase):
    """_attach_one, the common case's shortcut that attach_output,
    attach_batch and StreamTracker.attach take, against the general way
    (_attach): the same timings to the bit, the same metrics cleared, and
    nothing done where it declines."""

    ODD = [0.0, -1.0, float("nan"), float("inf"), None, True, 3, "1.0", 1e308, 1e-320]
    ODD_COUNTS = [None, -1, True, 1.0, "3", 0, 2**70]

    def case(self, rnd):
        if rnd.random() < 0.5:
            a = 1000.0 + rnd.random() * 1e6
            values = [a, a + rnd.random() * 10, a + rnd.random() * 100]
        else:
            values = sorted(10 ** rnd.uniform(-3, 9) for _ in range(3))
        if rnd.random() < 0.2:
            rnd.shuffle(values)
        if rnd.random() < 0.2:
            values[rnd.randrange(3)] = rnd.choice(self.ODD)
        counts = [rnd.randrange(0, 5000), rnd.randrange(0, 5000), rnd.randrange(0, 2000)]
        if rnd.random() < 0.3:
            counts[1] = rnd.randrange(0, counts[0] + 1)  # a cache hit within the prompt
        if rnd.random() < 0.2:
            counts[rnd.randrange(3)] = rnd.choice(self.ODD_COUNTS)
        return stats(*values), counts

    def response(self, prompt, predicted, metrics=True):
        r = SimpleNamespace(usage=SimpleNamespace(prompt_tokens=prompt, completion_tokens=predicted))
        if metrics:
            r.metrics = vllm_metrics()
        return r

    def test_same_as_the_general_way(self):
        rnd = random.Random(11)
        taken = declined = 0
        for _ in range(5000):
            s, (prompt, cached, predicted) = self.case(rnd)
            metrics = rnd.random() < 0.5
            fast, slow = self.response(prompt, predicted, metrics), self.response(prompt, predicted, metrics)
            with self.subTest(stats=vars(s), counts=(prompt, cached, predicted)):
                try:
                    took = lt._attach_one(fast, s, cached, None, None)
                except (OverflowError, ValueError) as e:  # the entry point's guard catches these
                    with self.assertRaises(type(e)):
                        lt._attach(slow, s, cached, None, None, None)
                    continue
                lt._attach(slow, s, cached, None, None, None)
                if took:
                    taken += 1
                    self.assertEqual(list(fast.timings), ORDER)
                    self.assertEqual(json.dumps(fast.timings), json.dumps(slow.timings))
                    for k, v in fast.timings.items():
                        self.assertIs(type(v), type(slow.timings[k]), k)
                    self.assertEqual(vars(fast), vars(slow))
                else:
                    declined += 1
                    self.assertEqual(vars(fast), vars(self.response(prompt, predicted, metrics)))
        # Both ways are exercised: most cases are the common one.
        self.assertGreater(taken, 2500)
        self.assertGreater(declined, 300)

    def test_explicit_counts_win_over_usage(self):
        r = self.response(1, 1)
        self.assertTrue(lt._attach_one(r, stats(), 3, 10, 5))
        self.assertEqual((r.timings["prompt_n"], r.timings["cache_n"], r.timings["predicted_n"]), (7, 3, 5))

    def test_entry_points_take_it(self):
        # The shortcut is what the common case runs: with _attach broken,
        # the entry points still give timings for one plain request...
        general = lt._attach

        def broken(*args, **kw):
            raise AssertionError("the general way")

        lt._attach = broken
        try:
            s = stats()
            for attach in (lambda r: lt.attach_output(r, out("r", s, 2, [(0, "stop")])),
                           lambda r: lt.attach_batch(r, [None, out("r", s, 2, [(0, "stop")])])):
                r = self.response(12, 4)
                attach(r)
                self.assertEqual(r.timings["cache_n"], 2)
            tr = lt.StreamTracker()
            tr.observe(out("r", s, 2, [(0, "stop")]))
            r = self.response(12, 4)
            tr.attach(r)
            self.assertEqual(r.timings["cache_n"], 2)
            # ...and none where the general way is needed: draft counts,
            # several requests.
            r = self.response(12, 4)
            lt.attach_output(r, out("r", s, 2, [(0, "stop")], [SimpleNamespace(num_draft_tokens=4, histogram=[1, 1])]))
            self.assertFalse(hasattr(r, "timings"))
            r = self.response(12, 4)
            lt.attach_batch(r, [out("a", s, 2, [(0, "stop")]), out("b", stats(), 2, [(0, "stop")])])
            self.assertFalse(hasattr(r, "timings"))
        finally:
            lt._attach = general


@unittest.skipIf(pydantic is None, "pydantic is not installed")
class PydanticExtra(unittest.TestCase):
    """_set_timings stores timings on vLLM-like pydantic models exactly as
    pydantic's own __setattr__ does, and takes the plain way wherever the
    model is not a plain extra-allowing one."""

    def setUp(self):
        from pydantic import BaseModel, ConfigDict

        class Base(BaseModel):  # vLLM's OpenAIBaseModel
            model_config = ConfigDict(extra="allow")

        class Response(Base):
            id: str = "x"
            usage: dict = {}
            metrics: object = None

        self.Base, self.Response, self.BaseModel, self.ConfigDict = Base, Response, BaseModel, ConfigDict

    def assert_same_as_setattr(self, make):
        t = lt.build_timings(stats(), 10, 2, 5)
        ours, theirs = make(), make()
        lt._set_timings(ours, t)
        theirs.timings = t
        self.assertEqual(ours.model_dump_json(), theirs.model_dump_json())
        self.assertEqual(ours.model_dump_json(exclude_unset=True), theirs.model_dump_json(exclude_unset=True))
        self.assertEqual(ours.model_fields_set, theirs.model_fields_set)
        self.assertEqual(ours.model_extra, theirs.model_extra)
        self.assertEqual(ours.timings, t)
        return ours

    def test_plain_model_takes_the_direct_way(self):
        r = self.assert_same_as_setattr(lambda: self.Response(id="a"))
        self.assertIs(lt._DIRECT[self.Response], True)
        self.assertIn('"timings":{"prompt_n":8', r.model_dump_json())

    def test_attach_output_on_a_model(self):
        out = SimpleNamespace(metrics=stats(), num_cached_tokens=2, outputs=[])
        r = self.Response(usage={})
        r.usage = SimpleNamespace(prompt_tokens=10, completion_tokens=5)
        lt.attach_output(r, out)
        self.assertEqual(r.timings["prompt_n"], 8)

    def test_models_that_take_the_plain_way(self):
        BaseModel, ConfigDict = self.BaseModel, self.ConfigDict

        class Field(self.Base):
            timings: dict = {}

        class Validated(self.Base):
            model_config = ConfigDict(extra="allow", validate_assignment=True)

        class Prop(self.Base):
            @property
            def timings(self):
                return "kept"

            @timings.setter
            def timings(self, value):
                object.__setattr__(self, "_seen", value)

        class Custom(self.Base):
            def __setattr__(self, name, value):
                super().__setattr__(name, value)

        for cls in (Field, Validated, Custom):
            with self.subTest(cls=cls.__name__):
                self.assert_same_as_setattr(cls)
                self.assertIs(lt._DIRECT[cls], False)
        p = Prop()
        lt._set_timings(p, {"a": 1})
        self.assertIs(lt._DIRECT[Prop], False)
        self.assertEqual(p.timings, "kept")
        self.assertEqual(p._seen, {"a": 1})

        class Ignored(BaseModel):  # extra fields refused: no timings, pydantic's error
            x: int = 0

        with self.assertRaises(ValueError):
            lt._set_timings(Ignored(), {})
        self.assertIs(lt._DIRECT[Ignored], False)
        r = Ignored()
        lt.attach(r, stats(), 0, 10, 5)  # an entry point: never raises
        self.assertNotIn("timings", r.model_dump_json())


if __name__ == "__main__":
    unittest.main()
