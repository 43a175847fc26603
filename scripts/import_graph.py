"""The import graph of agentws, measured against the layers in pyproject.toml.

    scripts/import-graph [--pyproject FILE] [--list]

Prints, for the ``agentws`` package importable here (the checkout's own
when run from its root; ``PYTHONPATH=<other checkout>`` measures another):

- the modules, and the import cycles between them (strongly connected
  components of more than one module), each with its size;
- the upward imports: an import from a module to one in a higher layer of
  the ``layers`` contract (``[tool.importlinter]`` in pyproject.toml), or
  between two layers marked independent (``a | b``);
- the modules in no layer, and those over 500 lines.

Type-only imports (under ``TYPE_CHECKING``) count, as they do for
``lint-imports``. Exits 1 when there is a cycle, an upward import, or a module
in no layer (a package that only holds layers, like ``agentws.doors``, needs none).
"""

from __future__ import annotations

import argparse
import importlib
import sys
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import grimp

_MAX_LINES = 500


def _layers(pyproject: Path) -> list[list[str]]:
    config = tomllib.loads(pyproject.read_text())["tool"]["importlinter"]
    for contract in config["contracts"]:
        if contract["type"] == "layers" and contract.get("id", "layers") == "layers":
            return [[part.strip() for part in line.split("|")] for line in contract["layers"]]
    raise SystemExit(f"{pyproject}: no layers contract")


def _layer_of(module: str, layers: Sequence[Sequence[str]]) -> tuple[int, str] | None:
    """(layer index, the layer entry) of the longest entry naming ``module`` or a parent."""
    best: tuple[int, str] | None = None
    for index, entries in enumerate(layers):
        for entry in entries:
            names = module == entry or module.startswith(entry + ".")
            if names and (best is None or len(entry) > len(best[1])):
                best = (index, entry)
    return best


def _holds_layers(module: str, layers: Sequence[Sequence[str]]) -> bool:
    """Whether ``module`` is a package a layer entry lies inside (``agentws.doors``)."""
    return any(entry.startswith(module + ".") for entries in layers for entry in entries)


def _cycles(edges: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="scripts/import-graph",
        description="Cycles and upward imports of agentws against the layers in pyproject.toml.",
    )
    parser.add_argument(
        "--pyproject",
        type=Path,
        default=Path(__file__).resolve().parent.parent / "pyproject.toml",
        help="where the layers contract is read (default: this checkout's)",
    )
    parser.add_argument("--list", action="store_true", help="list every upward import")
    args = parser.parse_args(argv)
    layers = _layers(args.pyproject)
    graph = grimp.build_graph("agentws", cache_dir=None)
    modules = sorted(m for m in graph.modules if m.startswith("agentws"))
    edges = {m: set(graph.find_modules_directly_imported_by(m)) for m in modules}

    cycles = _cycles(edges)
    upward: list[tuple[str, str]] = []
    for importer in modules:
        mine = _layer_of(importer, layers)
        for imported in sorted(edges[importer]):
            theirs = _layer_of(imported, layers)
            if mine is None or theirs is None or mine[1] == theirs[1]:
                continue
            above = theirs[0] < mine[0]
            if above or theirs[0] == mine[0]:  # a higher layer, or an independent sibling
                upward.append((importer, imported))
    unlayered = [
        m
        for m in modules
        if _layer_of(m, layers) is None and m != "agentws" and not _holds_layers(m, layers)
    ]
    package = Path(importlib.import_module("agentws").__file__ or "").parent
    long_files = sorted(
        (len(path.read_text().splitlines()), str(path.relative_to(package.parent)))
        for path in package.rglob("*.py")
        if len(path.read_text().splitlines()) > _MAX_LINES
    )

    print(f"package: {package}")
    print(f"modules: {len(modules)}; imports between them: {sum(len(e) for e in edges.values())}")
    print(
        f"import cycles: {len(cycles)}" + (f" (sizes {[len(c) for c in cycles]})" if cycles else "")
    )
    for cycle in cycles:
        print("  - " + ", ".join(name.removeprefix("agentws.") for name in cycle))
    print(f"upward imports (against {args.pyproject.name}'s layers): {len(upward)}")
    for importer, imported in upward if args.list else upward[:20]:
        print(f"  - {importer} -> {imported}")
    if len(upward) > 20 and not args.list:
        print(f"  … {len(upward) - 20} more (--list)")
    print(f"modules in no layer: {len(unlayered)}")
    for module in unlayered:
        print(f"  - {module}: in no layer of the contract; add its package to one")
    print(f"modules over {_MAX_LINES} lines: {len(long_files)}")
    for lines, path in long_files:
        print(f"  - {path}: {lines}")
    return 1 if cycles or upward or unlayered else 0


if __name__ == "__main__":
    sys.exit(main())
