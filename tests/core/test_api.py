"""The Python API takes the CLI's data sources as strings."""

from __future__ import annotations

import numpy as np
import pytest

import spcakit
from spcakit.datasets import pitprops
from spcakit.errors import InvalidDataError


def test_fit_accepts_a_source_string_like_the_cli():
    by_name = spcakit.fit("builtin:pitprops", "spcart", r=3)
    by_matrix = spcakit.fit(spcakit.Covariance(pitprops().matrix, pitprops().feature_names), "spcart", r=3)
    np.testing.assert_array_equal(by_name.loadings, by_matrix.loadings)
    assert by_name.feature_names[0] == "topdiam"


def test_fit_source_string_for_a_data_file(tmp_path):
    x = np.random.default_rng(0).standard_normal((20, 6))
    np.save(tmp_path / "x.npy", x)
    np.testing.assert_array_equal(spcakit.fit(str(tmp_path / "x.npy"), "pca", r=2).loadings, spcakit.fit(x, "pca", r=2).loadings)


def test_fit_unknown_source_string_says_what_is_valid():
    with pytest.raises(InvalidDataError, match="builtin:pitprops"):
        spcakit.fit("no-such-file.csv", "spcart", r=2)


def test_fit_computes_only_the_metrics_named():
    full = spcakit.fit("builtin:pitprops", "spcart", r=3)
    chosen = spcakit.fit("builtin:pitprops", "spcart", r=3, metrics=["cpev", "additional_variance"])
    assert set(chosen.metrics) == {"cpev", "additional_variance"}
    assert chosen.metrics["cpev"] == full.metrics["cpev"]
    assert np.array_equal(chosen.loadings, full.loadings)
    assert set(spcakit.fit("builtin:pitprops", "spcart", r=3, metrics="nz").metrics) == {"nz"}
    with pytest.raises(spcakit.UnknownNameError, match="did you mean 'additional_variance'"):
        spcakit.fit("builtin:pitprops", "spcart", metrics=["additonal_variance"])
    with pytest.raises(spcakit.InvalidParameterError, match="list of metric names"):
        spcakit.fit("builtin:pitprops", "spcart", metrics=[3])
