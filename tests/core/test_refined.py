"""A refiner's report (``spcakit.core.protocols.Refined``): stored in the result's metrics as ``refiner_<name>``.

A test plugin registers a refiner that returns its input with a report chosen by its ``kind`` field, and a
metric whose name a report entry could clash with. The report reaches the metrics, the JSON document, the
text output and ``metrics_frame``; a malformed report is the refiner's bug (``PartFailure`` naming it).
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import spcakit
from spcakit.cli import render_text
from spcakit.core.errors import PartFailure
from spcakit.core.protocols import Metric
from spcakit.core.protocols import REPORT_PREFIX, Refined

PLUGIN = "refined-test"
PART = "test-reporting-refiner"
REPORTS = {
    "good": {"moves": 2, "gain": 0.25},
    "nan": {"gain": math.nan},
    "flag": {"done": True},
    "text": {"what": "moved"},
    "unnamed": {"": 1},
    "clash": {"clashing": 1},
    "list": [("moves", 2)],
}


@spcakit.part(PART)
class ReportingRefiner(spcakit.Refiner):
    """returns the loadings unchanged with a report (test plugin)"""

    kind: str = "good"

    def __call__(self, problem, loadings):
        return Refined(loadings=loadings, report=REPORTS[self.kind])


class _Plugin:
    @spcakit.hookimpl
    def spcakit_register_parts(self, register):
        register(ReportingRefiner)

    @spcakit.hookimpl
    def spcakit_register_metrics(self, register):
        register(Metric(name=REPORT_PREFIX + "clashing", label="clash", description="a metric a report entry clashes with",
                        compute=lambda problem, x, context: 0, format=str))  # fmt: skip


@pytest.fixture
def plugin():
    session = spcakit.core.plugins.get_session()
    session.add(_Plugin(), PLUGIN)
    try:
        yield session
    finally:
        session.remove(PLUGIN)


def test_a_report_becomes_prefixed_metrics(plugin):
    plain = spcakit.fit("builtin:pitprops", "spcart", r=3, k=4)
    result = spcakit.fit("builtin:pitprops", "spcart", r=3, k=4, refiner=PART)
    np.testing.assert_array_equal(result.loadings, plain.loadings)  # the refiner returned its input
    assert result.metrics["refiner_moves"] == 2 and type(result.metrics["refiner_moves"]) is int
    assert result.metrics["refiner_gain"] == 0.25
    assert {k: v for k, v in result.metrics.items() if k not in ("refiner_moves", "refiner_gain")} == plain.metrics
    document = json.loads(json.dumps(result.to_dict()))
    assert document["metrics"]["refiner_moves"] == 2 and document["metrics"]["refiner_gain"] == 0.25
    text = render_text(result, "builtin:pitprops")
    assert "refiner_moves" in text and "refiner_gain" in text and "0.2500" in text


def test_the_report_is_in_the_all_row_of_metrics_frame(plugin):
    pytest.importorskip("pandas")
    frame = spcakit.fit("builtin:pitprops", "spcart", r=3, k=4, refiner=PART).metrics_frame()
    assert frame.loc["all", "refiner_moves"] == 2 and frame.loc["all", "refiner_gain"] == 0.25
    assert frame["refiner_moves"].isna().sum() == 3  # one row per component, empty


@pytest.mark.parametrize(("kind", "message"), [
    ("nan", "must be finite"), ("flag", "must be a number"), ("text", "must be a number"),
    ("unnamed", "nonempty strings"), ("clash", "would replace the metric 'refiner_clashing'"), ("list", "a mapping"),
])  # fmt: skip
def test_a_malformed_report_is_the_refiner_s_bug(plugin, kind, message):
    with pytest.raises(PartFailure, match=message) as info:
        spcakit.fit("builtin:pitprops", "spcart", r=3, k=4, refiner={"name": PART, "kind": kind})
    assert f"refiner '{PART}' (plugin '{PLUGIN}')" in str(info.value)
