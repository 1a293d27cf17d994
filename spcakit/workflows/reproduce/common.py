"""What every kind of experiment shares: finding a spec by name, its data, and plain-text tables."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from spcakit.core.errors import SpecError
from spcakit.inputs.datasets import load_source
from spcakit.inputs.dense import Covariance
from spcakit.core.schema import unknown_name


def experiment_path(name: str) -> Path:
    """The spec file of experiment ``name``: a path (ending in ``.toml`` or holding a folder separator)
    as given, else ``specs/experiments/<name>.toml``. A path is read (and refused) by
    :func:`~spcakit.workflows.reproduce.experiment_specs.load_experiment_spec`; an unknown name is refused here, with the closest one as a hint."""
    path = Path(name)
    if path.suffix == ".toml" or "/" in name or (path.name != name):
        return path
    candidate = specs_root() / "experiments" / f"{name}.toml"
    if not name or not candidate.is_file():
        raise SpecError(unknown_name("experiment", name, list_experiments()).replace("; valid:", "; available:"))
    return candidate


def list_experiments() -> list[str]:
    """The names of the experiments in ``specs/experiments/``, sorted."""
    folder = specs_root() / "experiments"
    return sorted(p.stem for p in folder.glob("*.toml"))


def data_source(source: str, root: Path | None = None) -> str:
    """``source`` as :func:`~spcakit.inputs.datasets.load_source` reads it: a file path made relative to ``root``
    (the repository; the specs' paths are relative to it) when given, a ``builtin:`` name as it is."""
    if root is None or source.startswith("builtin:"):
        return source
    return str(Path(root) / source)


def fit_data(source: str, root: Path | None = None, covariance: bool = False) -> Any:
    """What a table's rows are fitted on: a :class:`~spcakit.inputs.dense.Covariance` for a covariance source (or
    ``covariance``), else the data matrix."""
    dataset = load_source(data_source(source, root))
    if dataset.is_covariance or covariance:
        return Covariance(dataset.matrix, dataset.feature_names)
    return dataset.matrix


def sample_covariance(source: str, root: Path | None = None) -> np.ndarray:
    """The covariance of a data source as an array: a covariance source symmetrised, ``(C + C^T) / 2``; a data
    matrix's sample covariance (``numpy.cov`` of its columns, divided by ``n - 1``)."""
    dataset = load_source(data_source(source, root))
    if dataset.is_covariance:
        return (dataset.matrix + dataset.matrix.T) / 2
    return np.cov(dataset.matrix, rowvar=False)


def text_table(rows: Sequence[Sequence[str]]) -> str:
    """Left-aligned columns two spaces apart, the header underlined with dashes; trailing spaces dropped."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = []
    for k, cells in enumerate(rows):
        lines.append("  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip())
        if k == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def specs_root() -> Path:
    """The folder holding ``methods/`` and ``experiments/`` (the repo's ``specs/``)."""
    import spcakit_specs

    return Path(spcakit_specs.__file__).parent
