"""The package's layers, read from its import graph (grimp): no import circle, nothing imports upwards (issue 25).

From the bottom: the base modules (errors, validators, the roles, specs and experiment specs, output and plotting
helpers),
the operators and records, the problem record, the inputs package, the engine (registry, plugins,
drivers, generic parts, metrics), the composition of methods (specs configured for a run), the runs
(api, paths, cv, reproduce: every paper experiment by its spec's kind, model), and the front ends
(estimator, command line, figures, testing helpers). A module imports only from its own layer or the
layers below; a later import that goes back up the layers is listed here with its reason.
"""

from __future__ import annotations

import collections

import pytest

grimp = pytest.importorskip("grimp")

#: Layers from the bottom up; a name covers the module and its submodules.
LAYERS = [
    ["spcakit.version", "spcakit.errors", "spcakit.progress", "spcakit.thresholding", "spcakit.ties", "spcakit.index_sets", "spcakit.schema", "spcakit.validators", "spcakit.linalg",
     "spcakit.protocols", "spcakit.experiment_specs", "spcakit.specs", "spcakit.hookspecs", "spcakit.output", "spcakit.plotting"],
    ["spcakit.operators", "spcakit.state"],
    ["spcakit.problem"],
    ["spcakit.inputs"],
    ["spcakit.metrics", "spcakit.bounds", "spcakit.registry", "spcakit.drivers", "spcakit.parts", "spcakit.plugins", "spcakit.core_plugin"],
    ["spcakit.composition"],
    ["spcakit.api", "spcakit.imputation", "spcakit.paths", "spcakit.cv", "spcakit.reproduce", "spcakit.model"],
    ["spcakit.estimator", "spcakit.anndata", "spcakit.figures", "spcakit.cli", "spcakit.__main__", "spcakit.testing"],
]
#: Imports allowed to go back up the layers: (importer, imported) -> why.
UPWARD: dict[tuple[str, str], str] = {
    ("spcakit.specs", "spcakit.inputs.documents"): "read_toml bounds the TOML it parses (nesting, number lengths) "
    "with the one bounded parser every reader shares; that module imports only spcakit.errors",
}


@pytest.fixture(scope="module")
def graph():
    return grimp.build_graph("spcakit", include_external_packages=False, exclude_type_checking_imports=True)


def _layer(module: str) -> int | None:
    for index, names in enumerate(LAYERS):
        if any(module == name or module.startswith(name + ".") for name in names):
            return index
    return None


def test_every_module_has_a_layer(graph):
    assert sorted(m for m in graph.modules if m != "spcakit" and _layer(m) is None) == []


def test_no_import_runs_back_up_the_layers(graph):
    upward = {}
    for module in graph.modules:
        low = _layer(module)
        for imported in graph.find_modules_directly_imported_by(module):
            high = _layer(imported)
            if low is not None and high is not None and high > low and (module, imported) not in UPWARD:
                details = graph.get_import_details(importer=module, imported=imported)
                upward[(module, imported)] = [d["line_number"] for d in details]
    assert upward == {}, f"imports back up the layers: {upward}"
    assert len(UPWARD) <= 2


def _group(module: str) -> str:
    parts = module.split(".")
    return ".".join(parts[:3]) if len(parts) > 2 and parts[1] in ("cli", "cv", "inputs", "operators", "parts", "paths", "testing") else ".".join(parts[:2])


def test_the_modules_import_each_other_in_no_circle(graph):
    edges = collections.defaultdict(set)
    for module in graph.modules:
        for imported in graph.find_modules_directly_imported_by(module):
            if _group(module) != _group(imported):
                edges[_group(module)].add(_group(imported))
    # a circle exists iff some module reaches itself; depth-first from each (small graph)
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
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "spcakit"
    long = {}
    for path in sorted(root.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        lines = text.count("\n")
        if lines > MODULE_LINES and "600 lines" not in (ast.get_docstring(ast.parse(text)) or ""):
            long[str(path.relative_to(root))] = lines
    assert long == {}, f"modules above {MODULE_LINES} lines whose docstring does not say why: {long}"
