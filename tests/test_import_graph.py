"""The import graph of ``src/tokenloom``: no cycles, the CLI layer on top, private names kept private.

Every module is parsed with ``ast`` (nothing is imported). An import is an edge from the importing module
to the module it names: ``import a.b`` and ``from a import b`` (when ``a.b`` is a module) point to
``a.b``, ``from a.b import name`` to ``a.b``; relative imports are resolved against the importer's
package. Imports anywhere count — module level and inside functions — and so does a package
``__init__``'s lazy table (``_LAZY``: name -> module, imported on first access). Implicit imports of the
parent packages are not edges: a package ``__init__`` only names its own exports.

The rules:

1. **No cycle between modules** (a strongly connected component of two or more modules).
2. **No cycle between parts.** A part is a subpackage (``tokenloom.text``, ``tokenloom.fertility``,
   ``tokenloom.encoder``, ``tokenloom.vision``, ``tokenloom.costs``, ``tokenloom.explain``) or one
   top-level module (``tokenloom.errors``, ``tokenloom._atomic``, ...). The top layer — the root
   ``tokenloom/__init__.py`` (the public API), ``tokenloom.cli``, ``tokenloom.__main__`` and
   ``tokenloom._commands.*`` (the CLI) — may import anything; no library module imports it.
3. **Private modules stay in their package.** A module whose dotted path has a component starting with
   ``_`` (``tokenloom.encoder._pattern_base``, ``tokenloom.vision._optim``) belongs to the package that
   holds that component (``tokenloom.encoder``, ``tokenloom.vision``): only modules inside that package
   import it. Its public names are shared inside the package (``_pattern_tiles.merge_runs`` is fine from
   ``encoder.patterns``). Top-level private modules (``tokenloom._atomic``, ``tokenloom._lazy``) belong to
   ``tokenloom`` itself and are shared by every part.
4. **Private names stay in their module.** No module imports an underscore name (``from
   tokenloom.costs.formulas import _count``) or reads one off an imported module
   (``formulas._count``); dunder names (``__version__``) are public.

5. **Imports inside functions only for heavy dependencies.** A library module imports at module level;
   an import inside a function is kept for a heavy third-party package (``HEAVY``: loading it costs
   start-up time and memory) or for a tokenloom module that loads one at import (through its
   module-level imports of tokenloom modules, its parent packages included). Package ``__init__``
   files and the top layer may import anywhere (they keep ``import tokenloom`` and ``tokenloom --help``
   fast).

Imports under ``if TYPE_CHECKING:`` never run: they are annotations, so they do not count for rules 1,
2 and 5; they are imports a reader follows, so they count for rules 3 and 4.

Scripts and tests (all their imports, ``TYPE_CHECKING`` ones included):

6. **Scripts use public names only**: no private module, no private name (a script is what a user
   writes; what it needs is part of the API).
7. **A test reaches into one part at most.** A test file is the unit test of one part of tokenloom and may
   use that part's private modules and names; everything else it uses through public names. For this
   rule the top-level modules and the CLI layer are one part, the core (a CLI test patches a subcommand's
   ``run`` and checks ``_tables``), each subpackage another.
"""

from __future__ import annotations

import ast
import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src"
PACKAGE = "tokenloom"
TOP_LAYER = ("tokenloom", "tokenloom.cli", "tokenloom.__main__", "tokenloom._commands")

# Third-party packages (top-level import names) imported lazily: the machine-learning stack, the dataframe
# and plotting stack, the distributed runtime and ICU (PyICU), each costing start-up time and memory that
# a command not using it should not pay; and the tokenizer engines, loaded only when a tokenizer of that
# engine is used: tokenizers, sentencepiece with protobuf (``google.protobuf``, its model format),
# tiktoken, transformers, gigatoken with awkward (its array type), and ``regex`` (the split-pattern engine tiktoken-style tokenizers run, read
# only to check a custom pattern beside the tokenizers engine).
HEAVY = frozenset(
    {
        "torch", "torchvision", "pandas", "matplotlib", "ray", "triton", "icu", "timm", "webdataset", "pyarrow",
        "datasets", "tokenizers", "sentencepiece", "google", "tiktoken", "transformers", "regex", "gigatoken",
        "awkward",
    }
)  # fmt: skip


def _modules() -> dict[str, Path]:
    """Dotted module name -> file, for every module of ``src/tokenloom`` (packages by their ``__init__``)."""
    mods: dict[str, Path] = {}
    for path in sorted((SRC / PACKAGE).rglob("*.py")):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        mods[".".join(parts)] = path
    return mods


MODULES = _modules()
PACKAGES = {m for m, p in MODULES.items() if p.name == "__init__.py"}


@dataclass(frozen=True)
class Use:
    """One reference from a file to tokenloom: ``target`` module, and ``name`` when a name of it is used."""

    target: str
    name: str | None
    line: int
    typing_only: bool  # under ``if TYPE_CHECKING:``
    deferred: bool = False  # runs later than the module: inside a function, or a lazy table entry

    @property
    def what(self) -> str:
        return self.target + (f".{self.name}" if self.name else "")


def _resolve(dotted: str) -> str | None:
    """The longest prefix of ``dotted`` that is a tokenloom module."""
    while dotted and dotted not in MODULES:
        dotted = dotted.rpartition(".")[0]
    return dotted or None


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


@dataclass(frozen=True)
class Node:
    """One node of a module's tree, and where it runs."""

    node: ast.AST
    typing_only: bool  # under ``if TYPE_CHECKING:`` (its body; ``else`` runs)
    in_function: bool  # inside a function or lambda: runs when it is called


FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


def _walk(tree: ast.AST, typing_only: bool = False, in_function: bool = False) -> Iterator[Node]:
    """Every node below ``tree``, with where it runs."""
    inside = in_function or isinstance(tree, FUNCTIONS)
    for child in ast.iter_child_nodes(tree):
        if isinstance(child, ast.If) and _is_type_checking(child.test):
            yield Node(child, typing_only, inside)
            for stmt in child.body:
                yield Node(stmt, True, inside)
                yield from _walk(stmt, True, inside)
            for stmt in child.orelse:
                yield Node(stmt, typing_only, inside)
                yield from _walk(stmt, typing_only, inside)
            continue
        yield Node(child, typing_only, inside)
        yield from _walk(child, typing_only, inside)


def _uses(path: Path, package: str) -> list[Use]:
    """Every reference to a tokenloom module or name in ``path``; ``package`` anchors relative imports."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    uses: list[Use] = []
    aliases: dict[str, str] = {}  # local name -> tokenloom module it is bound to
    nodes = list(_walk(tree))
    for n in nodes:
        node, typing_only, deferred = n.node, n.typing_only, n.in_function
        if isinstance(node, ast.Import):
            for alias in node.names:
                target = _resolve(alias.name) if alias.name.split(".")[0] == PACKAGE else None
                if target:
                    uses.append(Use(target, None, node.lineno, typing_only, deferred))
                    if alias.asname:
                        aliases[alias.asname] = target
                    else:
                        aliases[PACKAGE] = PACKAGE
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            if base.split(".")[0] != PACKAGE or _resolve(base) is None:
                continue
            for alias in node.names:
                full = f"{base}.{alias.name}"
                if full in MODULES:
                    uses.append(Use(full, None, node.lineno, typing_only, deferred))
                    aliases[alias.asname or alias.name] = full
                else:
                    uses.append(Use(_resolve(base) or base, alias.name, node.lineno, typing_only, deferred))
        elif isinstance(node, ast.AnnAssign | ast.Assign) and path.name == "__init__.py":
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == "_LAZY" for t in targets) and node.value is not None:
                for module in ast.literal_eval(node.value).values():
                    uses.append(Use(module, None, node.lineno, typing_only, deferred=True))
    for n in nodes:  # names read off imported modules: ``formulas._count``
        node, typing_only = n.node, n.typing_only
        if isinstance(node, ast.Attribute):
            dotted = _dotted(node)
            if dotted and dotted.split(".")[0] in aliases:
                head, _, rest = dotted.partition(".")
                full = f"{aliases[head]}.{rest}"
                module = _resolve(full)
                name = full[len(module) + 1 :].split(".")[0] if module and full != module else ""
                if module and name:
                    uses.append(Use(module, name, node.lineno, typing_only))
    return uses


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        head = _dotted(node.value)
        return f"{head}.{node.attr}" if head else None
    return None


def _package_of(module: str) -> str:
    return module if module in PACKAGES else module.rpartition(".")[0]


USES = {m: _uses(p, _package_of(m)) for m, p in MODULES.items()}


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _private_owner(module: str) -> str | None:
    """The package a private module belongs to (the one holding its first private component), else None."""
    parts = module.split(".")
    for k, part in enumerate(parts[1:], start=1):
        if _private(part):
            return ".".join(parts[:k])
    return None


def _in_top_layer(module: str) -> bool:
    return any(module == top or module.startswith(top + ".") for top in TOP_LAYER[1:]) or module == PACKAGE


def _part(module: str) -> str:
    """The subpackage ``tokenloom.<x>`` a module lies in, or the top-level module itself."""
    first = ".".join(module.split(".")[:2])
    return first if first in PACKAGES or first in MODULES else module


def _runtime_edges() -> dict[str, dict[str, int]]:
    """module -> {imported module: first line} over the imports that run (not ``TYPE_CHECKING`` ones)."""
    edges: dict[str, dict[str, int]] = {m: {} for m in MODULES}
    for module, uses in USES.items():
        for use in uses:
            if not use.typing_only and use.target != module and use.target in MODULES:
                edges[module].setdefault(use.target, use.line)
    return edges


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of two or more nodes (Tarjan), each as one closed path through
    all of its nodes' shortest links, first node repeated at the end."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return [_closed_path(graph, set(c), c[0]) for c in components]


def _closed_path(graph: dict[str, set[str]], component: set[str], start: str) -> list[str]:
    """A shortest path from ``start`` back to itself inside ``component`` (breadth first)."""
    previous: dict[str, str] = {}
    frontier = [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(graph[v] & component):
                if w == start:
                    path = [v]
                    while path[-1] != start:
                        path.append(previous[path[-1]])
                    return [start, *reversed(path[:-1]), start]
                if w not in previous:
                    previous[w] = v
                    nxt.append(w)
        frontier = nxt
    raise AssertionError(f"{start} is not on a cycle")  # Tarjan's components always close


def _where(module: str, line: int) -> str:
    return f"{MODULES[module].relative_to(ROOT)}:{line}"


def _report(title: str, lines: list[str]) -> str:
    return title + ":\n  " + "\n  ".join(lines)


def test_the_graph_sees_the_package() -> None:
    edges = _runtime_edges()
    assert len(MODULES) > 100 and "tokenloom.encoder.patterns" in MODULES
    assert "tokenloom.encoder.model" in edges["tokenloom.encoder"]  # a lazy table entry is an edge
    assert "tokenloom.vision._checkpoint" in edges["tokenloom.vision._loop"]  # a module-level import
    assert any(
        u.target == "tokenloom.encoder.config" and u.typing_only for u in USES["tokenloom.costs.formulas"]
    )
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set()}) == [["a", "b", "c", "a"]]
    heavy = _heavy_modules()
    assert heavy["tokenloom.encoder.attention._triton_jit"] == "triton"  # imported at module level
    assert "tokenloom.encoder.attention.tuning" in heavy  # its parent package imports torch
    assert "tokenloom.errors" not in heavy and "tokenloom" not in heavy  # lazy tables load nothing
    assert any(u.deferred for u in USES["tokenloom.encoder"])  # a lazy table entry runs later
    assert _private_owner("tokenloom.vision._optim") == "tokenloom.vision"
    assert (
        _private_owner("tokenloom._atomic") == "tokenloom" and _private_owner("tokenloom.corpus.load") is None
    )


def test_no_cycle_between_modules() -> None:
    edges = _runtime_edges()
    cycles = _cycles({m: set(e) for m, e in edges.items()})
    lines = [
        " -> ".join(c)
        + "\n"
        + "\n".join(f"      {a} -> {b} at {_where(a, edges[a][b])}" for a, b in itertools.pairwise(c))
        for c in cycles
    ]
    assert not cycles, _report("import cycles between modules (move what both need into a leaf)", lines)


def test_the_library_does_not_import_the_top_layer() -> None:
    edges = _runtime_edges()
    bad = [
        f"{a} -> {b} at {_where(a, line)}"
        for a, targets in edges.items()
        if not _in_top_layer(a)
        for b, line in targets.items()
        if _in_top_layer(b)
    ]
    assert not bad, _report("library modules import the public API root or the CLI layer", bad)


def test_no_cycle_between_parts() -> None:
    edges = _runtime_edges()
    links: dict[str, set[str]] = {}
    via: dict[tuple[str, str], list[str]] = {}
    for a, targets in edges.items():
        for b, line in targets.items():
            pa, pb = _part(a), _part(b)
            if pa != pb and not _in_top_layer(a) and not _in_top_layer(b):
                links.setdefault(pa, set()).add(pb)
                links.setdefault(pb, set())
                via.setdefault((pa, pb), []).append(f"{a} -> {b} at {_where(a, line)}")
    cycles = _cycles(links)
    lines = [
        " -> ".join(c) + "".join(f"\n      {e}" for a, b in itertools.pairwise(c) for e in via[a, b])
        for c in cycles
    ]
    assert not cycles, _report("import cycles between packages (make the dependency one-way)", lines)


def _private_uses(uses: list[Use]) -> Iterator[tuple[Use, str]]:
    """The private modules and private names among ``uses``, each with the part they belong to."""
    for use in uses:
        if (use.name and _private(use.name)) or _private_owner(use.target):
            yield use, _part(use.target)


def test_private_modules_stay_in_their_package() -> None:
    bad = []
    for module, uses in USES.items():
        for use in uses:
            owner = _private_owner(use.target)
            if owner and not (module == owner or module.startswith(owner + ".")):
                bad.append(f"{_where(module, use.line)}: {module} imports {use.target}, private to {owner}")
    assert not bad, _report(
        "private modules imported from another package (give it a public home)", sorted(set(bad))
    )


def test_private_names_stay_in_their_module() -> None:
    bad = sorted(
        {
            f"{_where(module, use.line)}: {module} uses {use.what}"
            for module, uses in USES.items()
            for use in uses
            if use.name and _private(use.name) and use.target != module
        }
    )
    assert not bad, _report("underscore names used outside their module (make them public in a leaf)", bad)


@dataclass(frozen=True)
class External:
    """One import of a package outside tokenloom (the standard library included)."""

    package: str  # its top-level name: ``torch`` for ``from torch.nn import functional``
    line: int
    deferred: bool  # inside a function


def _externals(path: Path) -> list[External]:
    """The imports of ``path`` that run (not ``TYPE_CHECKING`` ones) of packages other than tokenloom."""
    found = []
    for n in _walk(ast.parse(path.read_text(encoding="utf-8"))):
        if n.typing_only:
            continue
        if isinstance(n.node, ast.Import):
            names = [alias.name for alias in n.node.names]
        elif isinstance(n.node, ast.ImportFrom) and not n.node.level and n.node.module:
            names = [n.node.module]
        else:
            continue
        found += [External(name.split(".")[0], n.node.lineno, n.in_function) for name in names]
    return [e for e in found if e.package != PACKAGE]


EXTERNALS = {m: _externals(p) for m, p in MODULES.items()}


def _parents(module: str) -> list[str]:
    """The packages Python imports before ``module`` (``tokenloom``, ``tokenloom.text``, ...)."""
    parts = module.split(".")
    return [".".join(parts[:k]) for k in range(1, len(parts))]


def _heavy_modules() -> dict[str, str]:
    """tokenloom module -> a ``HEAVY`` package that importing it loads: imported at module level by it, by
    a tokenloom module it imports at module level, or by one of their parent packages (to a fixed point)."""
    heavy = {
        m: e.package for m, found in EXTERNALS.items() for e in found if not e.deferred and e.package in HEAVY
    }
    loads = {
        m: {u.target for u in uses if not u.typing_only and not u.deferred} | set(_parents(m))
        for m, uses in USES.items()
    }
    changed = True
    while changed:
        changed = False
        for module, targets in loads.items():
            if module not in heavy:
                via = next((heavy[t] for t in sorted(targets) if t in heavy), None)
                if via:
                    heavy[module], changed = via, True
    return heavy


def _may_import_anywhere(module: str) -> bool:
    return module in PACKAGES or _in_top_layer(module)


def test_imports_inside_functions_are_for_heavy_dependencies_only() -> None:
    heavy = _heavy_modules()
    bad = set()
    for module in MODULES:
        if _may_import_anywhere(module):
            continue
        for use in USES[module]:
            if use.deferred and not use.typing_only and use.target != module and use.target not in heavy:
                bad.add(f"{_where(module, use.line)}: {use.target} loads no heavy package")
        for ext in EXTERNALS[module]:
            if ext.deferred and ext.package not in HEAVY:
                bad.add(f"{_where(module, ext.line)}: {ext.package} is not a heavy package")
    assert not bad, _report(
        "imports inside functions that should be at module level (move them there; if that makes a cycle,"
        " move what both modules need into a leaf module)",
        sorted(bad),
    )


def _outside_files(folder: str) -> list[Path]:
    return sorted(p for p in (ROOT / folder).rglob("*.py") if "__pycache__" not in p.parts)


def test_scripts_use_public_names_only() -> None:
    bad = sorted(
        {
            f"{path.relative_to(ROOT)}:{use.line}: {use.what}"
            for path in _outside_files("scripts")
            for use, _ in _private_uses(_uses(path, ""))
        }
    )
    assert not bad, _report("scripts use private tokenloom modules or names (use or add a public name)", bad)


def _core_or_part(part: str) -> str:
    return part if part in PACKAGES and part != PACKAGE and not _in_top_layer(part) else "the core"


def test_tests_reach_into_one_part_at_most() -> None:
    assert len(_outside_files("tests")) > 20
    bad = []
    for path in _outside_files("tests"):
        found: dict[str, list[str]] = {}
        for use, part in _private_uses(_uses(path, "")):
            found.setdefault(_core_or_part(part), []).append(f"{use.what} (line {use.line})")
        if len(found) > 1:
            detail = "; ".join(f"{part}: {', '.join(sorted(set(w)))}" for part, w in sorted(found.items()))
            bad.append(f"{path.relative_to(ROOT)} uses the private pieces of {len(found)} parts: {detail}")
    assert not bad, _report("tests use the private pieces of more than the part they test", bad)
