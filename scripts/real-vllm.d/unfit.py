"""Make a copy of vLLM that no patch set fits and that still serves.

    python3 unfit.py VLLM_DIR

VLLM_DIR is a copy of an installed vllm package (never the installed one:
this edits it in place). In the serving modules of chat and completions,
/v1/responses and /v1/messages, and in the v1 output processor, the local
variables the patch sets' anchors and inserted code name (res, response,
final_res, final_usage_chunk, chunk, result, new_token_ids, ...) are
renamed, consistently, within each function that binds them: what a
refactor in a future vLLM does to the anchors, and nothing to what the
code does. Only names that every binding in the function makes a plain
variable are renamed (not parameters, globals, imports, except-as or
nested defs), so the module behaves as before; each file is compiled
afterwards. Prints, per file, how many names and occurrences changed, and
exits 1 if a file that exists changed nothing (the layout is not the
one this knows).
"""

import ast
import os
import sys

# The files, in every layout (the first that exists is edited).
FILES = [
    ("chat", ["entrypoints/openai/chat_completion/serving.py", "entrypoints/openai/serving_chat.py"]),
    ("completions", ["entrypoints/openai/completion/serving.py", "entrypoints/openai/serving_completion.py"]),
    ("responses", ["entrypoints/openai/responses/serving.py", "entrypoints/openai/serving_responses.py"]),
    ("responses engine", ["entrypoints/openai/engine/serving.py", "entrypoints/openai/serving_engine.py"]),
    ("messages", ["entrypoints/anthropic/serving.py", "entrypoints/anthropic/serving_messages.py"]),
    ("output processor", ["v1/engine/output_processor.py"]),
]

NAMES = {
    "res", "response", "final_res", "final_res_batch", "final_res_batch_checked", "final_usage_chunk",
    "chunk", "result", "new_token_ids", "request_output", "event", "choice_data", "prompt_idx",
    "num_prompt_tokens", "previous_num_tokens", "finish_reason_sent", "generator", "origin_chunk",
}
SUFFIX = "_vt"


def bound_names(fn):
    """Names bound in fn's own scope, and those bound some other way than
    as a plain variable there (parameters, global/nonlocal, imports,
    except-as, nested def/class names, match captures)."""
    plain, other = set(), set()
    args = fn.args
    for a in args.posonlyargs + args.args + args.kwonlyargs + [args.vararg, args.kwarg]:
        if a is not None:
            other.add(a.arg)

    def visit(node, top):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                other.add(child.name)
                continue  # its own scope
            if isinstance(child, ast.Lambda):
                continue
            if isinstance(child, (ast.Global, ast.Nonlocal)):
                other.update(child.names)
            elif isinstance(child, (ast.Import, ast.ImportFrom)):
                other.update((a.asname or a.name).split(".")[0] for a in child.names)
            elif isinstance(child, ast.ExceptHandler) and child.name:
                other.add(child.name)
            elif hasattr(ast, "MatchAs") and isinstance(child, (ast.MatchAs, ast.MatchStar)) and child.name:
                other.add(child.name)
            elif isinstance(child, ast.Name) and isinstance(child.ctx, (ast.Store, ast.Del)):
                plain.add(child.id)
            visit(child, False)

    visit(fn, True)
    return plain - other


def occurrences(fn, names):
    """(line, col) of every Name node of names in fn, nested functions and
    lambdas included unless they rebind the name; class bodies excluded."""
    out = []

    def visit(node, names):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                continue
            inner = names
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                a = child.args
                params = {x.arg for x in a.posonlyargs + a.args + a.kwonlyargs + [a.vararg, a.kwarg] if x is not None}
                inner = names - params
            if isinstance(child, ast.Name) and child.id in inner:
                out.append((child.lineno, child.col_offset, child.id))
            visit(child, inner)

    visit(fn, names)
    return out


def rename(src):
    tree = ast.parse(src)
    edits = {}
    renamed = set()
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        names = bound_names(fn) & NAMES
        # A nested function's global or nonlocal for one of them keeps it
        # (that statement names it without a Name node to rename).
        for node in ast.walk(fn):
            if isinstance(node, (ast.Global, ast.Nonlocal)):
                names -= set(node.names)
        for pos in occurrences(fn, names):
            edits[pos[:2]] = pos[2]
        renamed |= names
    lines = src.splitlines(keepends=True)
    # Byte columns: ast's col_offset counts UTF-8 bytes.
    data = src.encode("utf-8")
    line_starts = [0]
    for line in lines:
        line_starts.append(line_starts[-1] + len(line.encode("utf-8")))
    for (line, col), name in sorted(edits.items(), reverse=True):
        at = line_starts[line - 1] + col
        assert data[at : at + len(name)] == name.encode(), (line, col, name)
        data = data[:at] + (name + SUFFIX).encode() + data[at + len(name) :]
    out = data.decode("utf-8")
    return out, len(renamed), len(edits)


def main(vllm_dir):
    bad = 0
    for label, candidates in FILES:
        path = next((os.path.join(vllm_dir, c) for c in candidates if os.path.exists(os.path.join(vllm_dir, c))), None)
        if path is None:
            print("%-16s not in this vLLM" % label)
            continue
        with open(path, encoding="utf-8") as f:
            src = f.read()
        out, names, count = rename(src)
        compile(out, path, "exec")
        with open(path, "w", encoding="utf-8") as f:
            f.write(out)
        pyc = os.path.join(os.path.dirname(path), "__pycache__")
        if os.path.isdir(pyc):
            for p in os.listdir(pyc):
                if p.startswith(os.path.basename(path)[:-3] + "."):
                    os.remove(os.path.join(pyc, p))
        print("%-16s %s: %d names, %d occurrences renamed" % (label, os.path.relpath(path, vllm_dir), names, count))
        if count == 0:
            bad = 1
    return bad


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1]))
