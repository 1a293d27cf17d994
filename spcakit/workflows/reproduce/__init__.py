"""Every paper experiment, from its spec in ``specs/experiments/`` (``spcakit reproduce NAME``).

An experiment spec's ``kind`` (:data:`~spcakit.core.specs.EXPERIMENT_KINDS`; ``table`` when absent) picks its runner:

* ``table`` (:mod:`~spcakit.workflows.reproduce.tables`): one :func:`spcakit.fit` run per row, our numbers beside the
  paper's printed ones;
* ``sweep`` (:mod:`~spcakit.workflows.reproduce.sweeps`): metrics against a sparsity, one line per series, written as
  CSV, JSON, SVG and Markdown (``--out``), redrawn from the JSON (``--replot``); a penalty tuned to each
  sparsity by :mod:`~spcakit.workflows.reproduce.tuning` (``--tune``);
* ``realizations``, ``curve`` and ``traces`` (:mod:`~spcakit.workflows.reproduce.studies`): random problems scored
  against a reference method, a metric along a parameter, the objective after every step; the generators,
  starts and scores they name are registered by plugins
  (:func:`~spcakit.core.hookspecs.spcakit_register_experiment_pieces`).

:func:`run_experiment` runs any of them by name (or TOML path).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from spcakit.workflows.reproduce.experiment_specs import StudySpec
from spcakit.core.plugins import get_registry
from spcakit.core.registry import Registry
from spcakit.workflows.reproduce.common import experiment_path, list_experiments
from spcakit.workflows.reproduce.studies import Scores, StudyOutcome, run_study
from spcakit.workflows.reproduce.sweeps import SweepOutcome, run_sweep
from spcakit.workflows.reproduce.tables import (
    COLUMNS,
    FIT_KEYS,
    ExperimentOutcome,
    RowOutcome,
    configured_row,
    row_method,
    spec_error,
    fit_arguments,
    format_like,
    run_row,
    run_table,
    support_ranges,
)
from spcakit.workflows.reproduce.tables import check_experiment as check_table
from spcakit.core.schema import unknown_name
from spcakit.workflows.reproduce.experiment_specs import ExperimentSpec, load_experiment_spec

__all__ = [
    "COLUMNS", "FIT_KEYS", "ExperimentOutcome", "RowOutcome", "Scores", "StudyOutcome", "SweepOutcome",
    "check_experiment", "experiment_path", "fit_arguments", "format_like", "list_experiments", "load_experiment",
    "run_experiment", "run_row", "support_ranges",
]  # fmt: skip

Outcome = ExperimentOutcome | SweepOutcome | StudyOutcome


def load_experiment(name: str) -> ExperimentSpec | StudySpec:
    """The spec of experiment ``name`` (a name in ``specs/experiments/`` or a TOML path), read and checked by its kind's schema."""
    return load_experiment_spec(experiment_path(name))


def check_study(spec: StudySpec, registry: Registry) -> None:
    """Check a study's methods, generators and starts by name, and each row's keywords as :func:`spcakit.fit` takes them."""
    if spec.reference:
        row_method(spec, spec.reference, ("reference",), registry)  # type: ignore[arg-type]
    for i, case in enumerate(spec.cases):
        if case.generator not in registry.piece_names("generator"):
            raise spec_error(spec, ("cases", i, "generator"), unknown_name("generator", case.generator, registry.piece_names("generator")))  # type: ignore[arg-type]
    middles = [case.params for case in spec.cases] or [{spec.parameter: spec.values[0]} if spec.parameter else {}]
    for i, row in enumerate(spec.rows):
        method = row_method(spec, row.method, ("rows", i, "method"), registry)  # type: ignore[arg-type]
        if row.start and row.start not in registry.piece_names("start"):
            raise spec_error(spec, ("rows", i, "start"), unknown_name("start", row.start, registry.piece_names("start")))  # type: ignore[arg-type]
        if row.score != "metric" and row.score not in registry.piece_names("score"):
            raise spec_error(spec, ("rows", i, "score"), unknown_name("score", row.score, registry.piece_names("score")))  # type: ignore[arg-type]
        for middle in middles:
            arguments = {**spec.params, **middle, **row.params}
            paths: dict[str, Any] = {k: ("params", k) for k in spec.params}
            paths.update({k: ("cases" if spec.cases else "values", k) for k in middle})
            paths.update({k: ("rows", i, "params", k) for k in row.params})
            paths[""] = ("rows", i)
            configured_row(spec, method, arguments, paths, registry, None)  # type: ignore[arg-type]


def check_experiment(spec: ExperimentSpec | StudySpec, registry: Registry | None = None, p: int | None = None) -> None:
    """Check an experiment of any kind against the registry before anything runs (see
    :func:`spcakit.workflows.reproduce.tables.check_experiment` for tables and sweeps); a :class:`~spcakit.core.errors.SpecError`
    names the file and the key's path."""
    registry = registry or get_registry()
    if isinstance(spec, StudySpec):
        check_study(spec, registry)
    else:
        check_table(spec, registry, p)


def run_experiment(name: str, on_row: Callable[[RowOutcome], None] | None = None, *, reduced: bool = False,
                   root: Path | None = None) -> Any:
    """Run the experiment ``name`` (a spec name or a TOML path) by its kind.

    Parameters
    ----------
    name
        An experiment in ``specs/experiments/``, or the path of an experiment ``.toml`` file.
    on_row
        Called with each row's :class:`RowOutcome` of a table, as it is done.
    reduced
        Run the reduced form the spec gives (fewer sparsities, realizations, values or seeds), if any.
    root
        The folder the spec's data paths are relative to (default: the working folder).

    Returns
    -------
    ExperimentOutcome, SweepOutcome or StudyOutcome
        By the spec's kind (``table``, ``sweep``, the others); each has ``to_dict()``, ``to_text()`` and
        ``failures`` (the rows that differ from the paper where they must not).
    """
    spec = load_experiment(name)
    check_experiment(spec)
    if isinstance(spec, StudySpec):
        return run_study(spec, reduced=reduced, root=root)
    if spec.kind == "sweep":
        assert spec.sweep is not None
        return run_sweep(spec, spec.sweep.reduced if (reduced and spec.sweep.reduced) else None, root=root)
    return run_table(spec, on_row, root=root)
