#!/usr/bin/env python3
"""Check the facts about a vLLM tree that vllm-timings' design relies on.

    scripts/compat-shape.py SITE      # SITE holds vllm/, patched or not

Prints three tab-separated cells for scripts/compat's table:

  extra     "ok" when OpenAIBaseModel has model_config extra="allow" and the
            four response classes derive from it without overriding extra,
            so "timings" can be set as an extra attribute without a
            protocol.py edit (and responses without stats keep their shape).
  metrics   how RequestOutput.metrics gets the request's stats: "vLLM"
            (the output processor passes metrics=self.stats), "patch" (the
            patch's link_metrics call does), or "NONE" (timings would
            always be absent).
  drafts    "yes" when CompletionOutput has spec_decode_metrics (per-request
            draft counts for draft_n/draft_n_accepted), "no" otherwise.

Reads the source only (ast), never imports it.
"""

import ast
import glob
import os
import sys

RESPONSES = {"ChatCompletionResponse", "ChatCompletionStreamResponse", "CompletionResponse", "CompletionStreamResponse"}


def parse(path):
    with open(path, encoding="utf-8") as f:
        return ast.parse(f.read(), path)


def extra_of(cls):
    """The extra= of a class's model_config = ConfigDict(...), or None."""
    for n in cls.body:
        if isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "model_config" for t in n.targets):
            if isinstance(n.value, ast.Call):
                for kw in n.value.keywords:
                    if kw.arg == "extra" and isinstance(kw.value, ast.Constant):
                        return kw.value.value
            return "?"
    return None


def check_extra(site):
    classes = {}
    for path in glob.glob(os.path.join(site, "vllm/entrypoints/**/*.py"), recursive=True):
        try:
            tree = parse(path)
        except SyntaxError:
            continue
        for n in tree.body:
            if isinstance(n, ast.ClassDef) and (n.name == "OpenAIBaseModel" or n.name in RESPONSES):
                classes.setdefault(n.name, n)
    base = classes.get("OpenAIBaseModel")
    if base is None:
        return "NO OpenAIBaseModel"
    if extra_of(base) != "allow":
        return f"OpenAIBaseModel extra={extra_of(base)!r}"
    for name in sorted(RESPONSES):
        cls = classes.get(name)
        if cls is None:
            return f"no {name}"
        if not any(isinstance(b, ast.Name) and b.id == "OpenAIBaseModel" for b in cls.bases):
            return f"{name} not an OpenAIBaseModel"
        if extra_of(cls) not in (None, "allow"):
            return f"{name} extra={extra_of(cls)!r}"
        for n in cls.body:
            if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name) and n.target.id == "timings":
                return f"{name} declares timings"
    return "ok"


def check_metrics(site):
    path = os.path.join(site, "vllm/v1/engine/output_processor.py")
    if not os.path.exists(path):
        return "NONE (no v1 output processor)"
    src = open(path, encoding="utf-8").read()
    if "_llamacpp_timings.link_metrics(" in src:
        return "patch"
    tree = ast.parse(src, path)
    for n in ast.walk(tree):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "RequestOutput":
            if any(kw.arg == "metrics" for kw in n.keywords):
                return "vLLM"
    return "NONE"


def check_drafts(site):
    tree = parse(os.path.join(site, "vllm/outputs.py"))
    for n in tree.body:
        if isinstance(n, ast.ClassDef) and n.name == "CompletionOutput":
            for f in n.body:
                if isinstance(f, ast.AnnAssign) and isinstance(f.target, ast.Name) and f.target.id == "spec_decode_metrics":
                    return "yes"
    return "no"


def main():
    if len(sys.argv) != 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        sys.exit(0 if sys.argv[1:] in (["-h"], ["--help"]) else 2)
    site = sys.argv[1]
    print("\t".join([check_extra(site), check_metrics(site), check_drafts(site)]))


if __name__ == "__main__":
    main()
