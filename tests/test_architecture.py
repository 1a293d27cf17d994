"""The package's rooms, read from its import graph (grimp) and its source: the kernel, the layers, the plugin API.

The rooms, from the bottom up: the kernel (``spcakit.core``), the numerics, the output, the inputs, the
analysis, the generic parts, the workflows, and the front ends at the top level (the estimator, AnnData, the
command line, plots, the plugin API, the test helpers). A module imports only from its own room or the rooms
below; the one way up is a workflow's record drawing itself through :mod:`spcakit.plotting`, imported inside
the method that draws.
"""

from __future__ import annotations

import ast
import collections
import sys
from pathlib import Path

import pytest

grimp = pytest.importorskip("grimp")

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "spcakit"
#: The rooms from the bottom up; a module outside them is a front end (the package's top level).
ROOMS = ["spcakit.core", "spcakit.numerics", "spcakit.output", "spcakit.inputs", "spcakit.analysis", "spcakit.parts",
         "spcakit.workflows"]
FRONT_ENDS = len(ROOMS)
#: The kernel's budget: at most this many lines of code and docstrings (blank and comment lines aside), and at
#: most KERNEL_LINES lines in all.
KERNEL_CODE_LINES = 2500
KERNEL_LINES = 3150
#: What the kernel may import besides the standard library and itself.
KERNEL_LIBRARIES = {"numpy", "scipy", "attrs", "pluggy"}
#: Upward imports allowed when made inside a function: (importer room, imported module) -> why.
LAZY_UPWARD = {
    ("spcakit.workflows", "spcakit.plotting"): "a result, path, CV or sweep record draws itself on request",
}


@pytest.fixture(scope="module")
def graph():
    return grimp.build_graph("spcakit", include_external_packages=False, exclude_type_checking_imports=True)


def _room(module: str) -> int:
    for index, name in enumerate(ROOMS):
        if module == name or module.startswith(name + "."):
            return index
    return FRONT_ENDS


def _room_name(module: str) -> str:
    index = _room(module)
    return ROOMS[index] if index < FRONT_ENDS else "front ends"


def _source(module: str) -> Path:
    path = ROOT.joinpath(*module.split("."))
    return path / "__init__.py" if path.is_dir() else path.with_suffix(".py")


def _imports(path: Path) -> list[tuple[ast.stmt, bool]]:
    """Every import statement of a file with whether it runs at import time (module level, not under
    ``if TYPE_CHECKING``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: list[tuple[ast.stmt, bool]] = []

    def visit(node: ast.AST, eager: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                found.append((child, eager))
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                visit(child, False)
            elif isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                visit(child, False)
            else:
                visit(child, eager)

    visit(tree, True)
    return found


def test_every_room_says_what_belongs_there_and_what_it_may_import():
    for name in ROOMS + ["spcakit"]:
        doc = ast.get_docstring(ast.parse(_source(name).read_text(encoding="utf-8"))) or ""
        assert "may be imported" in doc, f"{name}/__init__.py's docstring does not say what it may import"


def test_no_import_runs_back_up_the_rooms(graph):
    upward = {}
    for module in graph.modules:
        for imported in graph.find_modules_directly_imported_by(module):
            if imported == "spcakit" or _room(imported) <= _room(module):
                continue
            lines = {d["line_number"] for d in graph.get_import_details(importer=module, imported=imported)}
            eager = {node.lineno for node, now in _imports(_source(module)) if now}
            if (_room_name(module), imported) in LAZY_UPWARD and not lines & eager:
                continue
            upward[(module, imported)] = sorted(lines)
    assert upward == {}, f"imports back up the rooms: {upward}"


def _group(module: str) -> str:
    """A module's unit in the circle test: the subpackage below a room (``spcakit.workflows.cv``) or the module."""
    parts = module.split(".")
    return ".".join(parts[:3]) if len(parts) > 2 else ".".join(parts[:2])


def test_the_modules_import_each_other_in_no_circle(graph):
    edges = collections.defaultdict(set)
    for module in graph.modules:
        for imported in graph.find_modules_directly_imported_by(module):
            if _group(module) != _group(imported) and imported != "spcakit":
                edges[_group(module)].add(_group(imported))
    circles = []
    for start in sorted(edges):
        seen, todo = set(), list(edges[start])
        while todo:
            node = todo.pop()
            if node == start:
                circles.append(start)
                break
            if node not in seen:
                seen.add(node)
                todo.extend(edges.get(node, ()))
    assert circles == [], f"modules in an import circle: {circles}"


def test_the_kernel_imports_only_the_standard_library_its_four_libraries_and_itself():
    outside = {}
    for path in sorted((PACKAGE / "core").rglob("*.py")):
        for node, eager in _imports(path):
            if not eager:
                continue
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            for name in names:
                top = name.split(".")[0]
                if getattr(node, "level", 0) or top in sys.stdlib_module_names or top in KERNEL_LIBRARIES or top == "__future__":
                    continue
                if name == "spcakit.core" or name.startswith("spcakit.core."):
                    continue
                outside.setdefault(str(path.relative_to(ROOT)), []).append(name)
    assert outside == {}, f"the kernel imports outside itself: {outside}"


def test_the_kernel_imports_no_module_above_it_even_lazily():
    lazy = {}
    for path in sorted((PACKAGE / "core").rglob("*.py")):
        for node, _ in _imports(path):
            name = node.module if isinstance(node, ast.ImportFrom) else None
            names = [name] if name else [a.name for a in node.names]
            for imported in names:
                if imported and imported.startswith("spcakit") and not imported.startswith("spcakit.core"):
                    if not ("TYPE_CHECKING" in path.read_text() and imported == "spcakit.inputs.problem"):
                        lazy.setdefault(str(path.relative_to(ROOT)), []).append(imported)
    assert lazy == {}, f"the kernel reaches above itself: {lazy}"


def test_the_kernel_stays_within_its_budget():
    texts = [path.read_text(encoding="utf-8") for path in (PACKAGE / "core").rglob("*.py")]
    lines = sum(text.count("\n") for text in texts)
    code = sum(1 for text in texts for line in text.splitlines() if line.strip() and not line.strip().startswith("#"))
    assert code <= KERNEL_CODE_LINES, f"spcakit/core has {code} lines of code and docstrings, over {KERNEL_CODE_LINES}"
    assert lines <= KERNEL_LINES, f"spcakit/core is {lines} lines in all, over {KERNEL_LINES}"


def test_the_built_in_plugins_import_spcakit_only_through_the_plugin_api():
    reaching = {}
    for path in sorted((ROOT / "plugins").rglob("*.py")):
        if "egg-info" in str(path) or "build" in path.parts:
            continue
        for node, _ in _imports(path):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            for name in names:
                if name == "spcakit" or (name.startswith("spcakit.") and name != "spcakit.plugin_api"):
                    reaching.setdefault(str(path.relative_to(ROOT)), []).append(name)
    assert reaching == {}, f"plugins reaching past spcakit.plugin_api: {reaching}"


def test_the_plugin_api_exports_what_it_names():
    from spcakit import plugin_api

    assert sorted(plugin_api.__all__) == sorted(set(plugin_api.__all__))
    missing = [name for name in plugin_api.__all__ if not hasattr(plugin_api, name)]
    assert missing == []


def test_the_inputs_package_is_the_one_place_that_dispatches_on_the_kind_of_input(graph):
    # the sparse and Dask builders are reached only through spcakit.inputs (as_problem) and the data sets
    # (files that hold such data), never from the dense builder or the problem record
    for builder in ("spcakit.inputs.sparse", "spcakit.inputs.dask_arrays"):
        importers = graph.find_modules_that_directly_import(builder) - {"spcakit.inputs"}
        # the data sets and .npz files read sparse and Zarr data; the estimator's sparse scaling, the CLI's
        # Dask cluster option
        assert importers <= {"spcakit.inputs.datasets", "spcakit.inputs.numpy_files", "spcakit.estimator", "spcakit.cli.common"}, importers


#: A module may grow to about this many lines; above, its docstring says why it is one thing.
MODULE_LINES = 620


def test_modules_stay_small_or_say_why_they_are_one_thing():
    long = {}
    for path in sorted([*PACKAGE.rglob("*.py"), *(ROOT / "plugins").rglob("*.py")]):
        if "build" in path.parts or ".egg-info" in str(path):
            continue
        text = path.read_text(encoding="utf-8")
        lines = text.count("\n")
        if lines > MODULE_LINES and "600 lines" not in (ast.get_docstring(ast.parse(text)) or ""):
            long[str(path.relative_to(ROOT))] = lines
    assert long == {}, f"modules above {MODULE_LINES} lines whose docstring does not say why: {long}"
