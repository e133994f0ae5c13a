"""Level 3: the patched vLLM imports, and its response models keep ``timings``.

    python level3.py [SITE_DIR]

SITE_DIR (optional) is put first on sys.path: a directory holding a patched
vllm/ (a wheel's Python files); without it the installed vllm is used. The
interpreter must have vLLM's dependencies (pydantic, torch, ...).

Checks, printed one per line, exit status 0 only if all pass:
  * the patched serving modules import, and use the vllm._llamacpp_timings
    module the patch installed;
  * for each of ChatCompletionResponse, ChatCompletionStreamResponse (a
    finish chunk and a final usage chunk), CompletionResponse and
    CompletionStreamResponse, taken from the serving modules' own namespace
    (so the classes the server really uses), built with real pydantic:
    _llamacpp_timings.attach() sets the expected timings dict; the dict
    survives model_dump_json(exclude_unset=True, exclude_none=True),
    model_dump_json() and model_dump() (what the server uses for full
    responses, streams and errors) unchanged, as the last key; without
    stats, the response serializes exactly as one never touched.
"""

import importlib
import json
import sys
import traceback
from types import SimpleNamespace

if len(sys.argv) > 1:
    sys.path.insert(0, sys.argv[1])

results = []


def check(name, fn):
    try:
        detail = fn()
        results.append((name, True, detail or ""))
    except Exception as e:  # noqa: BLE001
        tb = traceback.format_exc(limit=3).strip().splitlines()[-1]
        results.append((name, False, f"{type(e).__name__}: {e}" if str(e) else tb))


def import_first(*names):
    errors = []
    for name in names:
        try:
            return importlib.import_module(name)
        except ModuleNotFoundError as e:
            if e.name and not name.startswith(e.name) and e.name not in name:
                raise  # a dependency is missing, not this layout
            errors.append(f"{name}: {e}")
    raise ModuleNotFoundError("; ".join(errors))


# Where each vLLM layout keeps the serving code (newest first).
CHAT_SERVING = ("vllm.entrypoints.openai.chat_completion.serving", "vllm.entrypoints.openai.serving_chat")
CMPL_SERVING = ("vllm.entrypoints.openai.completion.serving", "vllm.entrypoints.openai.serving_completion")

mods = {}


def load():
    mods["timings"] = importlib.import_module("vllm._llamacpp_timings")
    mods["chat"] = import_first(*CHAT_SERVING)
    mods["cmpl"] = import_first(*CMPL_SERVING)
    import pydantic
    import vllm

    for key in ("chat", "cmpl"):
        if getattr(mods[key], "_llamacpp_timings", None) is not mods["timings"]:
            raise AssertionError(f"{mods[key].__name__} is not patched (no _llamacpp_timings import)")
    return f"vllm {getattr(vllm, '__version__', '?')} from {vllm.__file__.rsplit('/vllm/', 1)[0]}, pydantic {pydantic.VERSION}"


check("import patched serving modules", load)
if not results[-1][1]:
    for name, ok, detail in results:
        print(f"{'ok  ' if ok else 'FAIL'} {name}: {detail}")
    sys.exit(1)

T = mods["timings"]
chat, cmpl = mods["chat"], mods["cmpl"]


def cls(mod, name):
    c = getattr(mod, name, None)
    if c is None:
        raise AttributeError(f"{mod.__name__} has no {name}")
    return c


# Stats as RequestStateStats has them (engine monotonic seconds): scheduled
# at 10.000, first token at 10.250, last token at 10.750; 20 prompt tokens,
# 8 of them from the prefix cache; 5 generated.
STATS = SimpleNamespace(scheduled_ts=10.0, first_token_ts=10.25, last_token_ts=10.75, arrival_time=1.7e9)
try:
    from vllm.v1.metrics.stats import RequestStateStats

    STATS = RequestStateStats(scheduled_ts=10.0, first_token_ts=10.25, last_token_ts=10.75)
except Exception:  # noqa: BLE001 - older layouts: the namespace above
    pass
PROMPT, CACHED, COMPLETION = 20, 8, 5
EXPECTED = {
    "prompt_n": 12,
    "prompt_ms": 250.0,
    "prompt_per_token_ms": 250.0 / 12,
    "prompt_per_second": 12 * 1000.0 / 250.0,
    "predicted_n": 5,
    "predicted_ms": 500.0,
    "predicted_per_token_ms": 100.0,
    "predicted_per_second": 10.0,
    "cache_n": 8,
}


def usage():
    return cls(chat, "UsageInfo")(prompt_tokens=PROMPT, completion_tokens=COMPLETION, total_tokens=PROMPT + COMPLETION)


def chat_full():
    choice = cls(chat, "ChatCompletionResponseChoice")(
        index=0, message=cls(chat, "ChatMessage")(role="assistant", content="hello"), finish_reason="stop"
    )
    return cls(chat, "ChatCompletionResponse")(id="c", created=1, model="m", choices=[choice], usage=usage())


def chat_finish_chunk():
    choice = cls(chat, "ChatCompletionResponseStreamChoice")(
        index=0, delta=cls(chat, "DeltaMessage")(content="o"), finish_reason="stop"
    )
    return cls(chat, "ChatCompletionStreamResponse")(id="c", created=1, model="m", choices=[choice])


def chat_usage_chunk():
    return cls(chat, "ChatCompletionStreamResponse")(id="c", created=1, model="m", choices=[], usage=usage())


def cmpl_full():
    choice = cls(cmpl, "CompletionResponseChoice")(index=0, text="hello", finish_reason="length")
    return cls(cmpl, "CompletionResponse")(id="c", created=1, model="m", choices=[choice], usage=usage())


def cmpl_finish_chunk():
    choice = cls(cmpl, "CompletionResponseStreamChoice")(index=0, text="o", finish_reason="length")
    return cls(cmpl, "CompletionStreamResponse")(id="c", created=1, model="m", choices=[choice])


def cmpl_usage_chunk():
    return cls(cmpl, "CompletionStreamResponse")(id="c", created=1, model="m", choices=[], usage=usage())


# How the serving code serializes each kind (all versions use some of these).
DUMPS = {
    "model_dump_json(exclude_unset=True, exclude_none=True)": lambda r: json.loads(
        r.model_dump_json(exclude_unset=True, exclude_none=True)
    ),
    "model_dump_json(exclude_unset=True)": lambda r: json.loads(r.model_dump_json(exclude_unset=True)),
    "model_dump_json(exclude_none=True)": lambda r: json.loads(r.model_dump_json(exclude_none=True)),
    "model_dump_json()": lambda r: json.loads(r.model_dump_json()),
    # What FastAPI's JSONResponse gets for a full response.
    "model_dump()": lambda r: json.loads(json.dumps(r.model_dump())),
}


def attach(resp, stats):
    # Full responses pass counts from their usage; chunks get them explicitly.
    if getattr(resp, "usage", None) is not None:
        T.attach(resp, stats, CACHED)
    else:
        T.attach(resp, stats, CACHED, PROMPT, COMPLETION)


def model_case(build):
    def run():
        plain = build()
        before = {k: f(plain) for k, f in DUMPS.items()}
        resp = build()
        attach(resp, STATS)
        t = getattr(resp, "timings", None)
        if t != EXPECTED:
            raise AssertionError(f"attach set timings {t!r}, expected {EXPECTED!r}")
        for how, dump in DUMPS.items():
            got = dump(resp)
            if got.get("timings") != EXPECTED:
                raise AssertionError(f"{how} lost or changed timings: {got.get('timings')!r}")
            if list(got)[-1] != "timings":
                raise AssertionError(f"{how}: timings is not the last key: {list(got)}")
            rest = {k: v for k, v in got.items() if k != "timings"}
            if rest != before[how]:
                raise AssertionError(f"{how}: other fields changed: {rest} != {before[how]}")
        # No stats (--disable-log-stats): byte-identical to a response never touched.
        none = build()
        attach(none, None)
        for how, dump in DUMPS.items():
            if dump(none) != before[how] or "timings" in dump(none):
                raise AssertionError(f"{how}: a response without stats changed: {dump(none)}")
        if hasattr(none, "timings"):
            raise AssertionError("a response without stats has a timings attribute")
        return f"{type(resp).__name__}: timings kept by {len(DUMPS)} serializations, untouched without stats"

    return run


for name, build in (
    ("ChatCompletionResponse", chat_full),
    ("ChatCompletionStreamResponse finish chunk", chat_finish_chunk),
    ("ChatCompletionStreamResponse usage chunk", chat_usage_chunk),
    ("CompletionResponse", cmpl_full),
    ("CompletionStreamResponse finish chunk", cmpl_finish_chunk),
    ("CompletionStreamResponse usage chunk", cmpl_usage_chunk),
):
    check(name, model_case(build))

bad = 0
for name, ok, detail in results:
    print(f"{'ok  ' if ok else 'FAIL'} {name}: {detail}")
    bad += not ok
print(f"{len(results) - bad} passed, {bad} failed")
sys.exit(1 if bad else 0)
