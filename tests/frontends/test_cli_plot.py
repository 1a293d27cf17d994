"""``spcakit plot KIND INPUT --out FIG`` and :mod:`spcakit.figures`: each kind drawn from the JSON its command
writes, as an image of the size asked that is not blank and shows the document's numbers; bad kinds, inputs
of the wrong command, unsupported suffixes and a missing matplotlib exit 2 with nothing written."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from spcakit.inputs.datasets import PITPROPS_NAMES

mpl = pytest.importorskip("matplotlib")
from matplotlib.image import imread  # noqa: E402

from spcakit import figures, plotting  # noqa: E402

#: A pixel is "ink" when one of its channels is below this (white is 1.0).
INK = 0.92
#: The size every image test asks for: 5 x 3.5 inches at 80 dpi is 400 x 280 pixels.
SIZE = ("--width", "5", "--height", "3.5", "--dpi", "80")
SIZE_PIXELS = (280, 400)  # height, width
#: A plot must have this many times the ink of an empty axes (frame, ticks and tick labels only) of the same
#: size: measured, the four plots have 5 to 13 times as much (an empty 400 x 280 axes inks about 2 % of its
#: pixels), so 3 leaves room for other fonts and still fails a plot that lost its lines, bars or cells.
INK_RATIO = 3
#: A cross-validation document of the shape `spcakit cv --json` writes (parallel lists, the chosen level, the
#: rule), by hand: the malformed variants below change one key of it.
CV_DOCUMENT = {
    "method": "spcart", "knob": "k", "rule": "one-standard-error",
    "levels": [1, 2, 3, 4, 5, 6, 7, 8],
    "mean_error": [0.90, 0.70, 0.55, 0.45, 0.42, 0.41, 0.405, 0.41],
    "std_error": [0.03, 0.03, 0.02, 0.02, 0.02, 0.02, 0.02, 0.02],
    "chosen": 5,
}  # fmt: skip


def ok(cli, *args: Any) -> Any:
    result = cli.invoke(*args)
    assert result.exit_code == 0, f"exit {result.exit_code}\n{result.output}\n{result.exception!r}"
    return result


def fails(cli, *args: Any) -> str:
    """Run a command that must be refused: exit 2, one ``Error:`` line; returns the message."""
    result = cli.invoke(*args)
    assert result.exit_code == 2, f"exit {result.exit_code}\n{result.output}"
    assert result.exception is None or isinstance(result.exception, SystemExit)
    lines = result.stderr.strip().splitlines()
    assert lines and lines[-1].startswith("Error: "), result.output
    return lines[-1]


def grey(path: Path) -> np.ndarray:
    """The PNG at ``path`` as an ``H x W`` array of grey levels in [0, 1]."""
    return imread(path)[:, :, :3].mean(axis=2)


def ink(image: np.ndarray) -> float:
    return float(np.mean(image < INK))


@pytest.fixture(scope="module")
def inputs(cli, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The JSON files each kind reads, written by the commands that write them (and the hand-made cv document)."""
    folder = tmp_path_factory.mktemp("json")
    run, path, path_r2, cv = (folder / f"{name}.json" for name in ("run", "path", "path_r2", "cv"))
    ok(cli, "run", "spcart", "-d", "builtin:pitprops", "-r", "6", "-k", "4", "--json", "--out", run)
    ok(cli, "path", "spcart", "-d", "builtin:pitprops", "-r", "6", "-k", "1:13", "--json", "--out", path)
    ok(cli, "path", "tpower", "-d", "builtin:pitprops", "-r", "2", "-k", "1:5", "--json", "--out", path_r2)
    # cross-validation needs rows: Gaussian data with a planted support, 60 x 8, three folds, four levels
    data = folder / "spiked.csv"
    rng = np.random.default_rng(3)
    factor = np.array([1.0, -1.0, 1.0, 0, 0, 0, 0, 0])
    x = 2 * rng.standard_normal((60, 1)) * factor + rng.standard_normal((60, 8))
    data.write_text("a,b,c,d,e,f,g,h\n" + "\n".join(",".join(repr(float(v)) for v in row) for row in x) + "\n")
    ok(cli, "cv", "spcart", "-d", data, "-r", "1", "-k", "1:4", "--folds", "3", "--json", "--out", cv)
    by_hand = folder / "cv_by_hand.json"
    by_hand.write_text(json.dumps(CV_DOCUMENT))
    return {"run": run, "path": path, "path_r2": path_r2, "cv": cv, "cv_by_hand": by_hand}


#: Each kind and the input it reads.
KIND_INPUTS = [("path", "path"), ("loadings", "run"), ("variance", "run"), ("cv", "cv"), ("cv", "cv_by_hand")]


@pytest.fixture(scope="module")
def empty(tmp_path_factory: pytest.TempPathFactory) -> np.ndarray:
    """An empty axes (frame, ticks, tick labels) at the test size, in grey levels: what every plot must exceed."""
    figure, _ = plotting.new_figure(figsize=(5.0, 3.5))
    return grey(plotting.save(figure, tmp_path_factory.mktemp("empty") / "empty.png", dpi=80))


# -- each kind as an image ------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind, source", KIND_INPUTS)
def test_each_kind_is_a_png_of_the_size_asked_and_not_blank(cli, kind, source, inputs, empty, tmp_path):
    out = tmp_path / f"{kind}.png"
    result = ok(cli, "plot", kind, inputs[source], "--out", out, *SIZE)
    assert f"wrote the {kind} plot to {out}" in result.stderr
    image = grey(out)
    assert image.shape == empty.shape == SIZE_PIXELS  # 3.5 x 80 rows, 5 x 80 columns
    assert float(image.std()) > float(empty.std())  # more contrast than a bare frame (0.15-0.24 against 0.11)
    assert ink(image) > INK_RATIO * ink(empty), (ink(image), ink(empty))


@pytest.mark.parametrize("kind, source", KIND_INPUTS)
def test_default_size_is_the_plots_own_at_100_dpi(cli, kind, source, inputs, tmp_path):
    out = tmp_path / f"{kind}.png"
    ok(cli, "plot", kind, inputs[source], "--out", out)
    width, height = figures.figure_from_json(kind, inputs[source]).get_size_inches()
    assert grey(out).shape == (round(height * plotting.DPI), round(width * plotting.DPI))


def test_one_side_given_keeps_the_other_default(cli, inputs, tmp_path):
    out = tmp_path / "wide.png"
    ok(cli, "plot", "path", inputs["path"], "--out", out, "--width", "8")
    assert grey(out).shape == (400, 800)  # plot_tradeoff's default height, 4 inches, at 100 dpi


@pytest.mark.parametrize("suffix, magic", [(".svg", b"<?xml"), (".pdf", b"%PDF-")])
def test_svg_and_pdf_by_suffix(cli, suffix, magic, inputs, tmp_path):
    out = tmp_path / f"loadings{suffix}"
    ok(cli, "plot", "loadings", inputs["run"], "--out", out)
    assert out.read_bytes().startswith(magic)


# -- the figures show the documents' numbers ----------------------------------------------------------------
def test_path_figure_draws_the_levels_cpev_and_ceiling(inputs):
    document = json.loads(inputs["path"].read_text())
    figure = figures.figure_from_json("path", inputs["path"])
    (ax,) = figure.axes
    curve, ceiling = ax.lines
    assert curve.get_xdata().tolist() == [level["k"] for level in document["levels"]]
    assert curve.get_ydata().tolist() == [level["cpev"] for level in document["levels"]]
    assert curve.get_label() == "spcart"
    assert np.asarray(ceiling.get_ydata()).tolist() == [document["ceiling"]] * 2
    assert ax.get_title() == "spcart on builtin:pitprops, r = 6"


def test_several_paths_of_the_same_data_and_r_are_one_line_each(cli, inputs, tmp_path):
    other = tmp_path / "tpower.json"
    ok(cli, "path", "tpower", "-d", "builtin:pitprops", "-r", "6", "-k", "1:13", "--json", "--out", other)
    figure = figures.figure_from_json("path", [inputs["path"], other])
    labels = [line.get_label() for line in figure.axes[0].lines]
    assert labels[:2] == ["spcart", "tpower"] and labels[2].startswith("PCA")
    ok(cli, "plot", "path", inputs["path"], other, "--out", tmp_path / "both.png")


def test_loadings_figure_names_the_variables_and_keeps_the_zeros(inputs):
    document = json.loads(inputs["run"].read_text())
    figure = figures.figure_from_json("loadings", document)
    ax = figure.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == list(PITPROPS_NAMES)
    assert ax.get_title() == "spcart: loadings"
    mesh = ax.collections[0]
    drawn = np.ma.getdata(mesh.get_array()).reshape(13, 6)
    assert np.array_equal(drawn, np.asarray(document["loadings"]))
    assert int(np.ma.count_masked(mesh.get_array())) == 13 * 6 - 6 * 4  # -k 4: the zeros are not coloured


def test_variance_figure_bars_are_the_documents_variance(inputs):
    document = json.loads(inputs["run"].read_text())
    figure = figures.figure_from_json("variance", inputs["run"])
    heights = [bar.get_height() for bar in figure.axes[0].patches]
    metrics = document["metrics"]  # the run's default metrics: CPEV and the additional variances
    additional = np.asarray(metrics["additional_variance"])
    expected = 100 * metrics["cpev"] * additional / additional.sum()
    assert heights == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("source", ["cv", "cv_by_hand"])
def test_cv_figure_draws_the_curve_and_marks_the_chosen_level(source, inputs):
    document = json.loads(inputs[source].read_text())
    figure = figures.figure_from_json("cv", inputs[source])
    ax = figure.axes[0]
    (curve,) = ax.containers  # the error bars' container holds the mean line
    assert np.asarray(curve.lines[0].get_xdata()).tolist() == document["levels"]
    assert np.asarray(curve.lines[0].get_ydata()).tolist() == document["mean_error"]
    chosen = [line for line in ax.lines if line.get_label().startswith("chosen")]
    assert len(chosen) == 1 and np.asarray(chosen[0].get_xdata()).tolist() == [document["chosen"]]
    assert ax.get_title().startswith("spcart: cross-validation (")


def test_cv_document_also_draws_its_refit_result(inputs):
    document = json.loads(inputs["cv"].read_text())
    figure = figures.figure_from_json("loadings", document)
    drawn = np.ma.getdata(figure.axes[0].collections[0].get_array()).reshape(-1, 1)
    assert np.array_equal(drawn, np.asarray(document["result"]["loadings"]))
    assert int(np.count_nonzero(drawn)) == document["chosen"]  # r = 1: the chosen k nonzeros
    heights = [bar.get_height() for bar in figures.figure_from_json("variance", document).axes[0].patches]
    assert heights == pytest.approx([100 * document["result"]["metrics"]["cpev"]], abs=1e-12)


def test_title_option_replaces_the_default(inputs):
    assert figures.figure_from_json("cv", inputs["cv_by_hand"], title="").axes[0].get_title() == ""
    assert figures.figure_from_json("path", inputs["path"], title="mine").axes[0].get_title() == "mine"


def test_model_file_draws_as_loadings(cli, tmp_path):
    model = tmp_path / "model.json"
    ok(cli, "run", "spcart", "-d", "builtin:random?n=40&p=6&seed=2", "-r", "2", "-k", "3", "--save-model", model)
    figure = figures.figure_from_json("loadings", model)
    assert [t.get_text() for t in figure.axes[0].get_yticklabels()] == [f"x{i}" for i in range(1, 7)]
    message = fails(cli, "plot", "variance", model, "--out", tmp_path / "v.png")
    assert "is a model file (--save-model), which holds no metrics" in message


# -- errors: exit 2, the message, nothing written -----------------------------------------------------------
def test_unknown_kind_names_the_valid_ones(cli, inputs, tmp_path):
    out = tmp_path / "x.png"
    assert fails(cli, "plot", "heatmap", inputs["run"], "--out", out) == (
        "Error: unknown kind of plot 'heatmap'; choose one of: path, loadings, variance, cv"
    )
    assert not out.exists()


@pytest.mark.parametrize(
    "kind, source, writer, hint",
    [
        ("loadings", "path", "`spcakit run METHOD ... --out FILE`", "plot it with `spcakit plot path`"),
        ("variance", "cv_by_hand", "`spcakit run METHOD ... --out FILE`", "plot it with `spcakit plot cv`"),
        ("path", "cv", "`spcakit path METHOD ... --json --out FILE`", "plot it with `spcakit plot cv`"),
        ("path", "run", "`spcakit path METHOD ... --json --out FILE`", "plot it with `spcakit plot loadings`"),
        ("cv", "run", "`spcakit cv METHOD ... --json --out FILE`", "plot it with `spcakit plot loadings`"),
    ],
)
def test_input_of_another_command_names_the_command_that_writes_the_right_one(cli, kind, source, writer, hint, inputs, tmp_path):
    out = tmp_path / "x.png"
    message = fails(cli, "plot", kind, inputs[source], "--out", out)
    assert f"is not the JSON of {writer}" in message and hint in message
    assert not out.exists()


@pytest.mark.parametrize(
    "change, expected",
    [
        ({"mean_error": None}, "it has no 'mean_error'"),
        ({"levels": None, "mean_error": None}, "it has no 'levels' and no 'mean_error'"),
        ({"std_error": [0.1, 0.2]}, "'std_error' has 2 values but 'levels' has 8"),
        ({"levels": "1:8"}, "'levels' must be a nonempty list of numbers"),
        ({"chosen": 9}, "chosen = 9 is not one of the levels"),
        ({"chosen": "four"}, "'chosen' must be one of the levels (a number)"),
        ({"std_error": [-0.1] * 8}, "a standard error cannot be negative"),
    ],
)
def test_malformed_cv_document_is_refused_by_key(cli, change, expected, tmp_path):
    document = {key: value for key, value in {**CV_DOCUMENT, **change}.items() if value is not None}
    source = tmp_path / "cv.json"
    source.write_text(json.dumps(document))  # the hand-made document, one key changed
    out = tmp_path / "cv.png"
    assert expected in fails(cli, "plot", "cv", source, "--out", out)
    assert not out.exists()


def test_file_that_is_not_json_or_missing(cli, tmp_path):
    truncated = tmp_path / "cut.json"
    truncated.write_text('{"levels": [1, 2')
    assert "cut.json: not JSON (" in fails(cli, "plot", "path", truncated, "--out", tmp_path / "p.png")
    listed = tmp_path / "list.json"
    listed.write_text("[1, 2]")
    assert "the JSON is a list, not an object" in fails(cli, "plot", "path", listed, "--out", tmp_path / "p.png")
    message = fails(cli, "plot", "path", tmp_path / "absent.json", "--out", tmp_path / "p.png")
    assert "absent.json' does not exist; give the JSON written by `spcakit path" in message


def test_unsupported_suffix_is_refused_before_reading(cli, tmp_path):
    out = tmp_path / "figure.jpg"
    message = fails(cli, "plot", "path", tmp_path / "absent.json", "--out", out)  # the output is checked first
    assert "it has the suffix '.jpg'; the file name must end in .png, .svg or .pdf" in message
    assert not out.exists()


def test_failure_leaves_an_existing_figure_untouched(cli, inputs, tmp_path):
    out = tmp_path / "figure.png"
    out.write_bytes(b"the previous figure")
    fails(cli, "plot", "loadings", inputs["path"], "--out", out)
    assert out.read_bytes() == b"the previous figure"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["figure.png"]  # no temporary file left behind


def test_paths_of_different_r_are_not_drawn_together(cli, inputs, tmp_path):
    message = fails(cli, "plot", "path", inputs["path"], inputs["path_r2"], "--out", tmp_path / "p.png")
    assert "the paths have different PCA ceilings" in message and "plot the others separately" in message


def test_other_kinds_take_one_input(cli, inputs, tmp_path):
    message = fails(cli, "plot", "loadings", inputs["run"], inputs["run"], "--out", tmp_path / "l.png")
    assert "`spcakit plot loadings` draws one JSON file; got 2" in message


@pytest.mark.parametrize(
    "option, value, expected",
    [("--dpi", "0", "dpi must be a positive number"), ("--width", "-2", "width must be a positive number of inches")],
)
def test_sizes_must_be_positive(cli, option, value, expected, inputs, tmp_path):
    out = tmp_path / "p.png"
    assert expected in fails(cli, "plot", "path", inputs["path"], "--out", out, option, value)
    assert not out.exists()


def test_missing_matplotlib_is_a_clear_error(cli, inputs, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    out = tmp_path / "p.png"
    message = fails(cli, "plot", "path", inputs["path"], "--out", out)
    assert message.startswith("Error: plots need matplotlib: pip install matplotlib (or, in spcakit's repository, pip install -e '.[plot]')")
    assert not out.exists()


def test_help_lists_plot(cli):
    assert "plot" in ok(cli, "--help").stdout
    usage = ok(cli, "plot", "--help").stdout
    for option in ("--out", "--title", "--width", "--height", "--dpi"):
        assert option in usage
