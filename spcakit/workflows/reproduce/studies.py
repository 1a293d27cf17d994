r"""The ``realizations``, ``curve`` and ``traces`` experiments (:class:`~spcakit.workflows.reproduce.experiment_specs.StudySpec`).

* ``realizations``: for each case, ``realizations`` random problems drawn by the case's generator
  (a ``generator`` piece a plugin registered, :func:`~spcakit.core.hookspecs.spcakit_register_experiment_pieces`; realization ``i`` of the case at position ``c`` from
  ``numpy.random.default_rng([seed, c, i])``, so a reduced run is a prefix of the full one); the
  ``reference`` method's run gives the optimum (its row support and its final objective), and every row is
  scored by the intersection ratio IR :math:`= |\hat I\cap I_*|/|I_*|` of its row support, the relative error
  RE :math:`= (f_* - f)/f_*` of its objective, and whether RE :math:`\le` ``hit_tol`` (:class:`Scores`).
  A row may start from a named ``start`` piece, take the seed
  ``1000 i + seed`` (``seeded``), or be scored as ``single_starts`` runs, each from one of the random
  orthonormal starts the ``multistart`` driver draws for that seed.
* ``curve``: the spec's ``metric`` of every row at each value of ``parameter`` (a fit keyword, such as ``k``),
  on the covariance of one data set; a row may instead be scored by a named ``score`` piece (the FSPCA
  plugin's ``fspca-refined`` and ``fspca-bound``, for instance).
* ``traces``: the objective after every step of each row's run (rows with ``each_seed`` once per seed).

Every run goes through :func:`spcakit.fit`; a row's keywords are the spec's ``params``, the case's (or the
swept value), then the row's own.
"""

from __future__ import annotations

from functools import partial

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from spcakit.workflows.fit import fit

#: A paper's tables list the components in its method's order: every fit here keeps it.
paper_fit = partial(fit, order="method")
from spcakit.core.errors import SpecError
from spcakit.workflows.reproduce.experiment_specs import StudyRow, StudySpec
from spcakit.inputs.dense import Covariance
from spcakit.core.plugins import get_registry
from spcakit.workflows.reproduce.common import sample_covariance, text_table


@attrs.frozen(kw_only=True)
class Scores:
    """IR, RE and the number of iterations of one row on each realization (or each single start)."""

    ir: tuple[float, ...]
    re: tuple[float, ...]
    iterations: tuple[int, ...] = ()
    #: a relative error at most this is a hit
    hit_tol: float = 1e-3

    @property
    def hits(self) -> np.ndarray:
        """Whether each run's RE is at most :attr:`hit_tol`."""
        return np.asarray(self.re) <= self.hit_tol

    def summary(self) -> dict[str, float]:
        """Mean and standard deviation of IR and RE; the hit frequency HF and its binomial standard error; ``n``."""
        ir, re = np.asarray(self.ir), np.asarray(self.re)
        n = len(re)
        hf = float(np.mean(re <= self.hit_tol)) if n else float("nan")
        return {
            "ir": float(ir.mean()), "ir_std": float(ir.std(ddof=1)) if n > 1 else 0.0,
            "re": float(re.mean()), "re_std": float(re.std(ddof=1)) if n > 1 else 0.0,
            "hf": hf, "hf_se": float(np.sqrt(hf * (1 - hf) / n)),
            "n": n,
        }  # fmt: skip


@attrs.frozen(kw_only=True)
class StudyOutcome:
    """What a study produced, by kind: ``scores`` (case → row → :class:`Scores`), ``curves`` (row → values at
    each of ``values``) or ``traces`` (row → objective after every step)."""

    spec: StudySpec
    scores: dict[str, dict[str, Scores]] = attrs.field(factory=dict)
    values: tuple[Any, ...] = ()
    curves: dict[str, list[float]] = attrs.field(factory=dict)
    traces: dict[str, tuple[float, ...]] = attrs.field(factory=dict)

    @property
    def failures(self) -> list[Any]:
        """Nothing to compare with a paper's printed values: a study never fails ``--check``."""
        return []

    def to_dict(self) -> dict[str, Any]:
        """``name``, ``kind``, ``title``, ``paper``, ``r`` and the kind's results (with each Scores' summary)."""
        spec = self.spec
        doc: dict[str, Any] = {"name": spec.name, "kind": spec.kind, "title": spec.title, "paper": spec.paper, "r": spec.r}
        if spec.kind == "realizations":
            doc["scores"] = {case: {label: {"ir": list(s.ir), "re": list(s.re), "iterations": list(s.iterations),
                                            "summary": s.summary()} for label, s in rows.items()}
                             for case, rows in self.scores.items()}  # fmt: skip
        elif spec.kind == "curve":
            doc.update(data=spec.data, metric=spec.metric, parameter=spec.parameter, values=list(self.values),
                       curves=self.curves)
        else:
            doc.update(data=spec.data, traces={label: list(h) for label, h in self.traces.items()})
        return doc

    def to_text(self) -> str:
        """The title, the paper, the kind's table (mean scores, the curve, or each trace), and the spec's notes."""
        spec = self.spec
        if spec.kind == "realizations":
            rows = [["case", "row", "IR", "RE", "HF", "n"]]
            for case, by_row in self.scores.items():
                for label, scores in by_row.items():
                    s = scores.summary()
                    rows.append([case, label, f"{s['ir']:.2f} ({s['ir_std']:.2f})", f"{s['re']:.3f} ({s['re_std']:.3f})",
                                 f"{s['hf']:.2f} ({s['hf_se']:.2f})", str(s["n"])])
        elif spec.kind == "curve":
            rows = [[spec.parameter] + list(self.curves)]
            rows += [[str(value)] + [f"{self.curves[label][i]:.4f}" for label in self.curves]
                     for i, value in enumerate(self.values)]
        else:
            rows = [["row", "steps", "first", "last"]]
            rows += [[label, str(len(h)), f"{h[0]:.6g}" if h else "-", f"{h[-1]:.6g}" if h else "-"]
                     for label, h in self.traces.items()]
        text = f"{spec.title}\n{spec.paper}\n\n" + text_table(rows)
        return text + ("\n\n" + spec.notes.strip() if spec.notes.strip() else "")


def _keywords(spec: StudySpec, row: StudyRow, middle: Mapping[str, Any]) -> dict[str, Any]:
    return {**spec.params, **middle, **row.params}


def _start(row: StudyRow, a: np.ndarray, m: int, keywords: Mapping[str, Any]) -> dict[str, Any]:
    return {"w0": get_registry().piece("start", row.start)(a, m, keywords)} if row.start else {}


def row_support(x: np.ndarray) -> np.ndarray:
    """The rows of ``x`` with a nonzero entry, ascending."""
    return np.flatnonzero(np.any(np.asarray(x).reshape(np.shape(x)[0], -1) != 0, axis=1))


# -- realizations ---------------------------------------------------------------------------------------
def _score(into: dict[str, list[Any]], result: Any, best: tuple[np.ndarray, float]) -> None:
    """Append a run's IR, RE and iterations against the reference's row support and objective ``best``."""
    support, (best_support, value) = row_support(result.loadings), best
    into["ir"].append(len(set(support.tolist()) & set(best_support.tolist())) / len(best_support))
    into["re"].append((value - result.metrics["objective"]) / value)
    into["it"].append(result.iterations)


def run_realizations(spec: StudySpec, realizations: int | None = None,
                     on_case: Callable[[str], None] | None = None) -> StudyOutcome:
    """Score every row against the reference on ``realizations`` (default: the spec's) problems of each case."""
    n = spec.realizations if realizations is None else realizations
    m = spec.r
    scores: dict[str, dict[str, Scores]] = {}
    for c, case in enumerate(spec.cases):
        generate = get_registry().piece("generator", case.generator)
        out: dict[str, dict[str, list[Any]]] = {row.label: {"ir": [], "re": [], "it": []} for row in spec.rows}
        for i in range(n):
            a = generate(np.random.default_rng([spec.seed, c, i]), **case.generator_params)
            cov = Covariance(a)
            reference = paper_fit(cov, spec.reference, r=m, **spec.params)
            best = (row_support(reference.loadings), reference.objective_history[-1])
            for row in spec.rows:
                keywords = _keywords(spec, row, case.params)
                method, r = row.method, row.r or m
                if row.single_starts:  # the starts the multistart driver draws for seed 1000 i + seed, one at a time
                    draws = np.random.default_rng(1000 * i + spec.seed)
                    for _ in range(row.single_starts):
                        w0 = np.linalg.qr(draws.standard_normal((a.shape[0], r)))[0]
                        _score(out[row.label], paper_fit(cov, method, r=r, **keywords, w0=w0, metrics=["objective"]), best)
                    continue
                seed = {"seed": 1000 * i + spec.seed} if row.seeded else {}
                _score(out[row.label], paper_fit(cov, method, r=r, **keywords, **seed, **_start(row, a, r, keywords), metrics=["objective"]),
                       best)
        scores[case.name] = {label: Scores(ir=tuple(v["ir"]), re=tuple(v["re"]), iterations=tuple(v["it"]),
                                           hit_tol=spec.hit_tol) for label, v in out.items()}
        if on_case is not None:
            on_case(case.name)
    return StudyOutcome(spec=spec, scores=scores)


# -- curve ----------------------------------------------------------------------------------------------
def run_curve(spec: StudySpec, values: tuple[Any, ...] | None = None, root: Path | None = None,
              covariance: np.ndarray | None = None) -> StudyOutcome:
    """Each row's score at every value of the spec's parameter (default: its ``values``), on the data's covariance
    (``covariance`` when given, else the spec's data relative to ``root``)."""
    values = spec.values if values is None else tuple(values)
    a = sample_covariance(spec.data, root) if covariance is None else covariance
    cov = Covariance(a)
    eigenvalues = np.linalg.eigvalsh(a)
    scores = {row.score: get_registry().piece("score", row.score) for row in spec.rows if row.score != "metric"}
    curves: dict[str, list[float]] = {row.label: [] for row in spec.rows}
    for value in values:
        for row in spec.rows:
            r = row.r or spec.r
            result = paper_fit(cov, row.method, r=r, **_keywords(spec, row, {spec.parameter: value}), metrics=[spec.metric])
            if row.score != "metric":
                curves[row.label].append(float(scores[row.score](result, covariance=a, eigenvalues=eigenvalues,
                                                                 m=spec.r, r=r, value=value)))  # fmt: skip
            else:
                curves[row.label].append(result.metrics[spec.metric])
    return StudyOutcome(spec=spec, values=values, curves=curves)


# -- traces ---------------------------------------------------------------------------------------------
def run_traces(spec: StudySpec, seeds: tuple[int, ...] | None = None, root: Path | None = None,
               covariance: np.ndarray | None = None) -> StudyOutcome:
    """Each row's objective after every step (rows with ``each_seed`` once per seed, default the spec's seeds)."""
    seeds = spec.seeds if seeds is None else tuple(seeds)
    a = sample_covariance(spec.data, root) if covariance is None else covariance
    cov = Covariance(a)
    traces: dict[str, tuple[float, ...]] = {}
    for row in spec.rows:
        keywords = _keywords(spec, row, {})
        r = row.r or spec.r
        if row.each_seed:
            for seed in seeds:
                traces[row.label.format(seed=seed)] = paper_fit(cov, row.method, r=r, **keywords, seed=seed).objective_history
        else:
            traces[row.label] = paper_fit(cov, row.method, r=r, **keywords).objective_history
    return StudyOutcome(spec=spec, traces=traces)


def run_study(spec: StudySpec, reduced: bool = False, root: Path | None = None) -> StudyOutcome:
    """Run a study by its kind, in its reduced form (the spec's ``reduced`` table) when ``reduced``."""
    cut = spec.reduced if reduced else {}
    if spec.kind == "realizations":
        return run_realizations(spec, cut.get("realizations"))
    if spec.kind == "curve":
        return run_curve(spec, cut.get("values"), root=root)
    if spec.kind == "traces":
        return run_traces(spec, cut.get("seeds"), root=root)
    raise SpecError(f"{spec.source or spec.name}: kind {spec.kind!r} is not a study")  # the loader refuses it first
