r"""Figure 1 of Magdon-Ismail & Boutsidis, *Optimal Sparse Linear Encoders and Sparse PCA*
(NIPS 2016): normalized loss and symmetric explained variance against the sparsity ``r``,
``k = 2``, for Batch, Iterative, TPower, GPower-l0 and GPower-l1 (with deflation), on
Pitprops, Lymphoma and Colon.

The runs are the experiment specs ``specs/experiments/encoders-fig1-*.toml``. This module

* writes those specs (``--write-specs``): GPower is parametrised by a penalty
  :math:`\gamma`, not by a sparsity, so for every ``r`` it takes the *smallest* relative
  :math:`\gamma` (the densest loadings) for which every loading has at most ``r``
  nonzeros, found by bisection on :math:`[0, 1]` and rounded up to 6 significant digits;
  Batch and Iterative take ``sparsity = r``, TPower ``k = r``;
* runs them and writes the figure's data (``--out``): one CSV and one JSON per data
  set, an SVG line plot drawn by :mod:`spcakit.plotting` (needs matplotlib,
  ``pip install 'spcakit[plot]'``) and a Markdown table;
* with ``--replot``, only redraws the SVGs from the JSON files already in ``--out``.

``python -m spcakit_encoders.figure1 --out docs/figures`` from the repository root (data
paths in the specs are relative to it); ``python -m spcakit_encoders.figure1 --replot --out
docs/figures`` to redraw the committed plots without running the experiments.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs

from spcakit import plotting
from spcakit.api import fit
from spcakit.inputs.datasets import load_source
from spcakit.errors import SpcakitError
from spcakit.inputs.dense import Covariance
from spcakit.inputs import as_problem
from spcakit.reproduce import fit_arguments
from spcakit.specs import ExperimentSpec, load_experiment_spec, specs_root

K = 2
DATASETS: dict[str, dict[str, Any]] = {
    # every variance of the correlation matrix is 1: the figure was run with TPower and GPower starting from
    # variable 1, the tie rule before spcakit broke such ties by the leading eigenvector (spcakit.ties)
    "pitprops": {"data": "builtin:pitprops", "r": list(range(2, 11)), "title": "Pitprops (13 x 13 correlation, X = C^1/2)",
                 "pinned": {"tie_order": list(range(13))}},
    "lymphoma": {"data": "../shared/data/lymphoma_cov_500.npz", "r": list(range(5, 41, 5)),
                 "title": "Lymphoma (500 x 500 covariance, X = C^1/2)"},
    "colon": {"data": "../shared/data/colon_alon_62x2000.npz", "r": list(range(5, 41, 5)),
              "title": "Colon (62 x 2000 data, centred)"},
}
#: (label, method, how the sparsity r is set)
METHODS = (
    ("Batch", "encoder-batch", "sparsity"),
    ("Iterative", "encoder-iterative", "sparsity"),
    ("TPower", "tpower", "k"),
    ("GPower-l0", "gpower-l0", "penalty"),
    ("GPower-l1", "gpower-l1", "threshold"),
)
COLUMNS = ("nz", "normalized_loss", "symmetric_explained_variance")
LABEL = re.compile(r"^(?P<method>[\w-]+), r = (?P<r>\d+)$")


def experiment_name(dataset: str) -> str:
    return f"encoders-fig1-{dataset}"


def load_data(source: str, root: Path | None = None) -> Any:
    """What ``spcakit reproduce`` passes to fit: a Covariance for a covariance source, else the data matrix."""
    if root is not None and not source.startswith("builtin:"):
        source = str(root / source)
    dataset = load_source(source)
    return Covariance(dataset.matrix, dataset.feature_names) if dataset.is_covariance else dataset.matrix


def densest_gamma(data: Any, method: str, parameter: str, r: int, steps: int = 30,
                  pinned: dict[str, Any] | None = None) -> float | None:
    """The smallest gamma in [0, 1) whose ``K`` loadings have at most ``r`` nonzeros each.

    A grid 0.02, 0.04, ..., 0.98 brackets the boundary (too large a gamma may zero a whole
    loading, which counts as infeasible); bisection then narrows it to 2^-steps of the bracket.
    """
    def feasible(gamma: float) -> bool:
        try:
            result = fit(data, method, r=K, **{parameter: gamma}, **(pinned or {}))
        except SpcakitError:
            return False
        return max(result.metrics["pattern"]) <= r

    grid = [i / 50 for i in range(1, 50)]
    lo = 0.0
    hi = None
    for gamma in grid:
        if feasible(gamma):
            hi = gamma
            break
        lo = gamma
    if hi is None:
        return None
    for _ in range(steps):
        mid = (lo + hi) / 2
        if feasible(mid):
            hi = mid
        else:
            lo = mid
    digits = 6 - int(math.floor(math.log10(hi))) - 1
    rounded = math.ceil(hi * 10**digits) / 10**digits
    return rounded if feasible(rounded) else hi


def write_spec(dataset: str, root: Path, out_folder: Path) -> Path:
    """Write ``encoders-fig1-DATASET.toml`` with one row per method and sparsity."""
    info = DATASETS[dataset]
    data = load_data(info["data"], root)
    lines = [
        f'name = "{experiment_name(dataset)}"',
        f'title = "Fig. 1, {info["title"]}: k = 2, normalized loss and symmetric explained variance vs sparsity r '
        '(Magdon-Ismail & Boutsidis)"',
        'paper = "Magdon-Ismail, Boutsidis - Optimal Sparse Linear Encoders and Sparse PCA (NIPS 2016)"',
        f'data = "{info["data"]}"',
        f"r = {K}",
        f"columns = {json.dumps(list(COLUMNS))}",
        'notes = """',
        "The paper's Fig. 1 is a plot; its curves are not in our copy of the paper, so no paper values are listed",
        "(docs/reproductions.md compares with the figure's axes and claims). GPower's gamma (relative) is the",
        "smallest for which every loading has at most r nonzeros (bisection, python -m spcakit_encoders.figure1",
        "--write-specs). Data paths are relative to the repository root."
        + (" On the correlation matrix every variance\nis 1: TPower and GPower start from variable 1 (tie_order pins "
           "the order the figure was run with; by default\nspcakit breaks the tie by the leading eigenvector, see "
           "spcakit.ties)." if "pinned" in info else ""),
        '"""',
    ]
    pinned = info.get("pinned", {})
    pins = "".join(f", {key} = {json.dumps(value).replace(',', ', ').replace(',  ', ', ')}" for key, value in pinned.items())
    for r in info["r"]:
        for label, method, how in METHODS:
            pin = pins if method.startswith(("tpower", "gpower")) else ""
            if how in ("sparsity", "k"):
                params = f"{{ {how} = {r}{pin} }}"
            else:
                gamma = densest_gamma(data, method, how, r, pinned=pinned if pin else None)
                if gamma is None:
                    continue
                params = f"{{ {how} = {gamma!r}{pin} }}"
            lines += ["", "[[rows]]", f'label = "{label}, r = {r}"', f'method = "{method}"', f"params = {params}"]
    path = out_folder / f"{experiment_name(dataset)}.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def load_spec(dataset: str, root: Path | None = None) -> ExperimentSpec:
    """The experiment spec, its data path made absolute against ``root`` (the repository)."""
    spec = load_experiment_spec(specs_root() / "experiments" / f"{experiment_name(dataset)}.toml")
    if root is not None and not spec.data.startswith("builtin:"):
        spec = attrs.evolve(spec, data=str(root / spec.data))
    return spec


def run(spec: ExperimentSpec, sparsities: Sequence[int] | None = None) -> list[dict[str, Any]]:
    """Run the rows of ``spec`` (only those with ``r`` in ``sparsities`` when given) into flat records.

    Each row runs as ``spcakit reproduce`` runs it (:func:`spcakit.reproduce.run_row`'s
    split of the parameters); the record keeps the full loading pattern.
    """
    data = as_problem(load_data(spec.data))  # checked once, shared by every row
    records = []
    for row in spec.rows:
        match = LABEL.match(row.label)
        if match is None:
            raise ValueError(f"{spec.name}: row label {row.label!r} is not 'METHOD, r = R'")
        r = int(match["r"])
        if sparsities is not None and r not in sparsities:
            continue
        result = fit(data, row.method, r=spec.r, **fit_arguments(spec, row))
        records.append({
            "method": match["method"],
            "r": r,
            "spec_method": row.method,
            "params": dict(row.params),
            "pattern": list(result.metrics["pattern"]),
            "normalized_loss": float(result.metrics["normalized_loss"]),
            "symmetric_explained_variance": float(result.metrics["symmetric_explained_variance"]),
            "seconds": result.seconds,
        })
    return records


# -- figure data -----------------------------------------------------------------------------------
PANELS = (("normalized_loss", "normalized loss"), ("symmetric_explained_variance", "symmetric explained variance"))


def curves(records: list[dict[str, Any]], key: str) -> dict[str, tuple[list[int], list[float]]]:
    """``{method: (r values, key values)}`` in the order of :data:`METHODS`, finite values only."""
    out = {}
    for label, _, _ in METHODS:
        points = sorted((rec["r"], rec[key]) for rec in records if rec["method"] == label and math.isfinite(rec[key]))
        if points:
            out[label] = ([r for r, _ in points], [v for _, v in points])
    return out


def plot(records: list[dict[str, Any]], title: str) -> Any:
    """Two panels, normalized loss and symmetric explained variance against r, one line per method.

    Drawn by :func:`spcakit.plotting.plot_tradeoff` (needs matplotlib: ``pip install 'spcakit[plot]'``);
    returns the :class:`matplotlib.figure.Figure`, for :func:`spcakit.plotting.save`.
    """
    figure, axes = plotting.new_figure(1, len(PANELS), figsize=(10.0, 4.2))
    for ax, (key, ylabel) in zip(axes, PANELS):
        plotting.plot_tradeoff(curves(records, key), ax=ax, xlabel="sparsity r (nonzeros per feature)", ylabel=ylabel,
                               legend=False)
    handles, labels = axes[0].get_legend_handles_labels()
    figure.legend(handles, labels, loc="outside lower center", ncols=len(labels), frameon=False)
    figure.suptitle(f"{title}, k = {K}")
    return figure


def markdown(records: list[dict[str, Any]]) -> str:
    """One row per r: normalized loss / symmetric explained variance of each method.

    The lowest loss and the highest SEV at each r (as printed, ties included) are in bold;
    GPower's cell ends with its pattern (nonzeros of h1/h2).
    """
    labels = [label for label, _, _ in METHODS]
    lines = ["| r | " + " | ".join(labels) + " |", "|---|" + "---|" * len(labels)]
    for r in sorted({rec["r"] for rec in records}):
        at = {rec["method"]: rec for rec in records if rec["r"] == r}
        best_loss = f"{min(rec['normalized_loss'] for rec in at.values()):.4f}"
        best_sev = f"{max(rec['symmetric_explained_variance'] for rec in at.values()):.4f}"
        cells = []
        for label in labels:
            rec = at.get(label)
            if rec is None:
                cells.append("—")
                continue
            loss = f"{rec['normalized_loss']:.4f}"
            sev = f"{rec['symmetric_explained_variance']:.4f}"
            loss = f"**{loss}**" if loss == best_loss else loss
            sev = f"**{sev}**" if sev == best_sev else sev
            pattern = "" if label in ("Batch", "Iterative", "TPower") else f" ({'/'.join(map(str, rec['pattern']))})"
            cells.append(f"{loss} / {sev}{pattern}")
        lines.append(f"| {r} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def write_outputs(dataset: str, records: list[dict[str, Any]], folder: Path) -> list[Path]:
    """Write ``encoders-fig1-DATASET.{csv,json,svg,md}`` in ``folder`` (the plot is drawn before any file is written)."""
    figure = plot(records, DATASETS[dataset]["title"])
    folder.mkdir(parents=True, exist_ok=True)
    stem = folder / f"encoders-fig1-{dataset}"
    with open(f"{stem}.csv", "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["method", "r", "pattern", "normalized_loss", "symmetric_explained_variance", "params"])
        for rec in records:
            writer.writerow([rec["method"], rec["r"], " ".join(map(str, rec["pattern"])), f"{rec['normalized_loss']:.6f}",
                             f"{rec['symmetric_explained_variance']:.6f}", json.dumps(rec["params"], sort_keys=True)])
    Path(f"{stem}.json").write_text(json.dumps({"dataset": dataset, "k": K, "records": records}, indent=1) + "\n", encoding="utf-8")
    plotting.save(figure, f"{stem}.svg")
    Path(f"{stem}.md").write_text(markdown(records), encoding="utf-8")
    return [Path(f"{stem}.{ext}") for ext in ("csv", "json", "svg", "md")]


def replot(dataset: str, folder: Path) -> Path:
    """Redraw ``encoders-fig1-DATASET.svg`` from the records in ``encoders-fig1-DATASET.json`` beside it, running nothing."""
    stem = folder / f"encoders-fig1-{dataset}"
    records = json.loads(Path(f"{stem}.json").read_text(encoding="utf-8"))["records"]
    return plotting.save(plot(records, DATASETS[dataset]["title"]), f"{stem}.svg")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("datasets", nargs="*", default=list(DATASETS), help=f"any of {', '.join(DATASETS)}")
    parser.add_argument("--root", type=Path, default=Path.cwd(), help="the repository root (data paths are relative to it)")
    parser.add_argument("--write-specs", action="store_true", help="tune GPower's gamma and rewrite the experiment specs")
    parser.add_argument("--out", type=Path, help="folder for the CSV, JSON, SVG and Markdown outputs")
    parser.add_argument("--replot", action="store_true",
                        help="only redraw the SVGs in --out from the JSON files there (nothing is run)")
    args = parser.parse_args(argv)
    if args.replot and args.out is None:
        parser.error("--replot needs --out (the folder holding the JSON files)")
    for dataset in args.datasets:
        if args.write_specs:
            print(write_spec(dataset, args.root, args.root / "specs" / "experiments"))
        if args.replot:
            print(replot(dataset, args.out))
        elif args.out is not None:
            records = run(load_spec(dataset, args.root))
            for path in write_outputs(dataset, records, args.out):
                print(path)


if __name__ == "__main__":
    main()
