"""normfuse's import graph, read from the source with `ast`: import cycles and imports that look
up the layer stack. What `test/python/test_layering.py` checks, and a report on the command line:

    PYTHONPATH=python python3 -m normfuse.testing.layers

Every import statement counts, at module level or inside a function (a function-local import
runs when the function does: it is a dependency like any other, and one that closes a cycle
hides it from a module-level reading only). `from pkg import name` depends on `pkg.name` when
that is a module, else on `pkg` itself; every module also depends on its package (Python imports
the package first), which is not counted as an edge to keep `pkg/__init__.py` re-exporting its
children from reading as a cycle.

Layers, bottom up (`LAYERS`): a module may import from its own layer and the ones below it. The
order is normfuse's: device facts and the pure-torch references at the bottom, then the IR, the
launch needs the passes declare, the passes, their lowerings (backends), the compiler driver
(pipeline, compiler, the CLI and the package's public root), the naive kernels, the torch ops,
the CPU test support, the modules, the reproduction scripts.
"""
from __future__ import annotations

import ast
import os
from dataclasses import dataclass

PACKAGE = "normfuse"

# (layer name, module prefixes); a module belongs to the layer of its longest matching prefix.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("low", ("normfuse.device", "normfuse.direct_launch", "normfuse.reference",
             "normfuse.reference_attention", "normfuse.version")),
    ("ir", ("normfuse.ir",)),
    ("launch", ("normfuse.launch",)),
    ("passes", ("normfuse.passes",)),
    ("lowering", ("normfuse.lowering",)),
    ("compiler", ("normfuse.pipeline", "normfuse.compiler", "normfuse.cli", "normfuse")),
    ("kernels", ("normfuse.kernels",)),
    ("ops", ("normfuse.ops",)),
    ("testing", ("normfuse.testing",)),
    ("nn", ("normfuse.nn",)),
    ("repro", ("normfuse.repro",)),
)


@dataclass(frozen=True)
class Import:
    src: str        # importing module
    dst: str        # imported normfuse module
    line: int
    local: bool     # inside a function (or class body), not at module level


def package_root() -> str:
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def modules(root: str | None = None) -> dict[str, str]:
    """module name -> file, for every .py file of the package."""
    root = root or package_root()
    base = os.path.dirname(root)
    out = {}
    for d, _, files in os.walk(root):
        for f in files:
            if f.endswith(".py"):
                path = os.path.join(d, f)
                rel = os.path.relpath(path, base)[:-3].replace(os.sep, ".")
                out[rel[: -len(".__init__")] if rel.endswith(".__init__") else rel] = path
    return out


def _is_package(name: str, mods: dict[str, str]) -> bool:
    return mods.get(name, "").endswith("__init__.py")


def _resolve(src: str, mods: dict[str, str], level: int, module: str | None) -> str:
    if level == 0:
        return module or ""
    pkg = src if _is_package(src, mods) else src.rpartition(".")[0]
    for _ in range(level - 1):
        pkg = pkg.rpartition(".")[0]
    return f"{pkg}.{module}" if module else pkg


def imports(mods: dict[str, str] | None = None) -> list[Import]:
    """Every import of a normfuse module by a normfuse module."""
    mods = mods if mods is not None else modules()
    out: list[Import] = []
    for src, path in sorted(mods.items()):
        with open(path) as f:
            tree = ast.parse(f.read(), path)
        local_nodes = set()
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                for sub in ast.walk(node):
                    if sub is not node:
                        local_nodes.add(id(sub))
        for node in ast.walk(tree):
            targets = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _resolve(src, mods, node.level, node.module)
                for a in node.names:
                    sub = f"{base}.{a.name}"
                    targets.append(sub if sub in mods else base)
            for t in targets:
                if not (t == PACKAGE or t.startswith(PACKAGE + ".")):
                    continue
                while t not in mods and "." in t:  # `import normfuse.x.y` of a non-module name
                    t = t.rpartition(".")[0]
                if t == src or src.startswith(t + ".") and _is_package(t, mods) and t != PACKAGE:
                    continue  # a module's own package (imported first anyway)
                out.append(Import(src, t, node.lineno, id(node) in local_nodes))
    return out


def layer_of(module: str) -> int:
    best, depth = None, -1
    for i, (_, prefixes) in enumerate(LAYERS):
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and len(p) > depth:
                best, depth = i, len(p)
    if best is None:
        raise KeyError(f"module {module} is in no layer of normfuse.testing.layers.LAYERS")
    return best


def upward(edges: list[Import]) -> list[Import]:
    """Imports from a module to a module of a higher layer."""
    return [e for e in edges if layer_of(e.dst) > layer_of(e.src)]


def cycles(edges: list[Import]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), sorted."""
    graph: dict[str, set[str]] = {}
    for e in edges:
        graph.setdefault(e.src, set()).add(e.dst)
        graph.setdefault(e.dst, set())
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        work = [(v, iter(sorted(graph[v])))]
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        while work:
            node, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    break
                if w in on:
                    low[node] = min(low[node], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == node:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out)


def report(edges: list[Import] | None = None) -> str:
    edges = edges if edges is not None else imports()
    lines = []
    cyc = cycles(edges)
    lines.append(f"{len(cyc)} import cycle(s)")
    for c in cyc:
        inside = [e for e in edges if e.src in c and e.dst in c]
        lines.append("  " + " <-> ".join(c))
        for e in inside:
            lines.append(f"      {e.src}:{e.line} -> {e.dst}{' (function-local)' if e.local else ''}")
    up = upward(edges)
    lines.append(f"{len(up)} upward import(s)")
    for e in up:
        lines.append(f"  {e.src}:{e.line} ({LAYERS[layer_of(e.src)][0]}) -> {e.dst} "
                     f"({LAYERS[layer_of(e.dst)][0]}){' (function-local)' if e.local else ''}")
    return "\n".join(lines)


if __name__ == "__main__":
    print(report())
