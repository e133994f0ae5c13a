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
  * the same for the Responses API (ResponsesResponse, and the
    response.completed / response.incomplete events of a stream, with
    timings beside "type" and "response" and the same inside the response,
    where the openai SDK's stream helper reads them) and the
    Messages API (AnthropicMessagesResponse and the message_delta
    AnthropicStreamEvent, whose models allow no extra fields: the patch
    returns an equal object of a subclass that does), through the
    serializations vLLM's routers use; where this vLLM has no such module,
    the check says so and is skipped.
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

# ------------------------------------------------ /v1/responses, /v1/messages

RESPONSES_SERVING = ("vllm.entrypoints.openai.responses.serving", "vllm.entrypoints.openai.serving_responses")
MESSAGES_SERVING = ("vllm.entrypoints.anthropic.serving", "vllm.entrypoints.anthropic.serving_messages")


def optional_module(names, key):
    try:
        mods[key] = import_first(*names)
    except ModuleNotFoundError:
        return None
    if getattr(mods[key], "_llamacpp_timings", None) is not T:
        raise AssertionError(f"{mods[key].__name__} is not patched (no _llamacpp_timings import)")
    return mods[key]


def model_class(mod, name, *others):
    """A class from the serving module's namespace, else its protocol's."""
    for m in (mod,) + others:
        c = getattr(m, name, None)
        if c is not None:
            return c
    raise AttributeError(f"{mod.__name__} has no {name}")


def make(cls, **fields):
    """cls(**fields) with only the fields this version's model has."""
    return cls(**{k: v for k, v in fields.items() if k in cls.model_fields})


class Context:
    """Stands for a Responses ConversationContext (observe_turn keys on it)."""


def same_dumps(dumps, plain, resp, expect_timings, nested=None):
    """Each serialization of resp equals plain's plus the expected timings
    as the last key (none without stats); with nested (a Responses
    stream's terminal event: "response"), the same inside that field too."""
    before = {k: f(plain) for k, f in dumps.items()}
    for how, dump in dumps.items():
        got = dump(resp)
        if nested is not None:
            inner = dict(got[nested])
            if expect_timings and (inner.get("timings") != EXPECTED or list(inner)[-1] != "timings"):
                raise AssertionError(f"{how}: {nested}.timings lost, changed or not last: {inner.get('timings')!r}")
            if not expect_timings and "timings" in inner:
                raise AssertionError(f"{how}: {nested}.timings without stats: {inner['timings']}")
            inner.pop("timings", None)
            got = dict(got, **{nested: inner})
        if expect_timings:
            if got.get("timings") != EXPECTED:
                raise AssertionError(f"{how} lost or changed timings: {got.get('timings')!r}")
            if list(got)[-1] != "timings":
                raise AssertionError(f"{how}: timings is not the last key: {list(got)}")
        elif "timings" in got:
            raise AssertionError(f"{how}: timings without stats: {got['timings']}")
        rest = {k: v for k, v in got.items() if k != "timings"}
        if rest != before[how]:
            raise AssertionError(f"{how}: other fields changed: {rest} != {before[how]}")


RESPONSES_DUMPS = {
    # What the responses router sends for a full response, and for each event.
    "model_dump(mode='json', by_alias=True)": lambda r: json.loads(json.dumps(r.model_dump(mode="json", by_alias=True))),
    "model_dump_json(indent=None, by_alias=True)": lambda r: json.loads(r.model_dump_json(indent=None, by_alias=True)),
    "model_dump_json(indent=None)": lambda r: json.loads(r.model_dump_json(indent=None)),
}
MESSAGES_DUMPS = {
    # The messages router (full message) and the stream converter (events).
    "model_dump(exclude_none=True)": lambda r: json.loads(json.dumps(r.model_dump(exclude_none=True))),
    "model_dump_json(exclude_unset=True)": lambda r: json.loads(r.model_dump_json(exclude_unset=True)),
    "model_dump_json(exclude_unset=True, exclude_none=True)": lambda r: json.loads(
        r.model_dump_json(exclude_unset=True, exclude_none=True)),
    "model_dump_json()": lambda r: json.loads(r.model_dump_json()),
}


def responses_cases(mod):
    proto = importlib.import_module(mod.__name__.rsplit(".", 1)[0] + ".protocol") \
        if mod.__name__.endswith(".serving") else importlib.import_module("vllm.entrypoints.openai.protocol")
    from vllm.sampling_params import SamplingParams

    def usage():
        return make(model_class(mod, "ResponseUsage", proto), input_tokens=PROMPT, output_tokens=COMPLETION,
                    total_tokens=PROMPT + COMPLETION,
                    input_tokens_details=make(model_class(mod, "InputTokensDetails", proto), cached_tokens=CACHED,
                                              cache_write_tokens=0),
                    output_tokens_details=make(model_class(mod, "OutputTokensDetails", proto), reasoning_tokens=0))

    # One request for every response built here, so they share its id.
    req = model_class(mod, "ResponsesRequest", proto)(model="m", input="hi")

    def response(status="completed"):
        return model_class(mod, "ResponsesResponse", proto).from_request(
            req, SamplingParams(max_tokens=16), model_name="m", created_time=1, output=[], status=status, usage=usage())

    def observed(with_stats):
        ctx = Context()
        T.observe_turn(ctx, SimpleNamespace(metrics=STATS if with_stats else None, num_cached_tokens=CACHED, outputs=[]))
        return ctx

    def full():
        plain, resp, none = response(), response(), response()
        T.attach_response(resp, observed(True))
        T.attach_response(none, observed(False))
        same_dumps(RESPONSES_DUMPS, plain, resp, True)
        same_dumps(RESPONSES_DUMPS, plain, none, False)
        return f"{type(resp).__name__}: timings kept by {len(RESPONSES_DUMPS)} serializations, untouched without stats"

    def event(cls_name, type_, status):
        def run():
            cls = model_class(mod, cls_name, proto)

            def build():
                return cls(type=type_, sequence_number=7, response=response(status))

            plain, ev, none = build(), build(), build()
            T.attach_response_event(ev, observed(True))
            T.attach_response_event(none, observed(False))
            same_dumps(RESPONSES_DUMPS, plain, ev, True, nested="response")
            same_dumps(RESPONSES_DUMPS, plain, none, False, nested="response")
            return f"{cls.__name__}: timings beside type and response and inside the response, untouched without stats"
        return run

    check("ResponsesResponse", full)
    check("ResponseCompletedEvent", event("ResponseCompletedEvent", "response.completed", "completed"))
    if getattr(mod, "ResponseIncompleteEvent", None) is not None:
        check("ResponseIncompleteEvent", event("ResponseIncompleteEvent", "response.incomplete", "incomplete"))


def messages_cases(mod):
    proto = importlib.import_module("vllm.entrypoints.anthropic.protocol")
    chat_with = SimpleNamespace(timings=dict(EXPECTED))
    chat_without = SimpleNamespace()

    def message():
        return proto.AnthropicMessagesResponse(
            id="m", content=[proto.AnthropicContentBlock(type="text", text="hello")], model="m",
            stop_reason="end_turn", usage=make(proto.AnthropicUsage, input_tokens=PROMPT - CACHED, output_tokens=COMPLETION,
                                               cache_read_input_tokens=CACHED))

    def delta():
        return proto.AnthropicStreamEvent(
            type="message_delta", delta=proto.AnthropicDelta(stop_reason="end_turn"),
            usage=make(proto.AnthropicUsage, input_tokens=PROMPT - CACHED, output_tokens=COMPLETION,
                       cache_read_input_tokens=CACHED))

    def case(build, attach):
        def run():
            plain, orig = build(), build()
            got = attach(orig, chat_with)
            if not isinstance(got, type(plain)):
                raise AssertionError(f"{type(got)} is not a {type(plain).__name__}")
            same_dumps(MESSAGES_DUMPS, plain, got, True)
            none = build()
            if attach(none, chat_without) is not none:
                raise AssertionError("without timings on the chat response, the object must be returned as it is")
            same_dumps(MESSAGES_DUMPS, plain, none, False)
            return f"{type(plain).__name__}: timings kept by {len(MESSAGES_DUMPS)} serializations, untouched without"
        return run

    check("AnthropicMessagesResponse", case(message, T.attach_message))
    check("AnthropicStreamEvent message_delta", case(delta, T.attach_message_delta))


for names, key, cases in ((RESPONSES_SERVING, "responses", responses_cases), (MESSAGES_SERVING, "messages", messages_cases)):
    try:
        m = optional_module(names, key)
    except Exception as e:  # noqa: BLE001
        results.append((f"import patched {key} serving module", False, f"{type(e).__name__}: {e}"))
        continue
    if m is None:
        print(f"skip /v1/{key}: this vLLM has none of {', '.join(names)}")
        continue
    cases(m)

bad = 0
for name, ok, detail in results:
    print(f"{'ok  ' if ok else 'FAIL'} {name}: {detail}")
    bad += not ok
print(f"{len(results) - bad} passed, {bad} failed")
sys.exit(1 if bad else 0)
