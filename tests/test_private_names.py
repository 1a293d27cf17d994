"""No module of the package imports another module's private name: what one module needs from
another is public there, so that the modules' interfaces are what their names say."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "spcakit"


def test_no_module_imports_another_modules_private_name():
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("spcakit"):
                found += [f"{path.relative_to(ROOT.parent)}:{node.lineno} {node.module}.{alias.name}"
                          for alias in node.names if alias.name.startswith("_") and not alias.name.startswith("__")]  # fmt: skip
    assert found == []
