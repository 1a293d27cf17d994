"""spcakit.workflows.model: the model file of ``spcakit run --save-model`` and ``spcakit transform``.

The scores of ``spcakit transform`` are compared with ``spcakit.SparsePCA.transform``
on the breast-cancer data (569 x 30, scikit-learn's copy): train on the first 400 rows,
score the other 169. The commands run in-process through typer's ``CliRunner`` (the ``cli`` fixture).
"""

from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import spcakit
from spcakit.core.errors import InvalidDataError, InvalidParameterError, SpecError
from spcakit.workflows.model import FORMAT_VERSION, Model, regression_map

TRAIN_ROWS = 400


def ok(cli, *args: Any) -> Any:
    result = cli.invoke(*args)
    assert result.exit_code == 0, f"exit {result.exit_code}\n{result.output}\n{result.exception!r}"
    return result


def refused(cli, *args: Any) -> str:
    """Run a command that must fail as bad input: exit 2, one ``Error:`` line, no traceback; its stderr."""
    result = cli.invoke(*args)
    assert result.exit_code == 2, f"exit {result.exit_code}\n{result.output}\n{result.exception!r}"
    assert result.stderr.startswith("Error: ") and "Traceback" not in result.output
    return result.stderr


def write_csv(path: Path, names: list[str], rows: np.ndarray, labels: list[str] | None = None) -> Path:
    """A CSV whose numbers read back exactly (Python's shortest round-trip decimals); optional text labels first."""
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow((["label"] if labels else []) + names)
        for i, row in enumerate(rows.tolist()):
            writer.writerow(([labels[i]] if labels else []) + [repr(v) for v in row])
    return path


def read_scores(text: str) -> tuple[list[str], np.ndarray]:
    rows = list(csv.reader(io.StringIO(text)))
    return rows[0], np.array([[float(v) for v in row] for row in rows[1:]])


# -- a small named data set (no optional library needed) ----------------------------------------------------
NAMES = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta"]


@pytest.fixture(scope="module")
def table() -> np.ndarray:
    rng = np.random.default_rng(7)
    factors = rng.standard_normal((120, 2))
    mixing = np.array([[3.0, 2.5, 2.0, 0.1, 0.0, 0.2], [0.0, 0.2, 0.1, 1.5, 1.2, 1.0]])
    return factors @ mixing + 0.3 * rng.standard_normal((120, 6)) + np.arange(6) * 10.0


@pytest.fixture(scope="module")
def files(cli, tmp_path_factory: pytest.TempPathFactory, table: np.ndarray) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("model")
    train = write_csv(folder / "train.csv", NAMES, table[:80])
    new = write_csv(folder / "new.csv", NAMES, table[80:])
    model = folder / "model.json"
    ok(cli, "run", "spcart", "--data", train, "-r", 2, "-k", 3, "--standardize", "--save-model", model)
    return {"folder": folder, "train": train, "new": new, "model": model}


def scores_of(cli, model: Path, data: Path, *options: Any) -> np.ndarray:
    header, scores = read_scores(ok(cli, "transform", model, "--data", data, *options).stdout)
    assert header == ["PC1", "PC2"]
    return scores


# -- the regression map --------------------------------------------------------------------------------------
def test_regression_map_is_the_transposed_pseudo_inverse() -> None:
    loadings = np.random.default_rng(0).standard_normal((9, 3))
    loadings[np.abs(loadings) < 0.6] = 0.0  # sparse, not orthogonal
    mapping, rank = regression_map(loadings)
    assert rank == 3
    # X^T W = I: the scores of a row X s are s (the regression recovers exact coefficients)
    np.testing.assert_allclose(loadings.T @ mapping, np.eye(3), atol=1e-13)
    np.testing.assert_allclose(mapping, np.linalg.pinv(loadings).T, atol=1e-13)


def test_regression_map_of_orthonormal_loadings_is_the_projection() -> None:
    q, _ = np.linalg.qr(np.random.default_rng(1).standard_normal((7, 3)))
    mapping, rank = regression_map(q)
    assert rank == 3
    np.testing.assert_allclose(mapping, q, atol=1e-14)


def test_rank_deficient_loadings_give_minimum_norm_scores_that_still_project() -> None:
    base = np.random.default_rng(2).standard_normal((6, 2))
    loadings = np.column_stack([base, base[:, 0]])  # the third loading repeats the first
    mapping, rank = regression_map(loadings)
    assert rank == 2
    rows = np.random.default_rng(3).standard_normal((5, 6))
    scores = rows @ mapping
    projection = rows @ base @ np.linalg.pinv(base)  # onto span(base) = span(loadings)
    np.testing.assert_allclose(scores @ loadings.T, projection, atol=1e-12)
    np.testing.assert_allclose(scores[:, 0], scores[:, 2], atol=1e-12)  # the weight is shared, not arbitrary


# -- the record and the file ---------------------------------------------------------------------------------
def test_save_and_load_give_an_equal_model(tmp_path: Path, table: np.ndarray) -> None:
    result = spcakit.fit(table, "tpower", r=3, k=2, standardize=True, feature_names=NAMES)
    model = Model.from_result(result)
    assert model.feature_names == tuple(NAMES) and model.component_names == ("PC1", "PC2", "PC3")
    assert model.input == result.input and model.seed == 0 and model.method == "tpower"
    model.save(tmp_path / "m.json")
    loaded = Model.load(tmp_path / "m.json")
    assert loaded == model  # numbers are written as shortest round-trip decimals
    assert Model.from_dict(json.loads(json.dumps(model.to_dict()))) == model
    assert not loaded.loadings.flags.writeable and not loaded.mean.flags.writeable  # a frozen record
    np.testing.assert_array_equal(loaded.transform(table, NAMES), model.transform(table, NAMES))


def test_an_uncentred_model_has_no_mean(tmp_path: Path, table: np.ndarray) -> None:
    model = Model.from_result(spcakit.fit(table, "spcart", r=2, k=3, center=False))
    assert model.mean is None and model.scale is None and model.to_dict()["mean"] is None
    model.save(tmp_path / "m.json")
    assert Model.load(tmp_path / "m.json") == model
    expected = table @ regression_map(model.loadings)[0]  # nothing subtracted, nothing divided
    np.testing.assert_allclose(model.transform(table), expected, rtol=1e-13)


def test_a_covariance_result_cannot_become_a_model() -> None:
    result = spcakit.fit("builtin:pitprops", "spcart", r=2)
    with pytest.raises(InvalidParameterError, match="covariance matrix"):
        Model.from_result(result)


def test_parts_that_disagree_are_refused(table: np.ndarray) -> None:
    model = Model.from_result(spcakit.fit(table, "spcart", r=2, k=3, feature_names=NAMES))
    fields = {name: getattr(model, name) for name in ("method", "feature_names", "component_names", "loadings", "mean", "scale", "input")}
    with pytest.raises(InvalidDataError, match="loadings has 5 rows but feature_names has 6"):
        Model(**{**fields, "loadings": model.loadings[:5]})
    with pytest.raises(InvalidDataError, match="component_names has 1 names"):
        Model(**{**fields, "component_names": ("PC1",)})
    with pytest.raises(InvalidDataError, match="mean must be finite"):
        Model(**{**fields, "mean": np.full(6, np.nan)})
    with pytest.raises(InvalidDataError, match="input.standardize is false but scale is given"):
        Model(**{**fields, "scale": np.ones(6)})


# -- spcakit transform reproduces SparsePCA.transform ------------------------------------------------------
@pytest.fixture(scope="module")
def cancer(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    pytest.importorskip("pandas")
    datasets = pytest.importorskip("sklearn.datasets")
    frame = datasets.load_breast_cancer(as_frame=True).data
    folder = tmp_path_factory.mktemp("cancer")
    names = [str(c) for c in frame.columns]
    values = frame.to_numpy(dtype=float)
    train = write_csv(folder / "train.csv", names, values[:TRAIN_ROWS])
    new = write_csv(folder / "new.csv", names, values[TRAIN_ROWS:])
    # the CLI reads exactly the numbers the estimator is given
    np.testing.assert_array_equal(spcakit.datasets.load_source(str(train)).matrix, values[:TRAIN_ROWS])
    return {"frame": frame, "folder": folder, "train": train, "new": new}


@pytest.mark.parametrize("standardize", [False, True], ids=["raw", "standardized"])
@pytest.mark.parametrize("method", ["spcart", "tpower"])
def test_transform_reproduces_the_estimator(cli, cancer: dict[str, Any], method: str, standardize: bool) -> None:
    frame, folder = cancer["frame"], cancer["folder"]
    model = folder / f"{method}-{standardize}.json"
    flags = ["--standardize"] if standardize else []
    ok(cli, "run", method, "--data", cancer["train"], "-r", 3, "-k", 5, *flags, "--save-model", model)
    header, scores = read_scores(ok(cli, "transform", model, "--data", cancer["new"]).stdout)

    # the estimator's default random_state=0 is the CLI's default --seed 0: the same fit
    estimator = spcakit.SparsePCA(n_components=3, method=method, k=5, standardize=standardize)
    estimator.fit(frame.iloc[:TRAIN_ROWS])
    saved = Model.load(model)
    assert saved.seed == estimator.seed_ == 0
    np.testing.assert_allclose(saved.loadings, estimator.components_.T, rtol=0, atol=1e-12)
    expected = estimator.transform(frame.iloc[TRAIN_ROWS:])
    assert header == ["PC1", "PC2", "PC3"] and scores.shape == (len(frame) - TRAIN_ROWS, 3)
    # raw scores reach ~4e3 (the 'area' columns): 1e-12 relative to their size, i.e. a few units in the last place
    tolerance = 1e-12 * max(1.0, float(np.abs(expected).max()))
    np.testing.assert_allclose(scores, expected, rtol=0, atol=tolerance)
    # the Python API gives them too, from the DataFrame
    np.testing.assert_allclose(saved.transform(frame.iloc[TRAIN_ROWS:]), expected, rtol=0, atol=tolerance)


def test_compose_saves_a_model_too(cli, cancer: dict[str, Any]) -> None:
    model = cancer["folder"] / "composed.json"
    ok(cli, "compose", "--truncator", "sparsity", "--data", cancer["train"], "-r", 2, "-k", 4, "--standardize",
       "--save-model", model)  # fmt: skip
    saved = Model.load(model)
    assert saved.method == "composed" and saved.input.standardize
    assert [int(n) for n in np.count_nonzero(saved.loadings, axis=0)] == [4, 4]
    assert scores_of_cancer(cli, model, cancer["new"]).shape == (len(cancer["frame"]) - TRAIN_ROWS, 2)


def scores_of_cancer(cli, model: Path, data: Path) -> np.ndarray:
    return read_scores(ok(cli, "transform", model, "--data", data).stdout)[1]


# -- columns of the new data ---------------------------------------------------------------------------------
def test_reordered_columns_give_identical_scores(cli, files: dict[str, Path], table: np.ndarray) -> None:
    order = [3, 0, 5, 1, 4, 2]
    shuffled = write_csv(files["folder"] / "shuffled.csv", [NAMES[j] for j in order], table[80:, order])
    # matched by name and put back in the model's order, the arithmetic is the same to the last bit
    np.testing.assert_array_equal(scores_of(cli, files["model"], shuffled), scores_of(cli, files["model"], files["new"]))


def test_missing_columns_are_refused_by_name(cli, files: dict[str, Path], table: np.ndarray) -> None:
    fewer = write_csv(files["folder"] / "fewer.csv", NAMES[:4], table[80:, :4])
    message = refused(cli, "transform", files["model"], "--data", fewer)
    assert "lack 2 of the model's 6 variables: 'epsilon', 'zeta'" in message


def test_a_misspelt_column_is_refused_with_the_close_name(cli, files: dict[str, Path], table: np.ndarray) -> None:
    misspelt = write_csv(files["folder"] / "misspelt.csv", [*NAMES[:5], "zetta"], table[80:])
    message = refused(cli, "transform", files["model"], "--data", misspelt)
    assert "'zeta' (did you mean 'zetta'?)" in message


def test_extra_columns_are_refused_unless_dropped(cli, files: dict[str, Path], table: np.ndarray) -> None:
    rows = np.column_stack([table[80:], np.arange(40.0)])
    wider = write_csv(files["folder"] / "wider.csv", [*NAMES, "batch"], rows)
    message = refused(cli, "transform", files["model"], "--data", wider)
    assert "1 column(s) the model was not fitted to: 'batch'" in message and "--drop 'batch'" in message
    expected = scores_of(cli, files["model"], files["new"])
    np.testing.assert_array_equal(scores_of(cli, files["model"], wider, "--drop", "batch"), expected)
    np.testing.assert_array_equal(scores_of(cli, files["model"], wider, "--columns", ",".join(NAMES)), expected)


def test_label_and_id_columns(cli, files: dict[str, Path], table: np.ndarray) -> None:
    # a first column of text is the rows' labels (the reader sets it aside); a numeric ID column must be left out
    labels = [f"sample-{i}" for i in range(40)]
    rows = np.column_stack([table[80:], 1000.0 + np.arange(40)])
    labelled = write_csv(files["folder"] / "labelled.csv", [*NAMES, "id"], rows, labels=labels)
    expected = scores_of(cli, files["model"], files["new"])
    assert "'id'" in refused(cli, "transform", files["model"], "--data", labelled)
    np.testing.assert_array_equal(scores_of(cli, files["model"], labelled, "--index-col", "id"), expected)
    np.testing.assert_array_equal(scores_of(cli, files["model"], labelled, "--drop", "id"), expected)
    np.testing.assert_array_equal(scores_of(cli, files["model"], labelled, "--index-col", "label", "--drop", "id"), expected)


def test_unnamed_data_go_by_position(cli, files: dict[str, Path], table: np.ndarray) -> None:
    np.save(files["folder"] / "new.npy", table[80:])
    np.save(files["folder"] / "five.npy", table[80:, :5])
    expected = scores_of(cli, files["model"], files["new"])
    np.testing.assert_array_equal(scores_of(cli, files["model"], files["folder"] / "new.npy"), expected)
    message = refused(cli, "transform", files["model"], "--data", files["folder"] / "five.npy")
    assert "5 columns but the model has p = 6 variables" in message


def test_sparse_data_are_scored_without_densifying(cli, files: dict[str, Path], table: np.ndarray) -> None:
    """A scipy.sparse matrix (and a .npz of save_npz) gives the dense data's scores, X W - 1 (mu^T W)."""
    scipy_sparse = pytest.importorskip("scipy.sparse")
    rows = table[80:].copy()
    rows[np.abs(rows - rows.mean(axis=0)) < 0.5] = 0.0  # some zeros, so that the matrix stores fewer entries
    model = Model.load(files["model"])
    dense = model.transform(rows)
    for matrix in (scipy_sparse.csr_array(rows), scipy_sparse.csc_matrix(rows), scipy_sparse.coo_array(rows)):
        np.testing.assert_allclose(model.transform(matrix), dense, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(model.transform(scipy_sparse.csr_array(rows[:, ::-1]), NAMES[::-1]), dense,
                               rtol=1e-12, atol=1e-12)  # fmt: skip
    scipy_sparse.save_npz(files["folder"] / "new_sparse.npz", scipy_sparse.csr_array(rows))
    np.testing.assert_allclose(scores_of(cli, files["model"], files["folder"] / "new_sparse.npz"), dense, rtol=1e-12, atol=1e-12)
    holes = scipy_sparse.csr_array(rows)
    holes.data[3] = np.inf
    with pytest.raises(InvalidDataError, match="NaN or infinite"):
        model.transform(holes)


def test_missing_values_are_scored_from_the_observed_entries(cli, files: dict[str, Path], table: np.ndarray) -> None:
    # (refused until missing values were supported, issue 28: a row with NaN is now scored from its observed
    # entries by least squares, spcakit.workflows.imputation.observed_scores; infinite entries stay refused)
    rows = table[80:].copy()
    rows[4, 2] = np.nan
    model = Model.load(files["model"])
    scores = model.transform(rows, NAMES)
    complete = np.delete(np.arange(rows.shape[0]), 4)
    np.testing.assert_allclose(scores[complete], model.transform(table[80:], NAMES)[complete], rtol=1e-12, atol=1e-12)
    observed = np.array([0, 1, 3, 4, 5])
    centred = rows[4, observed] - (0.0 if model.mean is None else model.mean[observed])
    if model.scale is not None:
        centred = centred / model.scale[observed]
    expected = np.linalg.lstsq(model.loadings[observed], centred, rcond=None)[0]
    np.testing.assert_allclose(scores[4], expected, rtol=1e-10, atol=1e-12)
    holes = write_csv(files["folder"] / "holes.csv", NAMES, rows)
    np.testing.assert_allclose(scores_of(cli, files["model"], holes), scores, rtol=1e-12, atol=1e-12)
    rows[4, 2] = np.inf
    with pytest.raises(InvalidDataError, match=r"infinite at row 4, column 2 \('gamma'\)"):
        model.transform(rows, NAMES)


def test_json_output_and_out_file(cli, files: dict[str, Path]) -> None:
    expected = scores_of(cli, files["model"], files["new"])
    document = json.loads(ok(cli, "transform", files["model"], "--data", files["new"], "--json").stdout)
    assert document["component_names"] == ["PC1", "PC2"] and document["n"] == 40 and document["r"] == 2
    np.testing.assert_array_equal(np.array(document["scores"]), expected)
    out = files["folder"] / "scores.csv"
    result = ok(cli, "transform", files["model"], "--data", files["new"], "--out", out)
    assert result.stdout == ""  # the scores go to the file only
    header, scores = read_scores(out.read_text())
    assert header == ["PC1", "PC2"]
    np.testing.assert_array_equal(scores, expected)


def test_transform_never_writes_over_its_inputs(cli, files: dict[str, Path]) -> None:
    for target in (files["new"], files["model"]):
        before = target.read_bytes()
        message = refused(cli, "transform", files["model"], "--data", files["new"], "--out", target)
        assert "would destroy the input" in message and target.read_bytes() == before


# -- --save-model ---------------------------------------------------------------------------------------------
def test_save_model_never_overwrites_the_input(cli, files: dict[str, Path]) -> None:
    train = files["train"]
    link = files["folder"] / "link.csv"
    if not link.exists():
        os.symlink(train, link)
    before = train.read_bytes()
    for target in (train, link):
        message = refused(cli, "run", "spcart", "--data", train, "-k", 3, "--save-model", target)
        assert message.startswith(f"Error: --save-model {target} is the input file")
    assert train.read_bytes() == before and link.is_symlink()


def test_save_model_is_written_only_when_the_run_succeeds(cli, files: dict[str, Path]) -> None:
    target = files["folder"] / "failed.json"
    refused(cli, "run", "spcart", "--data", files["train"], "-k", 99, "--save-model", target)
    assert not target.exists()
    refused(cli, "run", "spcart", "--data", "builtin:pitprops", "--save-model", target)  # a covariance: no means
    assert not target.exists()
    message = refused(cli, "run", "spcart", "--data", files["train"], "--out", target, "--save-model", target)
    assert "same file" in message and not target.exists()


# -- bad model files ------------------------------------------------------------------------------------------
def _edited(files: dict[str, Path], name: str, change: Any) -> Path:
    document = json.loads(files["model"].read_text())
    change(document)
    path = files["folder"] / name
    path.write_text(json.dumps(document))
    return path


def _set(key: str, value: Any) -> Any:
    return lambda d: d.__setitem__(key, value)


BAD_MODELS = {
    "newer-version": (_set("format_version", FORMAT_VERSION + 1), "written by a newer spcakit"),
    "no-format": (lambda d: d.pop("format"), "not a spcakit model file (no 'format' key"),
    "short-loadings": (lambda d: d["loadings"].pop(), "loadings has 5 rows but feature_names has 6"),
    "ragged-loadings": (lambda d: d["loadings"][2].pop(), "loadings[2] has 1 entries but loadings[0] has 2"),
    "nan-loading": (lambda d: d["loadings"][1].__setitem__(0, float("nan")), "loadings[1][0]: must be a finite number; got nan"),
    "short-mean": (lambda d: d["mean"].pop(), "mean must have one entry per variable (p = 6)"),
    "zero-scale": (lambda d: d["scale"].__setitem__(4, 0.0), "scale must be positive"),
    "no-loadings": (lambda d: d.pop("loadings"), "missing required key 'loadings'"),
    "text-names": (_set("feature_names", "alpha"), "feature_names: must be an array of names"),
}


@pytest.mark.parametrize("case", sorted(BAD_MODELS))
def test_bad_model_files_are_refused_clearly(cli, files: dict[str, Path], case: str) -> None:
    change, expected = BAD_MODELS[case]
    path = _edited(files, f"{case}.json", change)
    message = refused(cli, "transform", path, "--data", files["new"])
    assert message.startswith(f"Error: {path}: ") and expected in message
    with pytest.raises(SpecError, match="^" + str(path).replace("\\", "\\\\")):
        Model.load(path)


def test_truncated_and_misplaced_files_are_refused_clearly(cli, files: dict[str, Path]) -> None:
    truncated = files["folder"] / "truncated.json"
    truncated.write_bytes(files["model"].read_bytes()[:300])
    message = refused(cli, "transform", truncated, "--data", files["new"])
    assert "not JSON" in message and "it may be truncated" in message and "--save-model" in message
    swapped = refused(cli, "transform", files["new"], "--data", files["model"])  # data and model swapped
    assert "the new data go in --data" in swapped
    result_json = files["folder"] / "result.json"
    ok(cli, "run", "spcart", "--data", files["train"], "-k", 3, "--out", result_json)
    assert "this is the JSON result of spcakit run" in refused(cli, "transform", result_json, "--data", files["new"])
    assert "does not exist" in refused(cli, "transform", files["folder"] / "nope.json", "--data", files["new"])


def test_a_dataframe_is_matched_by_name_and_its_text_columns_can_be_dropped(cli, files: dict[str, Path], table: np.ndarray) -> None:
    pandas = pytest.importorskip("pandas")
    model = Model.load(files["model"])
    frame = pandas.DataFrame(table[80:][:, ::-1], columns=NAMES[::-1])
    frame["diagnosis"] = ["M", "B"] * 20
    expected = scores_of(cli, files["model"], files["new"])
    np.testing.assert_array_equal(model.transform(frame, drop="diagnosis"), expected)
    with pytest.raises(InvalidDataError, match="not fitted to: 'diagnosis'"):
        model.transform(frame)
