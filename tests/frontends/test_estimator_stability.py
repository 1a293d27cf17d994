"""``SparsePCA(...).fit(X).stability(X)``: the fitted configuration, resampled."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("sklearn")

import spcakit
from spcakit.testing.planted import planted_supports


def test_the_estimator_resamples_its_own_configuration():
    x, supports = planted_supports(80, 120, [8], [20.0], seed=0)
    estimator = spcakit.SparsePCA(n_components=1, method="tpower", k=8, random_state=3).fit(x)
    s = estimator.stability(x, n_resamples=20)
    direct = spcakit.stability(x, "tpower", r=1, k=8, n_resamples=20, seed=3)
    assert s.result.method == "tpower" and s.seed == 3
    assert np.array_equal(s.probabilities, direct.probabilities)
    assert np.allclose(s.result.loadings, estimator.components_.T)
    assert set(s.stable_support()[0]) == set(supports[0])


def test_dataframe_columns_name_the_variables():
    pandas = pytest.importorskip("pandas")
    x, _ = planted_supports(60, 20, [4], [20.0], seed=1)
    frame = pandas.DataFrame(x, columns=[f"gene{j}" for j in range(20)])
    s = spcakit.SparsePCA(n_components=1, method="tpower", k=4, standardize=True).fit(frame).stability(frame, n_resamples=8)
    assert s.feature_names[:2] == ("gene0", "gene1")
    assert s.probabilities_frame().index[0] == "gene0"


def test_scoring_wide_data_recommends_the_stability_choice():
    from sklearn.model_selection import GridSearchCV

    wide, _ = planted_supports(40, 100, [5], [20.0], seed=0)
    with pytest.warns(UserWarning, match="choose k by stability: spcakit.stable_k"):
        GridSearchCV(spcakit.SparsePCA(n_components=1, method="tpower"), {"k": [2, 5]}, cv=3).fit(wide)
    tall, _ = planted_supports(200, 20, [5], [20.0], seed=0)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        spcakit.SparsePCA(n_components=1, method="tpower", k=5).fit(tall).score(tall)


def test_cross_validation_of_wide_data_recommends_the_stability_choice():
    wide, _ = planted_supports(40, 100, [5], [20.0], seed=0)
    with pytest.warns(UserWarning, match=r"the data are wide \(100 variables that vary, 40 rows\)"):
        cv = spcakit.cross_validate(wide, "tpower", 1, k="2:8:3")
    assert any("spcakit.stable_k" in note for note in cv.warnings)
