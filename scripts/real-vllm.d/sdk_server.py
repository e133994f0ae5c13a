"""vLLM's own HTTP server on level 2's fake engine, for clients that need HTTP.

    python sdk_server.py --port PORT [--site DIR] [--ready FILE] [-- VLLM_SERVE_ARGS...]

Serves on 127.0.0.1:PORT what `vllm serve` serves, built the way `vllm
serve` builds it once its engine is up: vLLM's own argument parser reads
the serve arguments (`--model tiny --served-model-name tiny` and whatever
follows `--`), and vLLM's own build_and_serve (0.33 on; before it,
build_app + init_app_state + serve_http of vllm.entrypoints.openai.
api_server) builds the FastAPI app with all its routers, middleware and
exception handlers, builds every serving class through vLLM's own
init_app_state, and runs uvicorn. Only two things are not vLLM's:

  * the engine: level2.FakeEngine, whose generate() yields real
    RequestOutputs with real RequestStateStats at chosen times (exact,
    known timings); and
  * prompt rendering (no tokenizer or chat template here): vLLM's
    OnlineRenderer is replaced, where init_app_state builds it, by
    level2.FakeOnlineRenderer, which renders token-id prompts.

Which engine script a request gets is chosen by its content: the first
"sdk:NAME" in the request names a case of CASES (sdk_cases.py), whose
prompts, finish reason and stats the fake engine plays; the request's own
"stream" says whether the engine streams (DELTA) or gives only the final
output. Requests are served one at a time (the engine has one script).

--site DIR puts DIR first on sys.path (a copy of the vllm package, patched
or not). --ready FILE is written once the server answers, with its URL.
Used by scripts/real-vllm --level sdk; others may use it to get real
vLLM HTTP responses without a GPU or a model.
"""

import argparse
import asyncio
import os
import re
import sys
from types import SimpleNamespace

HERE = os.path.dirname(os.path.abspath(__file__))


def parse(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--site", help="a directory with a vllm package, first on sys.path")
    p.add_argument("--ready", help="a file to write the server's URL to once it answers")
    p.add_argument("serve_args", nargs="*", help="more `vllm serve` arguments (after --)")
    return p.parse_args(argv)


def serve_args(port, extra):
    """vLLM's own parse of `vllm serve tiny --served-model-name tiny ...`."""
    try:
        from vllm.entrypoints.openai.cli_args import make_arg_parser, validate_parsed_serve_args
    except ImportError:  # the layout of 0.33 on moved them
        from vllm.entrypoints.common.cli_args import make_arg_parser, validate_parsed_serve_args
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    parser = make_arg_parser(FlexibleArgumentParser())
    args = parser.parse_args(["--model", "tiny", "--served-model-name", "tiny", "--host", "127.0.0.1",
                              "--port", str(port), *extra])
    validate_parsed_serve_args(args)
    return args


class CaseEngine:
    """level2.FakeEngine, with what vLLM's app builder asks of an engine
    client besides generate(): its config, its tasks and its stats hook."""

    def __init__(self, engine):
        self._engine = engine
        self.model_config = engine.model_config = ModelConfig(
            **vars(engine.model_config), architecture="LlamaForCausalLM")
        self.renderer = engine.renderer
        self.vllm_config = _vllm_config(self.model_config)

    def __getattr__(self, name):
        return getattr(self._engine, name)

    async def get_supported_tasks(self):
        return ("generate",)

    async def do_log_stats(self, *args, **kwargs):
        return None

    async def reset_mm_cache(self):
        return None

    def shutdown(self, timeout=None):
        return None  # SIGTERM: serve_http stops the engine client, then uvicorn

    def generate(self, *args, **kwargs):
        return self._engine.generate(*args, **kwargs)


class ModelConfig(SimpleNamespace):
    """level2's model config, with what the app's routers ask of it."""

    def get_pooling_task(self, supported_tasks):
        return None  # a generative model: no pooling routes


def _vllm_config(model_config):
    return SimpleNamespace(model_config=model_config, lora_config=None, parallel_config=None,
                           scheduler_config=None, cache_config=None, speculative_config=None,
                           observability_config=None, shutdown_timeout=0)


def fake_parts(level2):
    """level2's fake engine, its renderer class and that class's arguments
    (level2 as named classes, or, in its older layout, the parts of its
    harness())."""
    if hasattr(level2, "FakeEngine"):
        engine = level2.FakeEngine()
        return engine, level2.FakeOnlineRenderer, (engine,)
    h = level2.harness()
    return h.engine, type(h.chat.online_renderer), ()


def case_renderer(renderer_cls, renderer_args, cases, engine):
    """level2's FakeOnlineRenderer that first sets the engine's script from
    the case the request names ("sdk:NAME" anywhere in it)."""

    class CaseRenderer(renderer_cls):
        def _pick(self, request):
            text = request.model_dump_json() if hasattr(request, "model_dump_json") else repr(request)
            m = re.search(r"sdk:([A-Za-z0-9_.-]+)", text)
            if not m or m.group(1) not in cases:
                raise ValueError(f"the request names no known case (sdk:NAME): {text[:200]}")
            case = cases[m.group(1)]
            script = dict(case["engine"], stream=bool(getattr(request, "stream", False)), next=0)
            engine._engine.script = script

        async def render_chat(self, request, *a, **k):
            self._pick(request)
            return await super().render_chat(request)

        async def render_completion(self, request, *a, **k):
            self._pick(request)
            return await super().render_completion(request)

        async def render_responses(self, request, *a, **k):
            self._pick(request)
            return await super().render_responses(request, **k)

        async def preprocess_chat(self, request, messages, *a, **k):
            self._pick(request)
            return await super().preprocess_chat(request, messages, **k)

        def warmup(self):
            return None

    return CaseRenderer(*renderer_args)


async def serve(args, level2, cases):
    fake, renderer_cls, renderer_args = fake_parts(level2)
    engine = CaseEngine(fake)
    renderer = case_renderer(renderer_cls, renderer_args, cases, engine)
    vargs = serve_args(args.port, args.serve_args)
    try:  # 0.33 on
        from vllm.entrypoints.launchers.api_server import app_state
        from vllm.entrypoints.launchers.api_server.entry import build_and_serve
        from vllm.entrypoints.launchers.launcher import setup_server
    except ImportError:
        from vllm.entrypoints.openai import api_server as app_state
        from vllm.entrypoints.openai.api_server import build_and_serve, setup_server

    # The renderer stands in where init_app_state builds vLLM's (and the
    # de-renderer, which would want a tokenizer too).
    app_state.OnlineRenderer = lambda *a, **k: renderer
    if hasattr(app_state, "OnlineDerenderer"):
        app_state.OnlineDerenderer = lambda *a, **k: renderer
    listen_address, sock = setup_server(vargs, reuse_port=False)
    if args.ready:
        _TASKS.add(asyncio.get_running_loop().create_task(_announce(args.port, args.ready)))
    # Until the server stops (SIGTERM or SIGINT), as in `vllm serve`.
    shutdown = await build_and_serve(engine, listen_address, sock, vargs)
    await shutdown


_TASKS = set()  # the tasks started here, kept from the garbage collector


async def _announce(port, path):
    """Write path once the server accepts connections on port."""
    for _ in range(600):
        try:
            _, w = await asyncio.open_connection("127.0.0.1", port)
            w.close()
            break
        except OSError:
            await asyncio.sleep(0.1)
    with open(path + ".tmp", "w") as f:
        f.write(f"http://127.0.0.1:{port}\n")
    os.replace(path + ".tmp", path)


def main(argv):
    args = parse(argv)
    if args.site:
        sys.path.insert(0, args.site)
    sys.path.insert(0, HERE)
    os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")
    import level2
    from sdk_cases import CASES

    asyncio.run(serve(args, level2, CASES))


if __name__ == "__main__":
    main(sys.argv[1:])
