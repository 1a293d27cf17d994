"""Paths and targets of data with missing values: ``spcakit.path(..., missing=)``, ``spcakit.target_k(...,
missing=)`` and ``spcakit path --missing``.

Each level is fitted by the EM of :mod:`spcakit.workflows.imputation`, warm started from the completed data the previous
level's EM left (:class:`spcakit.workflows.paths.sweep.WarmEM`). The data: ``planted_support(300, 40, [5, 5], [4.0, 3.0])``
(two disjoint planted supports of 5 variables, variables 0-4 and 5-9) with 10 % of the entries missing completely
at random. No tolerance is needed for the supports (sets of indices) nor for the complete data (bit for bit: the
same code path as before the option, so equal arrays, not close ones); CPEV ratios are compared with fixed
thresholds, chosen between measured values with margins stated beside them.
"""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp

import spcakit
from spcakit.core.errors import InvalidParameterError, MissingValuesError, MissingValueWarning
from spcakit.inputs.datasets import planted_support

PLANTED = [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]]

#: The CPEV target, as a fraction of PCA's CPEV. SPCArt's ratios at k = 4 and 5 are 0.822 and 0.991 on the complete
#: data, 0.864 and 0.990 with the holes (each over PCA's on its own completed data): 0.95 lies 0.04 or more from
#: each, so the planted k = 5 is the smallest that reaches it on both.
TARGET = 0.95


def supports(loadings: np.ndarray) -> list[list[int]]:
    return sorted(np.flatnonzero(loadings[:, j]).tolist() for j in range(loadings.shape[1]))


@pytest.fixture(scope="module")
def data() -> tuple[np.ndarray, np.ndarray]:
    """``(complete, holes)``: the planted data, and the same with each entry missing with probability 0.1."""
    x = planted_support(300, 40, [5, 5], [4.0, 3.0], seed=1, shuffle=False).matrix
    holes = x.copy()
    holes[np.random.default_rng(7).random(x.shape) < 0.1] = np.nan
    return x, holes


@pytest.fixture(scope="module")
def paths(data: tuple[np.ndarray, np.ndarray]) -> tuple[spcakit.SparsityPath, spcakit.SparsityPath]:
    x, holes = data
    return spcakit.path(x, "spcart", 2, k="1:8"), spcakit.path(holes, "spcart", 2, k="1:8", missing="em")


# -- the path -------------------------------------------------------------------------------------------
def test_the_supports_at_the_planted_k_are_the_complete_datas(paths: Any) -> None:
    complete, imputed = paths
    assert supports(complete.level(5).result.loadings) == PLANTED
    assert supports(imputed.level(5).result.loadings) == PLANTED
    assert [lv.pattern for lv in imputed] == [lv.pattern for lv in complete]  # k nonzeros per loading throughout


def test_each_level_records_its_em_and_the_path_the_whole(paths: Any, data: Any) -> None:
    complete, imputed = paths
    count = int(np.isnan(data[1]).sum())
    records = [lv.result.input.missing for lv in imputed]
    assert all(record is not None and record.count == count and record.converged for record in records)
    assert imputed.missing is not None and complete.missing is None
    assert imputed.missing.count == count and imputed.missing.converged
    assert imputed.missing.iterations == sum(record.iterations for record in records)
    document = imputed.to_dict()
    assert document["input"]["missing"]["iterations"] == imputed.missing.iterations
    assert [level["missing"]["iterations"] for level in document["levels"]] == [r.iterations for r in records]
    assert "missing" not in complete.to_dict()["levels"][0]


def test_each_levels_ratio_is_over_pca_on_its_own_completed_data(paths: Any) -> None:
    _, imputed = paths
    assert (imputed.column("cpev_ratio") <= 1 + 1e-12).all()  # Ky Fan on each level's own data; 1e-12: rounding
    # the ceiling is the largest level's (cpev / (cpev / c) gives c back to a few units in the last place)
    assert np.isclose(imputed.ceiling, max(lv.cpev / lv.cpev_ratio for lv in imputed), rtol=1e-12, atol=0)
    assert imputed.total_variance is None  # the completed data differ from level to level


def test_sparse_data_with_stored_nan(data: Any, paths: Any) -> None:
    # a scipy.sparse matrix's stored NaN are its missing values; its EM works on the CSR matrix, never densified
    _, holes = data
    sparse = spcakit.path(sp.csr_array(holes), "spcart", 2, k="4:6", missing="em")
    assert sparse.missing.count == paths[1].missing.count
    assert supports(sparse.level(5).result.loadings) == PLANTED


def test_the_data_given_are_not_changed(data: Any, paths: Any) -> None:
    x, holes = data  # the paths fixture imputed these holes: each EM works on its own copy
    again = x.copy()
    again[np.random.default_rng(7).random(x.shape) < 0.1] = np.nan
    assert np.array_equal(holes, again, equal_nan=True) and paths[1].missing.count == int(np.isnan(holes).sum())


def test_the_warm_start_saves_iterations(data: Any, paths: Any) -> None:
    # every level from the columns' means (spcakit.fit's EM) against the path's, warm started from the level before
    _, holes = data
    _, imputed = paths
    cold = [spcakit.fit(holes, "spcart", 2, k=k, missing="em", metrics=["cpev"]).input.missing.iterations
            for k in range(1, 9)]  # fmt: skip
    assert imputed.missing.iterations < sum(cold)
    # the first level starts as fit's EM does: the same fit
    first = spcakit.fit(holes, "spcart", 2, k=1, missing="em")
    assert np.array_equal(imputed.level(1).result.loadings, first.loadings)


@pytest.mark.parametrize(("missing", "expected"), [("auto", 1), ("em", 0)])
def test_auto_warns_once_per_call_and_em_not_at_all(data: Any, missing: str, expected: int) -> None:
    _, holes = data
    for call in (lambda: spcakit.path(holes, "spcart", 2, k="3:6", missing=missing),
                 lambda: spcakit.target_k(holes, "spcart", 2, cpev=TARGET, missing=missing)):  # fmt: skip
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            call()
        notes = [str(w.message) for w in caught if issubclass(w.category, MissingValueWarning)]
        assert len(notes) == expected, notes
        assert all(re.search(r"missing entries \(\d+\.\d% of the 300 x 40\): each level", n) for n in notes)


def test_error_refuses_naming_the_options(data: Any) -> None:
    _, holes = data
    with pytest.raises(MissingValuesError, match="missing='auto'.*missing='em'"):
        spcakit.path(holes, "spcart", 2, k="1:3", missing="error")
    with pytest.raises(MissingValuesError, match="missing='auto'.*missing='em'"):
        spcakit.target_k(holes, "spcart", 2, cpev=0.5, missing="error")


@pytest.mark.parametrize("value", ["mean", "", "EM", None])
def test_a_bad_missing_value_is_refused(data: Any, value: Any) -> None:
    x, _ = data
    with pytest.raises(InvalidParameterError, match="missing must be one of 'auto', 'em', 'error'"):
        spcakit.path(x, "spcart", 2, k="1:2", missing=value)
    with pytest.raises(InvalidParameterError, match="missing must be one of"):
        spcakit.target_k(x, "spcart", 2, cpev=0.5, missing=value)


def test_complete_data_are_unchanged_under_every_option(data: Any) -> None:
    x, _ = data
    runs = []
    for missing in ("auto", "em", "error"):
        with warnings.catch_warnings():
            warnings.simplefilter("error", MissingValueWarning)  # none for complete data
            runs.append(spcakit.path(x, "spcart", 2, k="1:6", missing=missing))
    for run in runs:
        assert run.missing is None and run.total_variance is not None
        for level, first in zip(run, runs[0]):
            assert np.array_equal(level.result.loadings, first.result.loadings) and level.cpev == first.cpev
        assert run.ceiling == runs[0].ceiling
    for level in runs[0]:  # a cold level is spcakit.fit at that level, as before the option
        assert np.array_equal(level.result.loadings, spcakit.fit(x, "spcart", 2, k=level.level).loadings)
    targets = [spcakit.target_k(x, "spcart", 2, cpev=0.9, missing=missing) for missing in ("auto", "em", "error")]
    assert len({(t.k, t.cpev, t.ceiling, t.fitted) for t in targets}) == 1
    assert targets[0].result.input.missing is None


# -- the target ----------------------------------------------------------------------------------------
def test_target_k_chooses_the_complete_datas_k(data: Any) -> None:
    x, holes = data
    complete = spcakit.target_k(x, "spcart", 2, cpev=TARGET)
    imputed = spcakit.target_k(holes, "spcart", 2, cpev=TARGET, missing="em")
    assert complete.k == imputed.k == 5
    assert supports(imputed.result.loadings) == PLANTED
    assert imputed.result.input.missing is not None and imputed.result.input.missing.converged
    assert imputed.cpev / imputed.ceiling >= TARGET
    assert "cpev" in imputed.result.metrics and "bound" in imputed.result.metrics  # the default metrics, all


def test_target_k_by_bisection_and_by_sparsity(data: Any) -> None:
    _, holes = data
    assert spcakit.target_k(holes, "spcart", 2, cpev=TARGET, search="bisection", missing="em").k == 5
    chosen = spcakit.target_k(holes, "spcart", 2, sparsity=0.875, missing="em")  # k = round(0.125 * 40) = 5
    assert chosen.k == 5 and chosen.search == "rounding" and supports(chosen.result.loadings) == PLANTED


def test_the_paths_target_picks_the_same_level(paths: Any) -> None:
    complete, imputed = paths
    assert complete.target(cpev=TARGET).level == imputed.target(cpev=TARGET).level == 5


# -- the command line ----------------------------------------------------------------------------------------
def test_path_imputes_and_says_so(cli, holes_csv: tuple[Path, np.ndarray]) -> None:
    path, missing = holes_csv
    count = int(missing.sum())
    result = cli.invoke("path", "tpower", "--data", path, "-k", "1:4", "-r", "1")
    assert result.exit_code == 0, result.output
    assert f"missing: {count} entries" in result.stdout and "imputed by EM at each level" in result.stdout
    assert "warning: the data have" in result.stderr and "each level of the path" in result.stderr


def test_path_em_json_records_the_imputation(cli, holes_csv: tuple[Path, np.ndarray]) -> None:
    path, missing = holes_csv
    count = int(missing.sum())
    result = cli.invoke("path", "tpower", "--data", path, "-k", "1:4", "-r", "1", "--missing", "em", "--json",
                    "--target-cpev", "0.9")  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "warning" not in result.stderr
    document = json.loads(result.stdout)
    assert document["input"]["missing"]["count"] == count and document["input"]["missing"]["converged"] is True
    assert all(level["missing"]["converged"] for level in document["levels"])
    assert document["target"]["k"] in (1, 2, 3, 4)


# (refusals and bad values of --missing: tests/workflows/test_missing_cli.py, for run and path alike)


def test_run_with_a_target_imputes_or_refuses_as_missing_says(cli, holes_csv: tuple[Path, np.ndarray]) -> None:
    path, missing = holes_csv
    count = int(missing.sum())
    result = cli.invoke("run", "tpower", "--data", path, "-r", "1", "--target-cpev", "0.9", "--missing", "em", "--json")
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["input"]["missing"]["count"] == count and document["target"]["k"] >= 1
    refused = cli.invoke("run", "tpower", "--data", path, "-r", "1", "--target-cpev", "0.9", "--missing", "error")
    assert refused.exit_code == 2 and "cells are not numbers" in refused.stderr
