"""pandas in and out: choosing columns (``columns=``/``drop=``, ``--columns``/``--drop``/``--index-col``),
``Result.loadings_frame()``/``metrics_frame()``, and the short ``repr`` of a result."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import spcakit
from spcakit.core.errors import InvalidDataError, InvalidParameterError
from spcakit.inputs.dense import Covariance
from spcakit.inputs import as_problem
from spcakit.inputs.columns import column_positions

pd = pytest.importorskip("pandas")

NAMES = ("height", "weight", "age", "income", "score")
#: The same numbers in another memory layout (a DataFrame's columns, a selected copy) reach BLAS in another
#: summation order: the covariance differs by rounding (n * eps), the loadings by far less than this.
SAME = 1e-12


def table(n: int = 40, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    base = rng.standard_normal((n, 2))
    return np.column_stack([base[:, 0], base[:, 0] + 0.3 * rng.standard_normal(n), base[:, 1],
                            base[:, 1] + 0.5 * rng.standard_normal(n), rng.standard_normal(n)])  # fmt: skip


def frame_with_labels() -> pd.DataFrame:
    x = table()
    frame = pd.DataFrame(x, columns=list(NAMES))
    frame.insert(0, "id", np.arange(100, 100 + len(frame)))
    frame["species"] = ["setosa", "virginica"] * (len(frame) // 2)
    return frame


# -- choosing columns --------------------------------------------------------------------------------------
def test_a_label_column_is_dropped_before_its_values_are_read():
    frame = frame_with_labels()
    with pytest.raises(InvalidDataError, match=r"non-numeric column: 'species'.*drop=\['species'\]"):
        spcakit.fit(frame, r=2)
    result = spcakit.fit(frame, r=2, drop=["id", "species"])
    reference = spcakit.fit(table(), r=2, feature_names=NAMES)
    assert result.feature_names == NAMES
    np.testing.assert_allclose(result.loadings, reference.loadings, rtol=0, atol=SAME)
    assert spcakit.fit(frame, r=2, drop=["species", "id"]).input.sha256 == reference.input.sha256


def test_columns_keeps_the_named_ones_in_their_order():
    frame = frame_with_labels()
    result = spcakit.fit(frame, r=2, columns=["income", "height", "weight"])
    assert result.feature_names == ("income", "height", "weight")
    expected = spcakit.fit(table()[:, [3, 0, 1]], r=2, feature_names=["income", "height", "weight"])
    np.testing.assert_allclose(result.loadings, expected.loadings, rtol=0, atol=SAME)
    one = as_problem(frame, columns="score")  # a single name
    assert one.feature_names == ("score",)
    both = as_problem(frame, columns=["height", "weight", "age", "species"], drop="species")
    assert both.feature_names == ("height", "weight", "age")


def test_arrays_choose_by_their_feature_names_or_the_default_ones():
    x = table()
    assert as_problem(x, drop=["x2", "x4"]).feature_names == ("x1", "x3", "x5")
    problem = as_problem(x, feature_names=NAMES, columns=pd.Index(["age", "score"]))
    assert problem.feature_names == ("age", "score")
    np.testing.assert_array_equal(problem.input.mean, x[:, [2, 4]].mean(axis=0))
    assert spcakit.fit([list(row) for row in x], r=1, drop="x5").p == 4  # nested lists too


def test_a_covariance_keeps_the_rows_of_its_columns():
    d = spcakit.datasets.pitprops()
    keep = ["ringtop", "topdiam", "length", "moist"]
    problem = as_problem(Covariance(d.matrix, d.feature_names), columns=keep)
    idx = [d.feature_names.index(name) for name in keep]
    np.testing.assert_array_equal(problem.covariance.explicit(), d.matrix[np.ix_(idx, idx)])
    assert problem.feature_names == tuple(keep)
    assert as_problem("builtin:pitprops", drop=["knots", "diaknot"]).p == 11  # a source, as --data takes it
    frame = pd.DataFrame(d.matrix, index=d.feature_names, columns=d.feature_names)
    assert as_problem(frame, covariance=True, drop="clear").feature_names == tuple(n for n in d.feature_names if n != "clear")


@pytest.mark.parametrize(("kwargs", "phrase"), [
    ({"drop": ["hieght"]}, "drop: the data have no column 'hieght'; did you mean 'height' or 'weight'?"),
    ({"columns": ["AGE"]}, "columns: the data have no column 'AGE'; did you mean 'age'?"),
    ({"columns": ["zzz"]}, "columns: the data have no column 'zzz' (the 7 columns: id, height, weight, age"),
    ({"columns": ["age", "age"]}, "columns: 'age' named more than once"),
    ({"columns": ["age"], "drop": ["age"]}, "no column is left after columns= and drop="),
    ({"drop": [1.5]}, "drop takes column names: a name or a list of names"),
    ({"columns": {"a": 1}}, "columns takes column names"),
])  # fmt: skip
def test_bad_column_choices_say_what_is_valid(kwargs, phrase):
    with pytest.raises(InvalidParameterError) as info:
        spcakit.fit(frame_with_labels(), r=1, **kwargs)
    assert phrase in str(info.value)


def test_a_problem_or_an_operator_takes_no_column_choice():
    problem = as_problem(table())
    with pytest.raises(InvalidParameterError, match="used as it is, so columns cannot apply"):
        spcakit.fit(problem, r=1, columns=["x1"])
    with pytest.raises(InvalidParameterError, match="used as it is, so drop cannot apply"):
        spcakit.fit(problem.covariance, r=1, drop="x1")


def test_column_positions_is_a_pure_function():
    assert column_positions(("a", "b", "c")) == [0, 1, 2]
    assert column_positions(("a", "b", "c"), ["c", "a"]) == [2, 0]
    assert column_positions(("a", "b", "c"), None, ["b"]) == [0, 2]


def test_duplicate_names_are_made_unique_before_choosing():
    frame = pd.DataFrame(table()[:, :3], columns=["a", "b", "a"])
    with pytest.warns(spcakit.DuplicateNamesWarning, match=r"1 variable name\(s\) are repeated \('a'\)") as caught:
        problem = as_problem(frame, drop="b")
    assert problem.feature_names == ("a", "a-1")
    assert len(caught) == 1 and caught[0].filename == __file__  # one warning, at the caller's line


# -- choosing columns on the command line --------------------------------------------------------------------
def write_csv(path: Path, frame: pd.DataFrame) -> Path:
    frame.to_csv(path, index=False)
    return path


def run_json(cli, *args: str) -> dict:
    result = cli.invoke(*args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def fail(cli, *args: str) -> str:
    result = cli.invoke(*args)
    assert result.exit_code == 2, result.output
    return result.output


def test_cli_index_col_drop_and_columns(cli, tmp_path: Path):
    numeric = frame_with_labels().drop(columns="species")
    path = write_csv(tmp_path / "people.csv", numeric)
    reference = spcakit.fit(table(), "spcart", r=2, feature_names=NAMES)
    for choice in (["--index-col", "id"], ["--index-col", "0"], ["--drop", "id"], ["--columns", ",".join(NAMES)]):
        doc = run_json(cli, "run", "spcart", "-d", str(path), "-r", "2", *choice)
        assert doc["feature_names"] == list(NAMES), choice
        np.testing.assert_allclose(doc["loadings"], reference.loadings, rtol=0, atol=SAME)
        assert doc["input"]["shape"] == [40, 5] and doc["input"]["sha256"] == reference.input.sha256
    doc = run_json(cli, "compose", "-d", str(path), "--index-col", "id", "--drop", "age,income", "--drop", "score")
    assert doc["feature_names"] == ["height", "weight"]
    doc = run_json(cli, "run", "spcart", "-d", str(path), "--columns", "score,height", "--columns", "age")
    assert doc["feature_names"] == ["score", "height", "age"]
    doc = run_json(cli, "run", "spcart", "-d", str(path), "--index-col", "2", "-r", "1")  # position 2 is 'weight'
    assert "weight" not in doc["feature_names"] and "id" in doc["feature_names"]


def test_cli_index_col_names_a_label_column_the_reader_set_aside(cli, tmp_path: Path):
    frame = frame_with_labels().drop(columns="id")
    frame.insert(0, "name", [f"sample {i}" for i in range(len(frame))])  # text: read as row labels
    path = write_csv(tmp_path / "named.csv", frame.drop(columns="species"))
    expected = run_json(cli, "run", "spcart", "-d", str(path))
    assert expected["feature_names"] == list(NAMES)
    for spec in ("name", "0"):
        assert run_json(cli, "run", "spcart", "-d", str(path), "--index-col", spec) == {**expected, "seconds": ANY}
    assert run_json(cli, "run", "spcart", "-d", str(path), "--index-col", "1")["feature_names"] == list(NAMES[1:])


class _Any:
    def __eq__(self, other: object) -> bool:
        return True


ANY = _Any()


def test_cli_bad_column_choices(cli, tmp_path: Path):
    path = write_csv(tmp_path / "people.csv", frame_with_labels().drop(columns="species"))
    assert "Error: drop: the data have no column 'hieght'; did you mean 'height' or 'weight'?" in fail(
        cli, "run", "spcart", "-d", str(path), "--drop", "hieght")
    assert "Error: --index-col: the data have no column 'ID'; did you mean 'id'?" in fail(
        cli, "run", "spcart", "-d", str(path), "--index-col", "ID")
    assert "Error: --index-col 9: the data have 6 columns, at positions 0 to 5" in fail(
        cli, "run", "spcart", "-d", str(path), "--index-col", "9")
    assert "no column is left" in fail(cli, "run", "spcart", "-d", str(path), "--columns", "id", "--index-col", "id")
    assert "a covariance matrix has none" in fail(cli, "run", "spcart", "--index-col", "topdiam")
    assert "the data have no column 'x'" in fail(cli, "run", "spcart", "--drop", "x")  # pitprops: its own names


# -- frames out --------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def result() -> spcakit.Result:
    return spcakit.fit("builtin:pitprops", "spcart", r=6)


def test_loadings_frame(result):
    frame = result.loadings_frame()
    assert list(frame.index) == list(result.feature_names) and frame.index.name == "variable"
    assert list(frame.columns) == ["PC1", "PC2", "PC3", "PC4", "PC5", "PC6"] == list(result.component_names)
    np.testing.assert_array_equal(frame.to_numpy(), result.loadings)
    frame.iloc[0, 0] = 99.0  # a copy: the frozen result is unchanged
    assert result.loadings[0, 0] != 99.0
    assert (result.loadings_frame() != 0).sum().tolist() == result.metrics["pattern"]


def test_metrics_frame():
    result = spcakit.fit("builtin:pitprops", "spcart", r=6, metrics="all")  # every kind of metric
    frame = result.metrics_frame()
    assert list(frame.index) == [*result.component_names, "all"]
    per_component = [k for k, v in result.metrics.items() if isinstance(v, list)]
    overall = [k for k, v in result.metrics.items() if not isinstance(v, list)]
    assert list(frame.columns) == list(result.metrics)  # every built-in metric is a number or one per component
    for key in per_component:
        assert frame.loc[list(result.component_names), key].tolist() == pytest.approx(result.metrics[key])
        assert pd.isna(frame.loc["all", key])
    for key in overall:
        assert frame.loc["all", key] == pytest.approx(result.metrics[key])
        assert frame.loc[list(result.component_names), key].isna().all()
    assert str(frame["pattern"].dtype) == "Int64" and str(frame["nz"].dtype) == "Int64"
    assert frame.loc["all", "nz"] == frame["pattern"].sum() == 18
    assert frame.loc["PC6", "cumulative_variance"] == pytest.approx(frame.loc["all", "cpev"], abs=1e-12)


def test_frames_without_pandas_say_which_extra_to_install(result, monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)  # "import pandas" now raises ImportError
    for method in (result.loadings_frame, result.metrics_frame):
        with pytest.raises(ImportError, match=r"returns a pandas DataFrame, but pandas is not installed; install it "
                                              r"with pip install pandas \(or, in spcakit's repository, pip install -e '\.\[pandas\]'\)"):
            method()


def test_fit_and_its_result_never_import_pandas():
    code = (
        "import sys, spcakit\n"
        "r = spcakit.fit('builtin:random?n=30&p=6&seed=1', 'spcart', r=2, standardize=True, drop=['x3'])\n"
        "repr(r); r.to_dict()\n"
        "assert 'pandas' not in sys.modules, 'pandas was imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


# -- repr ---------------------------------------------------------------------------------------------------
def test_repr_is_a_short_summary(result):
    text = repr(result)
    assert text == "Result(method='spcart', r=6, p=13, nz=[4, 4, 2, 3, 3, 2], cpev=0.8013)"
    assert str(result) == text
    assert f"{result.metrics['cpev']:.4f}" in text and "loadings" not in text and "\n" not in text


def test_repr_of_many_components_is_elided_and_warnings_are_counted():
    x = np.random.default_rng(2).standard_normal((60, 30))
    many = spcakit.fit(x, "spcart", r=14, stopper={"name": "max-iterations", "n": 1})
    text = repr(many)
    pattern = many.metrics["pattern"]
    head = ", ".join(map(str, pattern[:7]))
    tail = ", ".join(map(str, pattern[-2:]))
    assert f"nz=[{head}, ..., {tail}]" in text and "r=14, p=30" in text
    assert len(text) < 120
    assert math.isfinite(many.metrics["cpev"])
    assert (f", warnings={len(many.warnings)})" in text) == bool(many.warnings)


# -- CSV columns that are never read (labels and IDs as text) -------------------------------------------------
def test_text_columns_that_are_dropped_are_never_read(cli, tmp_path: Path):
    frame = frame_with_labels()
    frame.insert(3, "code", [f"c-{i}" for i in range(len(frame))])  # text in the middle, too
    path = write_csv(tmp_path / "labelled.csv", frame)
    reference = spcakit.fit(table(), "spcart", r=2, feature_names=NAMES)
    message = fail(cli, "run", "spcart", "-d", str(path))
    assert "column 'code': 'c-0'" in message and "leave it out with --drop code,species" in message
    for choice in (["--drop", "species,code", "--index-col", "id"], ["--columns", ",".join(NAMES)]):
        doc = run_json(cli, "run", "spcart", "-d", str(path), "-r", "2", *choice)
        assert doc["feature_names"] == list(NAMES)
        np.testing.assert_allclose(doc["loadings"], reference.loadings, rtol=0, atol=SAME)
        assert doc["input"]["sha256"] == reference.input.sha256
    api = spcakit.fit(path, "spcart", r=2, drop=["id", "code", "species"])
    np.testing.assert_allclose(api.loadings, reference.loadings, rtol=0, atol=SAME)
    assert spcakit.fit(str(path), r=1, columns=["age", "height"]).feature_names == ("age", "height")


def test_a_bad_cell_is_still_found_beside_columns_that_are_not_read(cli, tmp_path: Path):
    frame = frame_with_labels().astype({"age": object})
    frame.loc[7, "age"] = "NA"
    path = write_csv(tmp_path / "missing.csv", frame)
    message = fail(cli, "run", "spcart", "-d", str(path), "--drop", "species", "--missing", "error")  # else imputed (issue 28)
    assert "1 cell is not a number: line 9, column 'age': 'NA' (a missing value)" in message
    assert "species" not in message.split("Error:")[1].split(";")[0]


def test_components_with_digits_are_rounded_as_they_print():
    result = spcakit.fit("builtin:pitprops", "spcart", r=3, k=4)
    for exact, rounded in zip(result.components(), result.components(digits=3)):
        weights = dict(exact)
        assert set(dict(rounded)) == set(weights)  # the same variables, a zero-rounded weight included
        for name, shown in rounded:
            assert shown == round(weights[name], 3) and f"{shown:.3f}" == f"{weights[name]:.3f}"
