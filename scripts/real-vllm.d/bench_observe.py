"""The patch's per-chunk cost: StreamTracker.observe as the chat stream
calls it, on real vLLM RequestOutputs (stats on and off, 256 tokens), and
its per-response cost (a tracker, one observe, attach); best of 7 repeats.

    VENV/bin/python bench_observe.py PATH/llamacpp_timings.py

PATH is patcher/patchsets, or a copy of an older module to compare with
(git show REV:patcher/patchsets/llamacpp_timings.py > old.py).
"""
import sys
import timeit

from vllm.outputs import CompletionOutput, RequestOutput
from vllm.v1.metrics.stats import RequestStateStats

from testkit import load

TOKENS = 256


def outputs(stats_on):
    s = RequestStateStats(scheduled_ts=100.0, queued_ts=100.0, arrival_time=1.8e9)
    s.first_token_ts = 100.25
    res = []
    for t in range(TOKENS):
        last = t == TOKENS - 1
        co = CompletionOutput(index=0, text=f"t{t}", token_ids=[t], cumulative_logprob=None, logprobs=None,
                              finish_reason="length" if last else None)
        res.append(RequestOutput(request_id="x", prompt=None, prompt_token_ids=[1, 2], prompt_logprobs=None,
                                 outputs=[co], finished=last, metrics=s if stats_on else None,
                                 num_cached_tokens=16))
    return res


def best(f, number):
    return min(timeit.repeat(f, number=number, repeat=7)) / number


def main():
    lt = load("llamacpp_timings", sys.argv[1])
    for stats_on in (True, False):
        outs = outputs(stats_on)

        def observed():
            tracker = lt.StreamTracker()
            for o in outs:
                tracker.observe(o)

        def empty():
            lt.StreamTracker()
            for o in outs:
                pass

        cost = (best(observed, 400) - best(empty, 400)) / TOKENS * 1e6
        print(f"stats {'on ' if stats_on else 'off'}: observe {cost:.3f} us/chunk")

    final = outputs(True)[-1]

    class Chunk:
        pass

    def response():
        tracker = lt.StreamTracker()
        tracker.observe(final)
        tracker.attach(Chunk(), 64, TOKENS)

    print(f"per response: StreamTracker() + observe + attach {best(response, 20000) * 1e6:.2f} us")


if __name__ == "__main__":
    main()
