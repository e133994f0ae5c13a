#!/usr/bin/env python3
"""Check that the code vllm-timings inserted only reads names bound before it.

    scripts/compat-names.py FILE...

For each block between "# >>> vllm-timings" and "# <<< vllm-timings" markers
in a patched file, every name the block reads must be, in the function that
holds it, a parameter or a name assigned on an earlier line (in any branch),
or a module-level name or a builtin. py_compile and pyflakes cannot see a
name that exists in the function but is only bound after the insertion, or
one that a vLLM refactor renamed to a module global; this does. In a
nested function, the names the enclosing functions bind before the nested
def count too (the block reads them through the closure). It reads the
source only (ast), never imports it.

Prints one line per problem and exits 1 if there is any; prints nothing and
exits 0 otherwise. Used by scripts/compat for its "names bound" column.
"""

import ast
import builtins
import sys


def bound_names(node, before_line):
    """Names a function binds on lines before before_line (params always)."""
    names = set()
    args = node.args
    for a in args.posonlyargs + args.args + args.kwonlyargs:
        names.add(a.arg)
    if args.vararg:
        names.add(args.vararg.arg)
    if args.kwarg:
        names.add(args.kwarg.arg)
    for n in ast.walk(node):
        line = getattr(n, "lineno", None)
        if line is None or line >= before_line:
            continue
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            names.add(n.id)
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            for a in n.names:
                names.add((a.asname or a.name).split(".")[0])
        elif isinstance(n, ast.ExceptHandler) and n.name:
            names.add(n.name)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n is not node:
            names.add(n.name)
    return names


def module_names(tree):
    names = set(dir(builtins))
    for n in tree.body:
        if isinstance(n, (ast.Import, ast.ImportFrom)):
            for a in n.names:
                names.add((a.asname or a.name).split(".")[0])
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(n.name)
        else:
            for t in ast.walk(n):
                if isinstance(t, ast.Name) and isinstance(t.ctx, ast.Store):
                    names.add(t.id)
    return names


def blocks(lines):
    """(first, last) 1-based line numbers of the code inside each marked block."""
    start = None
    for i, line in enumerate(lines, 1):
        s = line.strip()
        if s.startswith("# >>> vllm-timings"):
            start = i + 1
        elif s.startswith("# <<< vllm-timings") and start is not None:
            yield start, i - 1
            start = None


def enclosing_functions(tree, line):
    """The functions that hold line, innermost first."""
    found = [n for n in ast.walk(tree)
             if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.lineno <= line <= n.end_lineno]
    return sorted(found, key=lambda n: n.lineno, reverse=True)


def enclosing_function(tree, line):
    found = enclosing_functions(tree, line)
    return found[0] if found else None


def check(path):
    src = open(path, encoding="utf-8").read()
    tree = ast.parse(src, path)
    lines = src.splitlines()
    globals_ = module_names(tree)
    problems = []
    for first, last in blocks(lines):
        chain = enclosing_functions(tree, first)
        fn = chain[0] if chain else None
        bound = bound_names(fn, first) if fn is not None else set()
        for inner, outer in zip(chain, chain[1:]):
            bound |= bound_names(outer, inner.lineno)
        comp_vars = set()
        for n in ast.walk(tree):
            line = getattr(n, "lineno", 0)
            if not first <= line <= last:
                continue
            if isinstance(n, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
                for gen in n.generators:
                    for t in ast.walk(gen.target):
                        if isinstance(t, ast.Name):
                            comp_vars.add(t.id)
        for n in ast.walk(tree):
            line = getattr(n, "lineno", 0)
            if not first <= line <= last:
                continue
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
                if n.id in bound or n.id in globals_ or n.id in comp_vars:
                    continue
                where = fn.name if fn is not None else "module"
                problems.append(f"{path}:{line}: {n.id!r} is not bound before line {first} in {where}")
    return problems


def main():
    if set(sys.argv[1:]) & {"-h", "--help"} or not sys.argv[1:]:
        print(__doc__.strip())
        sys.exit(0 if sys.argv[1:] else 2)
    problems = []
    for path in sys.argv[1:]:
        problems += check(path)
    for p in problems:
        print(p)
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
