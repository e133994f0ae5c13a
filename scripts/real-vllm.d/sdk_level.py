"""Level sdk: the official OpenAI and Anthropic Python SDKs against vLLM.

    python sdk_level.py PATCHED_URL UNPATCHED_URL [--out FILE]

Both URLs serve vLLM's own HTTP app on the same fake engine
(sdk_server.py): the first from a patched copy of vLLM, the second from
an unpatched one. Each call below, the SDKs' documented calls and
helpers, full and streamed, goes to both:

    openai     chat.completions.create            full, stream, stream+usage
               chat.completions.stream            helper, get_final_completion
               completions.create                 full, stream, stream+usage
               responses.create                   full, stream
               responses.stream                   helper, get_final_response
               (the same two cut short by max_output_tokens: response.incomplete)
    anthropic  messages.create                    full, stream
               messages.stream                    helper, get_final_message

and this checks, per call:
  * it parses: no exception, every object of the SDK's own type;
  * the timings in the SDK objects (the extra field pydantic keeps,
    model_extra["timings"]) equal those in the raw HTTP body the SDK read
    (recorded below the SDK by an httpx transport): the full body's, or
    the data: line's; for a Responses stream's terminal event, at its top
    level and inside its response; and they are the exact timings the fake
    engine's case gives (sdk_cases.py);
  * where each object carries them, on the patched server, is what
    docs/clients.md says (the table WHERE below); and no other object;
  * nothing else changes for clients: each parsed object of the patched
    server, minus timings, equals the unpatched server's for the same
    request, field by field, types included, apart from ids and creation
    times.
Prints one line per call, then "N passed, N failed"; --out writes, per
call, where the timings were found and the patched dumps. Exit status 0
when every call passes.
"""

import argparse
import json
import sys

import anthropic
import openai

try:  # the HTTP client of the SDKs of 2026 (openai 3.x, anthropic 2.x)
    import httpx2 as httpx
except ImportError:
    import httpx

from sdk_cases import CASES

MODEL = "tiny"


# ---------------------------------------------------------------- raw bodies

class Recorder(httpx.BaseTransport):
    """An httpx transport that passes everything to the real one and keeps
    a copy of each response body as the SDK reads it."""

    def __init__(self):
        self.inner = httpx.HTTPTransport()
        self.bodies = []

    def handle_request(self, request):
        resp = self.inner.handle_request(request)
        if resp.headers.get("content-encoding"):
            raise AssertionError(f"a {resp.headers['content-encoding']} body: not read here")
        buf = bytearray()
        self.bodies.append((resp.headers.get("content-type", ""), buf))

        class Tee(httpx.SyncByteStream):
            def __iter__(self):
                for chunk in resp.stream:
                    buf.extend(chunk)
                    yield chunk

            def close(self):
                resp.stream.close()

        return httpx.Response(resp.status_code, headers=resp.headers, stream=Tee(), extensions=resp.extensions)

    def last(self):
        """The last body: a JSON object, or the list of a stream's data: objects."""
        ctype, buf = self.bodies[-1]
        text = bytes(buf).decode()
        if "text/event-stream" not in ctype:
            return json.loads(text)
        out = []
        for line in text.splitlines():
            if line.startswith("data:") and line[5:].strip() != "[DONE]":
                out.append(json.loads(line[5:]))
        return out


def clients(url):
    rec = Recorder()
    http = httpx.Client(transport=rec, timeout=60)
    oa = openai.OpenAI(base_url=url + "/v1", api_key="none", http_client=http, max_retries=0)
    an = anthropic.Anthropic(base_url=url, api_key="none", http_client=http, max_retries=0)
    return oa, an, rec


# ---------------------------------------------------------------- the calls
#
# Each returns a list of (label, object): the SDK objects a user gets, in
# order (a stream's events, then what a helper builds at its end).

def chat_full(oa, an):
    return [("completion", oa.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "sdk:chat"}], max_tokens=16))]


def chat_stream(oa, an, usage=False):
    extra = {"stream_options": {"include_usage": True}} if usage else {}
    stream = oa.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "sdk:chat"}], max_tokens=16, stream=True, **extra)
    return [("chunk", c) for c in stream]


def chat_stream_helper(oa, an):
    out = []
    with oa.chat.completions.stream(
            model=MODEL, messages=[{"role": "user", "content": "sdk:chat"}], max_tokens=16,
            stream_options={"include_usage": True}) as stream:
        for event in stream:
            out.append((f"event {event.type}", event))
        out.append(("get_final_completion()", stream.get_final_completion()))
    return out


def completion_full(oa, an):
    return [("completion", oa.completions.create(model=MODEL, prompt="sdk:completion", max_tokens=16))]


def completion_stream(oa, an, usage=False):
    extra = {"stream_options": {"include_usage": True}} if usage else {}
    stream = oa.completions.create(model=MODEL, prompt="sdk:completion", max_tokens=16, stream=True, **extra)
    return [("chunk", c) for c in stream]


def responses_full(oa, an, case="responses"):
    return [("response", oa.responses.create(model=MODEL, input=f"sdk:{case}", max_output_tokens=16))]


def responses_stream(oa, an, case="responses"):
    stream = oa.responses.create(model=MODEL, input=f"sdk:{case}", max_output_tokens=16, stream=True)
    return [(f"event {e.type}", e) for e in stream]


def responses_stream_helper(oa, an, case="responses"):
    out = []
    with oa.responses.stream(model=MODEL, input=f"sdk:{case}", max_output_tokens=16) as stream:
        for event in stream:
            out.append((f"event {event.type}", event))
        try:
            out.append(("get_final_response()", stream.get_final_response()))
        except RuntimeError as e:  # the SDK's own answer to a stream without response.completed
            out.append(("get_final_response()", e))
    return out


def messages_full(oa, an):
    return [("message", an.messages.create(
        model=MODEL, max_tokens=16, messages=[{"role": "user", "content": "sdk:messages"}]))]


def messages_stream(oa, an):
    stream = an.messages.create(model=MODEL, max_tokens=16, messages=[{"role": "user", "content": "sdk:messages"}],
                                stream=True)
    return [(f"event {e.type}", e) for e in stream]


def messages_stream_helper(oa, an):
    out = []
    with an.messages.stream(model=MODEL, max_tokens=16,
                            messages=[{"role": "user", "content": "sdk:messages"}]) as stream:
        for event in stream:
            out.append((f"event {event.type}", event))
        out.append(("get_final_message()", stream.get_final_message()))
    return out


# name: (call, case, where the timings must be: the labels of the objects
# that carry them, as docs/clients.md says; raw: where the raw body has
# them, "body", "last" (the data: line with them) or "terminal" (a
# Responses stream's terminal event: top level and response)).
CALLS = {
    "openai chat.completions.create": (chat_full, "chat", ["completion"]),
    "openai chat.completions.create stream": (chat_stream, "chat", ["chunk"]),
    "openai chat.completions.create stream include_usage": (
        lambda oa, an: chat_stream(oa, an, usage=True), "chat", ["chunk"]),
    "openai chat.completions.stream + get_final_completion": (
        chat_stream_helper, "chat", ["event chunk .chunk"]),
    "openai completions.create": (completion_full, "completion", ["completion"]),
    "openai completions.create stream": (completion_stream, "completion", ["chunk"]),
    "openai completions.create stream include_usage": (
        lambda oa, an: completion_stream(oa, an, usage=True), "completion", ["chunk"]),
    "openai responses.create": (responses_full, "responses", ["response"]),
    "openai responses.create stream": (
        responses_stream, "responses", ["event response.completed", "event response.completed .response"]),
    "openai responses.stream + get_final_response": (
        responses_stream_helper, "responses", ["event response.completed .response", "get_final_response()"]),
    "openai responses.create stream, cut short": (
        lambda oa, an: responses_stream(oa, an, "responses-length"), "responses-length",
        ["event response.incomplete", "event response.incomplete .response"]),
    "openai responses.stream + get_final_response, cut short": (
        lambda oa, an: responses_stream_helper(oa, an, "responses-length"), "responses-length",
        ["event response.incomplete", "event response.incomplete .response"]),
    "anthropic messages.create": (messages_full, "messages", ["message"]),
    "anthropic messages.create stream": (messages_stream, "messages", ["event message_delta"]),
    "anthropic messages.stream + get_final_message": (
        messages_stream_helper, "messages", ["event message_delta"]),
}


# ---------------------------------------------------------------- checks

def extra_timings(obj):
    """The timings pydantic keeps as an extra field of an SDK object."""
    extra = getattr(obj, "model_extra", None) or {}
    return extra.get("timings")


def carriers(objs):
    """[(label, timings)] of every object (and Responses event's response)
    that carries timings."""
    out = []
    for label, obj in objs:
        if isinstance(obj, Exception):
            continue
        t = extra_timings(obj)
        if t is not None:
            out.append((label, t))
        for field in ("response", "chunk"):  # a Responses event's response; a chat helper's chunk
            inner = getattr(obj, field, None)
            if inner is not None and not isinstance(inner, (str, bytes)) and extra_timings(inner) is not None:
                out.append((f"{label} .{field}", extra_timings(inner)))
    return out


def raw_timings(body):
    """Every timings object of a raw body, where it sits."""
    if isinstance(body, dict):
        return [("body", body["timings"])] if "timings" in body else []
    out = []
    for i, d in enumerate(body):
        if "timings" in d:
            out.append((f"data {i}", d["timings"]))
        if isinstance(d.get("response"), dict) and "timings" in d["response"]:
            out.append((f"data {i} .response", d["response"]["timings"]))
    return out


def close(a, b):
    return isinstance(a, dict) and isinstance(b, dict) and set(a) == set(b) and all(
        (a[k] == b[k]) if k.endswith("_n") else abs(a[k] - b[k]) <= 1e-9 * max(1.0, abs(b[k])) for k in b)


VOLATILE = {"id", "created", "created_at", "item_id", "response_id"}


def dump(obj):
    """An SDK object as a client sees it: its type and every field, extras
    included (model_dump), ids and creation times left out."""
    if isinstance(obj, Exception):
        return {"exception": type(obj).__name__, "message": str(obj)}

    def clean(v):
        if isinstance(v, dict):
            return {k: clean(x) for k, x in v.items() if k not in VOLATILE}
        if isinstance(v, list):
            return [clean(x) for x in v]
        return v

    return {"type": f"{type(obj).__module__}.{type(obj).__qualname__}", "fields": clean(obj.model_dump(mode="json", warnings=False))}


def strip_timings(v):
    if isinstance(v, dict):
        return {k: strip_timings(x) for k, x in v.items() if k != "timings"}
    if isinstance(v, list):
        return [strip_timings(x) for x in v]
    return v


def first_difference(a, b, path="$"):
    """The path of the first place where a and b differ, or None."""
    if type(a) is not type(b):
        return f"{path}: {type(b).__name__} {b!r:.80} unpatched, {type(a).__name__} {a!r:.80} patched"
    if isinstance(a, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                return f"{path}.{k}: only {'un' if k in b else ''}patched"
            d = first_difference(a[k], b[k], f"{path}.{k}")
            if d:
                return d
        return None
    if isinstance(a, list):
        if len(a) != len(b):
            return f"{path}: {len(b)} items unpatched, {len(a)} patched"
        for i, (x, y) in enumerate(zip(a, b)):
            d = first_difference(x, y, f"{path}[{i}]")
            if d:
                return d
        return None
    return None if a == b else f"{path}: {b!r:.80} unpatched, {a!r:.80} patched"


SDK_TYPES = (openai.BaseModel, anthropic.BaseModel)


def run_call(call, oa, an, rec):
    """(objects, raw body) of one call, or raises."""
    n = len(rec.bodies)
    objs = call(oa, an)
    if len(rec.bodies) != n + 1:
        raise AssertionError(f"{len(rec.bodies) - n} HTTP responses, want 1")
    return objs, rec.last()


def check(name, spec, patched, unpatched):
    call, case, want_where = spec
    want = CASES[case]["expect"]
    fails = []
    try:
        objs, raw = run_call(call, *patched)
        uobjs, uraw = run_call(call, *unpatched)
    except Exception as e:  # noqa: BLE001
        return [f"does not parse: {type(e).__name__}: {e}"[:400]], {}
    for label, obj in objs + uobjs:
        if not isinstance(obj, SDK_TYPES) and not (label.startswith("get_final") and isinstance(obj, RuntimeError)):
            fails.append(f"{label}: a {type(obj).__name__}, not an SDK model")
    got = carriers(objs)
    raw_t = raw_timings(raw)
    where = [label for label, _ in got]
    if where != want_where:
        fails.append(f"timings on {where or 'nothing'}, docs/clients.md says {want_where}")
    if not raw_t:
        fails.append("no timings in the raw body")
    for label, t in raw_t:
        if not close(t, want):
            fails.append(f"raw {label}: timings {t} != the engine's {want}")
    for label, t in got:
        if not any(t == r for _, r in raw_t):
            fails.append(f"{label}: timings {t} are not the raw body's {[r for _, r in raw_t]}")
    if carriers(uobjs) or raw_timings(uraw):
        fails.append("timings from the unpatched server")
    # Nothing else changes: every object, minus timings, as unpatched.
    pd = [(label, strip_timings(dump(o))) for label, o in objs]
    ud = [(label, dump(o)) for label, o in uobjs]
    if [label for label, _ in pd] != [label for label, _ in ud]:
        fails.append(f"objects {[label for label, _ in pd]} patched, {[label for label, _ in ud]} unpatched")
    else:
        for (label, a), (_, b) in zip(pd, ud):
            d = first_difference(a, b)
            if d:
                fails.append(f"{label}: differs from unpatched beyond timings: {d}")
    record = {"timings_on": where, "raw_timings_on": [label for label, _ in raw_t],
              "objects": [label for label, _ in objs], "patched": [d for _, d in pd]}
    return fails, record


def main(argv):
    p = argparse.ArgumentParser()
    p.add_argument("patched")
    p.add_argument("unpatched")
    p.add_argument("--out")
    a = p.parse_args(argv)
    patched, unpatched = clients(a.patched), clients(a.unpatched)
    print(f"openai {openai.__version__}, anthropic {anthropic.__version__}, {httpx.__name__} {httpx.__version__}: "
          f"{len(CALLS)} calls, patched {a.patched} against unpatched {a.unpatched}")
    bad, records = 0, {}
    for name, spec in CALLS.items():
        fails, records[name] = check(name, spec, patched, unpatched)
        print(f"{'FAIL' if fails else 'ok  '} {name}: timings on {', '.join(records[name].get('timings_on') or ['nothing'])}")
        for f in fails:
            print(f"     {f}")
        bad += bool(fails)
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"openai": openai.__version__, "anthropic": anthropic.__version__, "calls": records}, f, indent=1)
    print(f"{len(CALLS) - bad} passed, {bad} failed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
