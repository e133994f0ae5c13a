#!/usr/bin/env python3
"""A fake OpenAI-compatible server whose timings come from the patch itself.

It answers /v1/models, /v1/chat/completions and /v1/completions (streaming
or not) the way vLLM does, but without a model: one token per word, a prefix
cache in blocks of 16 tokens, and short real sleeps for prefill and decode.
For every request it fills RequestStateStats-like objects with real monotonic
timestamps and lets the patch's own module, _llamacpp_timings.py (by default
patcher/patchsets/llamacpp_timings.py next to this script), build the
``timings``: ``attach`` for full responses, ``StreamTracker`` for streams,
with the timings on the usage chunk when the client asked for
stream_options.include_usage and otherwise on the finish_reason chunk.

    python3 scripts/fake-openai-server.py [--module PATH] [--port 0]

It binds 127.0.0.1 only, prints "listening on http://127.0.0.1:PORT" once
ready, and serves until killed. Standard library only.
"""

import argparse
import importlib.util
import json
import os
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace

MODEL = "fake-vllm"
BLOCK = 16  # vLLM's default KV-cache block size
PREFILL_S_PER_TOKEN = 0.00005
DECODE_S_PER_TOKEN = 0.001

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_MODULE = os.path.join(HERE, "..", "patcher", "patchsets", "llamacpp_timings.py")


def load_module(path):
    # Leave no __pycache__ beside the module: it may be in a read-only or
    # shared checkout.
    sys.dont_write_bytecode = True
    spec = importlib.util.spec_from_file_location("_llamacpp_timings", path)
    if spec is None or spec.loader is None:
        sys.exit("cannot load %s" % path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class PrefixCache:
    """Token prefixes seen before, matched in whole blocks, like vLLM's."""

    def __init__(self):
        self._lock = threading.Lock()
        self._seen = []

    def lookup_and_add(self, tokens):
        with self._lock:
            best = 0
            for old in self._seen:
                n = 0
                while n < len(old) and n < len(tokens) and old[n] == tokens[n]:
                    n += 1
                best = max(best, n)
            self._seen.append(list(tokens))
        best -= best % BLOCK
        if best >= len(tokens):  # vLLM always computes the last prompt token
            best -= BLOCK
        return max(best, 0)


def tokenize(body, chat):
    if not chat:
        prompt = body.get("prompt", "")
        if isinstance(prompt, list):
            prompt = " ".join(str(p) for p in prompt)
        return str(prompt).split()
    tokens = []
    for message in body.get("messages", []):
        tokens += ["<|%s|>" % message.get("role", ""), "<|sep|>", "<|sep|>", "<|end|>"]
        tokens += str(message.get("content", "")).split()
    return tokens + ["<|assistant|>"]


class Engine:
    """Runs one fake request and keeps its RequestStateStats-like record."""

    def __init__(self, cache):
        self.cache = cache

    def start(self, body, chat):
        tokens = tokenize(body, chat)
        cached = self.cache.lookup_and_add(tokens)
        max_tokens = int(body.get("max_tokens") or 16)
        stats = SimpleNamespace(
            num_generation_tokens=0,
            arrival_time=time.time(),  # wall clock, as in vLLM's frontend
            queued_ts=time.monotonic(),
            scheduled_ts=0.0,
            first_token_ts=0.0,
            last_token_ts=0.0,
            first_token_latency=0.0,
            is_corrupted=False,
        )
        return SimpleNamespace(
            request_id="req-" + uuid.uuid4().hex[:8],
            prompt_tokens=len(tokens),
            cached=cached,
            max_tokens=max_tokens,
            stats=stats,
        )

    def generate(self, req):
        """Yields (index, text, finish_reason), updating req.stats."""
        st = req.stats
        st.scheduled_ts = time.monotonic()
        time.sleep((req.prompt_tokens - req.cached) * PREFILL_S_PER_TOKEN)
        for i in range(req.max_tokens):
            if i > 0:
                time.sleep(DECODE_S_PER_TOKEN)
            now = time.monotonic()
            if i == 0:
                st.first_token_ts = now
                st.first_token_latency = now - st.arrival_time
            st.last_token_ts = now
            st.num_generation_tokens += 1
            finish = "length" if i == req.max_tokens - 1 else None
            yield i, "blue ", finish


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timings = None  # the loaded module
    engine = None

    def log_message(self, fmt, *args):  # keep stdout for the URL line
        sys.stderr.write("%s %s\n" % (self.address_string(), fmt % args))

    def send_json(self, status, obj):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path.rstrip("/") == "/v1/models":
            self.send_json(200, {"object": "list", "data": [{"id": MODEL, "object": "model", "owned_by": "fake"}]})
        else:
            self.send_json(404, {"error": {"message": "no route " + self.path, "code": 404}})

    def do_POST(self):
        path = self.path.rstrip("/")
        if path not in ("/v1/chat/completions", "/v1/completions"):
            self.send_json(404, {"error": {"message": "no route " + self.path, "code": 404}})
            return
        length = int(self.headers.get("Content-Length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except ValueError as e:
            self.send_json(400, {"error": {"message": "bad JSON: %s" % e, "code": 400}})
            return
        chat = path == "/v1/chat/completions"
        if body.get("stream"):
            self.stream(body, chat)
        else:
            self.full(body, chat)

    def usage(self, req, completion_tokens):
        return SimpleNamespace(
            prompt_tokens=req.prompt_tokens,
            completion_tokens=completion_tokens,
            total_tokens=req.prompt_tokens + completion_tokens,
            prompt_tokens_details=SimpleNamespace(cached_tokens=req.cached),
        )

    @staticmethod
    def usage_json(u):
        return {
            "prompt_tokens": u.prompt_tokens,
            "completion_tokens": u.completion_tokens,
            "total_tokens": u.total_tokens,
            "prompt_tokens_details": {"cached_tokens": u.prompt_tokens_details.cached_tokens},
        }

    def full(self, body, chat):
        req = self.engine.start(body, chat)
        text, finish, n = "", None, 0
        for _, piece, finish in self.engine.generate(req):
            text += piece
            n += 1
        response = SimpleNamespace(usage=self.usage(req, n))
        # What the patch does for a full response: counts from usage, stats
        # of the request, cached tokens from RequestOutput.num_cached_tokens.
        self.timings.attach(response, req.stats, req.cached)
        if chat:
            choice = {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish}
            obj = "chat.completion"
        else:
            choice = {"index": 0, "text": text, "finish_reason": finish}
            obj = "text_completion"
        out = {
            "id": "cmpl-" + req.request_id,
            "object": obj,
            "created": int(time.time()),
            "model": body.get("model", MODEL),
            "choices": [choice],
            "usage": self.usage_json(response.usage),
        }
        if getattr(response, "timings", None) is not None:
            out["timings"] = response.timings
        self.send_json(200, out)

    def stream(self, body, chat):
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        req = self.engine.start(body, chat)
        tracker = self.timings.StreamTracker()
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

        def send(obj):
            self.write_chunk(("data: %s\n\n" % json.dumps(obj)).encode())

        def chunk(choice):
            return {
                "id": "cmpl-" + req.request_id,
                "object": "chat.completion.chunk" if chat else "text_completion",
                "created": int(time.time()),
                "model": body.get("model", MODEL),
                "choices": [choice] if choice is not None else [],
            }

        if chat:
            send(chunk({"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}))
        n = 0
        for i, piece, finish in self.engine.generate(req):
            n += 1
            tracker.observe(SimpleNamespace(
                request_id=req.request_id,
                metrics=req.stats,
                num_cached_tokens=req.cached,
                outputs=[SimpleNamespace(index=0, finish_reason=finish)],
            ))
            if chat:
                choice = {"index": 0, "delta": {"content": piece}, "finish_reason": finish}
            else:
                choice = {"index": 0, "text": piece, "finish_reason": finish}
            out = chunk(choice)
            if finish is not None and not include_usage and tracker.finish_chunk(1):
                holder = SimpleNamespace()
                tracker.attach(holder, req.prompt_tokens, n)
                if getattr(holder, "timings", None) is not None:
                    out["timings"] = holder.timings
            send(out)
        if include_usage:
            usage = self.usage(req, n)
            holder = SimpleNamespace(usage=usage)
            tracker.attach(holder)
            out = chunk(None)
            out["usage"] = self.usage_json(usage)
            if getattr(holder, "timings", None) is not None:
                out["timings"] = holder.timings
            send(out)
        self.write_chunk(b"data: [DONE]\n\n")
        self.write_chunk(b"")

    def write_chunk(self, data):
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--module", default=DEFAULT_MODULE,
                        help="path of the patch's _llamacpp_timings.py (default: %(default)s)")
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1; 0 picks a free one")
    args = parser.parse_args()

    Handler.timings = load_module(args.module)
    Handler.engine = Engine(PrefixCache())
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    print("listening on http://127.0.0.1:%d" % server.server_address[1], flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
