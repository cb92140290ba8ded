"""The forms decoder's files import each other in one direction, the order forms.py's docstring states, and no
extraction file is over 400 lines (issue 35: a file a reader can hold, layers a change can reason about)."""
import ast
import re
from pathlib import Path

import models.extraction.forms as forms

EXTRACTION = Path(forms.__file__).parent


def _layers() -> list[set[str]]:
    """The layered order of forms.py's docstring: one set of module names per layer, lowest first."""
    doc = forms.__doc__ or ""
    table = doc[doc.index("import each other in one direction"):]
    out = [{"settings", "mlp"}]
    for line in table.splitlines():
        m = re.match(r"^    ((?:\w+, )*\w+)(?:\s{2,}|$)", line)
        if m:
            out.append(set(m.group(1).split(", ")))
    return out


def _imports(name: str) -> set[str]:
    """Every models.extraction module `name` imports, at the top, under TYPE_CHECKING or inside a function."""
    tree = ast.parse((EXTRACTION / f"{name}.py").read_text(encoding="utf-8"))
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("models.extraction."):
            out.add(node.module.split(".")[2])
        elif isinstance(node, ast.Import):
            out |= {a.name.split(".")[2] for a in node.names if a.name.startswith("models.extraction.")}
    return out


def test_the_forms_files_import_only_the_layers_below_them():
    layers = _layers()
    assert len(layers) >= 10 and {"form_text", "form_pieces", "form_layout", "forms", "base"} <= set().union(*layers)
    rank = {name: i for i, layer in enumerate(layers) for name in layer}
    forms_files = {p.stem for p in EXTRACTION.glob("form*.py")} | {"pair_scorer", "base", "settings", "mlp"}
    assert forms_files <= set(rank), f"forms files missing from forms.py's layer table: {forms_files - set(rank)}"
    upward = [f"{name} -> {dep}" for name in sorted(forms_files) for dep in sorted(_imports(name))
              if dep in rank and rank[dep] >= rank[name]]
    assert upward == []


def test_no_extraction_file_is_over_400_lines():
    long = {p.name: n for p in EXTRACTION.glob("*.py") if (n := len(p.read_text(encoding="utf-8").splitlines())) > 400}
    assert long == {}
