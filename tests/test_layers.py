"""The layering the design names: data/ imports nothing above it, models/ nothing from training/ or
app/, no import cycle inside models/ (function-level imports included: a cycle hidden in a function
still ties two modules together), and the label constants of data/labels.py written nowhere else."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _modules(package: str) -> dict[str, ast.Module]:
    out = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = ast.parse(path.read_text(encoding="utf-8"), str(path))
    return out


def _type_checking_only(tree: ast.Module) -> set[int]:
    """ids of the nodes inside `if TYPE_CHECKING:` blocks: imports for annotations, never executed."""
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            skip |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
    return skip


def _imports(name: str, tree: ast.Module) -> set[str]:
    """Every module `name` imports, anywhere in its body (relative imports resolved), except the
    annotation-only imports under `if TYPE_CHECKING:`."""
    found = set()
    skip = _type_checking_only(tree)
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                pkg = name.split(".")[: -node.level] if not name.endswith("__init__") else name.split(".")
                base = ".".join(pkg + ([base] if base else []))
            found.add(base)
            found |= {f"{base}.{a.name}" for a in node.names}      # `from pkg import module`
    return found


def _graph(package: str) -> dict[str, set[str]]:
    mods = _modules(package)
    return {m: {i for i in _imports(m, tree) if i in mods and i != m} for m, tree in mods.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))
    for v in graph:
        if v not in index:
            visit(v)
    return out


def _without_packages(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """A package's __init__ re-exporting its submodules is not a cycle with them: drop the edges from a
    package to its own submodules."""
    return {m: {i for i in deps if not i.startswith(m + ".")} for m, deps in graph.items()}


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_cycle_inside_models():
    graph = _without_packages(_graph("models"))
    assert "models.extraction" in graph["models.extractor"]          # the scan sees the imports
    assert _cycles(graph) == []


def test_no_import_cycle_inside_data():
    assert _cycles(_without_packages(_graph("data"))) == []


def test_lower_layers_import_nothing_above_them():
    above = {"data": ("models", "training", "app", "bench"), "models": ("training", "app", "bench")}
    for package, forbidden in above.items():
        for name, tree in _modules(package).items():
            bad = sorted(i for i in _imports(name, tree) if i.split(".")[0] in forbidden)
            assert not bad, f"{name} imports {bad}"


def test_label_constants_are_written_only_in_data_labels():
    """-100, "items." and the colon set are spelt out only in data/labels.py (the page generator in
    data/synth/ prints keys with colons of its own choosing, and is not scanned)."""
    found = []
    for package in ("data", "models", "training"):
        for path in sorted((ROOT / package).rglob("*.py")):
            if path == ROOT / "data" / "labels.py" or (ROOT / "data" / "synth") in path.parents:
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) \
                        and isinstance(node.operand, ast.Constant) and node.operand.value == 100:
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno} -100")
                elif isinstance(node, ast.Constant) and node.value in ("items.", ":：", "：:"):
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.value!r}")
    assert found == []
