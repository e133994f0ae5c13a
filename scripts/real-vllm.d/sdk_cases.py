"""What level sdk's fake engine plays, per case, and the timings it must give.

Shared by sdk_server.py (the engine script of the case a request names
with "sdk:NAME") and sdk_level.py (the request, and the exact timings
expected). Standard library only, and level2's expected() and STEP: the
client side runs in its own virtualenv, without vLLM.
"""

from level2 import STEP, expected


def _case(tokens, prompt, cached, sched, first, finish="stop"):
    return dict(
        engine=dict(prompts=[dict(len=prompt, cached=cached, tokens=tokens, sched=[(sched, first)])],
                    stats=True, n=1, merge_final=False, finish=finish),
        expect=expected(prompt, cached, tokens, (first - sched) * 1000, (tokens - 1) * STEP * 1000),
    )


# One engine request each: 10 prompt tokens of which 4 cached, 3 generated,
# the first 250 ms after scheduling, one every STEP (62.5 ms) after it; the
# completions case has other numbers, and "length" is a response cut short
# by max_output_tokens (response.incomplete from vLLM 0.33 on).
CASES = {
    "chat": _case(3, 10, 4, 100.0, 100.25),
    "completion": _case(5, 12, 8, 50.0, 50.125, finish="length"),
    "responses": _case(3, 10, 4, 100.0, 100.25),
    "responses-length": _case(5, 12, 8, 50.0, 50.125, finish="length"),
    "messages": _case(3, 10, 4, 100.0, 100.25),
}
