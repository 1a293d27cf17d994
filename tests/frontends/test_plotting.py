"""spcakit.plotting: the four plots as images (size, not blank, colours where the data say), byte-stable
SVG/PDF, atomic and suffix-checked saving, no pyplot and no matplotlib at import, and the Fig. 1 plots of
the ``sweep`` experiments (spcakit.workflows.reproduce.sweeps, ``spcakit reproduce encoders-fig1-NAME --out``) drawn by it."""

from __future__ import annotations

import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

import spcakit
from spcakit.core.errors import InvalidDataError, InvalidParameterError, SpcakitError

mpl = pytest.importorskip("matplotlib")
from matplotlib.image import imread  # noqa: E402

from spcakit import plotting  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
#: A pixel is "ink" when one of its channels is below this (pure white is 1.0; antialiasing greys are kept).
INK = 0.92
#: Mixed-sign loadings with exact zeros: 5 variables x 2 components.
MIXED = np.array([[0.6, 0.0], [-0.5, 0.3], [0.0, -0.7], [0.4, 0.0], [0.0, 0.6]])
NAMES = ["alpha", "beta", "gamma", "delta", "epsilon"]


def png(figure, path: Path) -> np.ndarray:
    """Save ``figure`` as PNG at its own dpi and read it back as an ``H x W x 3`` float array."""
    plotting.save(figure, path)
    return imread(path)[:, :, :3]


def ink(image: np.ndarray) -> float:
    """Fraction of pixels that are not (near-)white."""
    return float(np.mean(image.min(axis=2) < INK))


def reddish(image: np.ndarray) -> np.ndarray:
    return (image[:, :, 0] - image[:, :, 2] > 0.3) & (image[:, :, 0] > 0.5)


def bluish(image: np.ndarray) -> np.ndarray:
    return (image[:, :, 2] - image[:, :, 0] > 0.3) & (image[:, :, 2] > 0.5)


def axes_pixels(image: np.ndarray, ax) -> np.ndarray:
    """The pixels inside ``ax`` (display coordinates are pixels, origin at the bottom left), frame excluded."""
    x0, y0, x1, y1 = ax.get_window_extent().extents
    height = image.shape[0]
    return image[int(height - y1) + 2 : int(height - y0) - 2, int(x0) + 2 : int(x1) - 2]


def pixel_at(image: np.ndarray, ax, x: float, y: float) -> np.ndarray:
    """The colour at data point ``(x, y)`` of ``ax``."""
    px, py = ax.transData.transform((x, y))
    return image[int(round(image.shape[0] - py)), int(round(px))]


@pytest.fixture(scope="module")
def empty_ink(tmp_path_factory) -> float:
    """Ink of an empty 6.4 x 4 figure with one axes (frame, ticks, tick labels): what every plot must exceed."""
    figure, _ = plotting.new_figure(figsize=(6.4, 4.0))
    return ink(png(figure, tmp_path_factory.mktemp("empty") / "empty.png"))


@pytest.fixture(scope="module")
def pitprops_result():
    from spcakit import fit

    return fit("builtin:pitprops", "spcart", r=6)


# -- the four plots as images ------------------------------------------------------------------------------
def test_loadings_heat_map_has_the_size_asked_red_and_blue_cells_and_white_zeros(tmp_path):
    figure = plotting.plot_loadings(MIXED, NAMES, annotate=False, figsize=(5.0, 4.0))
    image = png(figure, tmp_path / "loadings.png")
    assert image.shape[:2] == (400, 500)  # figsize * 100 dpi, height first
    ax = figure.axes[0]
    cells = axes_pixels(image, ax)
    # per cell: red for > 0, blue for < 0, white for exactly 0
    assert reddish(cells).mean() > 0.15 and bluish(cells).mean() > 0.1
    for (i, j), value in np.ndenumerate(MIXED):
        colour = pixel_at(image, ax, j, i)
        if value > 0:
            assert colour[0] - colour[2] > 0.3, (i, j, colour)
        elif value < 0:
            assert colour[2] - colour[0] > 0.3, (i, j, colour)
        else:
            assert colour.min() > 0.99, (i, j, colour)  # blank, not the colormap's near-white centre
    assert [t.get_text() for t in ax.get_yticklabels()] == NAMES
    assert [t.get_text() for t in ax.get_xticklabels()] == ["PC1", "PC2"]


def test_loadings_of_one_sign_have_no_blue_cells(tmp_path):
    """The scale is centred at 0: positive loadings are never drawn in the negative colours."""
    figure = plotting.plot_loadings(np.abs(MIXED), NAMES, annotate=False, figsize=(5.0, 4.0))
    cells = axes_pixels(png(figure, tmp_path / "positive.png"), figure.axes[0])
    assert reddish(cells).mean() > 0.25
    assert bluish(cells).sum() == 0


def test_loadings_of_a_result_are_named_by_its_variables_and_method(tmp_path, pitprops_result, empty_ink):
    figure = plotting.plot_loadings(pitprops_result)
    ax = figure.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == list(pitprops_result.feature_names)
    assert [t.get_text() for t in ax.get_xticklabels()] == list(pitprops_result.component_names)
    assert "spcart" in ax.get_title()
    width, height = figure.get_size_inches()
    image = png(figure, tmp_path / "result.png")
    assert image.shape[:2] == (round(height * plotting.DPI), round(width * plotting.DPI))
    assert ink(image) > 2 * empty_ink
    # annotated (13 x 6 cells): one label per nonzero loading
    assert len(ax.texts) == int(np.count_nonzero(pitprops_result.loadings))


def test_a_tall_heat_map_names_a_readable_subset_of_its_rows():
    p = 3 * plotting.MAX_NAMED_ROWS
    loadings = np.zeros((p, 2))
    loadings[::7, 0], loadings[3::11, 1] = 0.5, -0.5
    names = [f"gene{i}" for i in range(p)]
    figure = plotting.plot_loadings(loadings, names)
    figure.canvas.draw()
    shown = [t.get_text() for t in figure.axes[0].get_yticklabels() if t.get_text()]
    assert 3 <= len(shown) <= plotting.MAX_NAMED_ROWS // 2 + 1
    assert set(shown) <= set(names)
    assert len(figure.axes[0].texts) == 0  # too many cells to print values


def test_drop_zero_rows_keeps_only_the_variables_in_use():
    figure = plotting.plot_loadings(MIXED[:, :1], NAMES, drop_zero_rows=True)
    assert [t.get_text() for t in figure.axes[0].get_yticklabels()] == ["alpha", "beta", "delta"]


def test_variance_bars_are_the_steps_of_the_cumulative_line(tmp_path, pitprops_result, empty_ink):
    figure = plotting.plot_variance(pitprops_result, figsize=(6.0, 3.5))
    image = png(figure, tmp_path / "variance.png")
    assert image.shape[:2] == (350, 600)
    assert ink(image) > 2 * empty_ink
    ax = figure.axes[0]
    # the default result has no cumulative_variance: the line is CPEV times the running share of the additional
    # variances, the same numbers as the metric
    from spcakit import fit

    cumulative = 100 * np.asarray(fit("builtin:pitprops", "spcart", r=6, metrics="all").metrics["cumulative_variance"])
    heights = [bar.get_height() for bar in ax.patches]
    assert heights == pytest.approx(np.diff(cumulative, prepend=0.0), abs=1e-9)
    # bar t is the additional variance of loading t over tr(C): proportional to the metric
    additional = np.asarray(pitprops_result.metrics["additional_variance"])
    assert np.asarray(heights) / additional == pytest.approx(np.full(6, heights[0] / additional[0]), rel=1e-9)
    (line,) = ax.get_lines()
    assert line.get_ydata()[-1] == pytest.approx(100 * pitprops_result.metrics["cpev"], rel=1e-9)


def test_variance_without_the_cumulative_metric_draws_bars_in_the_data_units():
    figure = plotting.plot_variance({"additional_variance": [3.0, 2.0, 0.5]})
    ax = figure.axes[0]
    assert [bar.get_height() for bar in ax.patches] == [3.0, 2.0, 0.5]
    assert ax.get_lines() == []


def test_tradeoff_draws_one_line_per_method_in_level_order_and_the_dashed_ceiling(tmp_path, empty_ink):
    paths = {
        "spcart": ([3, 1, 2, 4], [0.62, 0.31, 0.50, 0.70]),
        "tpower": ([1, 2, 3, 4], [0.35, 0.52, 0.61, 0.72]),
    }
    figure = plotting.plot_tradeoff(paths, ceiling=0.87)
    image = png(figure, tmp_path / "tradeoff.png")
    assert image.shape[:2] == (400, 640)
    assert ink(image) > 1.5 * empty_ink
    ax = figure.axes[0]
    spcart, tpower, ceiling = ax.get_lines()
    assert list(spcart.get_xdata()) == [1, 2, 3, 4] and list(spcart.get_ydata()) == [0.31, 0.50, 0.62, 0.70]
    assert list(tpower.get_ydata()) == [0.35, 0.52, 0.61, 0.72]
    assert ceiling.get_linestyle() == "--" and set(ceiling.get_ydata()) == {0.87}
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["spcart", "tpower", "PCA (0.87)"]
    assert spcart.get_marker() != tpower.get_marker()
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1", "2", "3", "4"]


def test_tradeoff_of_one_curve(tmp_path):
    figure = plotting.plot_tradeoff([1, 2, 3], [0.2, 0.4, 0.5], label="spcart", xlabel="k")
    ax = figure.axes[0]
    assert len(ax.get_lines()) == 1 and ax.get_xlabel() == "k" and ax.get_ylabel() == "CPEV"
    assert ink(png(figure, tmp_path / "one.png")) > 0.01


def test_cv_curve_marks_the_chosen_level_and_the_least_error(tmp_path, empty_ink):
    levels, mean, se = [1, 2, 3, 4, 5, 6], [5.0, 3.0, 2.0, 1.9, 1.95, 2.0], [0.3, 0.2, 0.15, 0.12, 0.13, 0.14]
    figure = plotting.plot_cv(levels, mean, se, chosen=3)
    image = png(figure, tmp_path / "cv.png")
    assert image.shape[:2] == (400, 640)
    assert ink(image) > 1.5 * empty_ink
    ax = figure.axes[0]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "chosen (3)" in labels and "least error (4)" in labels
    chosen = next(line for line in ax.get_lines() if line.get_label() == "chosen (3)")
    assert (chosen.get_xdata()[0], chosen.get_ydata()[0]) == (3, 2.0)
    # the chosen point is drawn in red where the data put it
    colour = pixel_at(image, ax, 3, 2.0)
    assert colour[0] - colour[2] > 0.3


def test_cv_without_standard_errors_or_choice():
    ax = plotting.plot_cv([1, 2, 3], [3.0, 2.0, 2.5]).axes[0]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["mean held-out error"]


def test_plots_draw_on_the_axes_given(pitprops_result):
    figure, (left, right) = plotting.new_figure(1, 2, figsize=(8.0, 3.0))
    assert plotting.plot_variance(pitprops_result, ax=left) is figure
    assert plotting.plot_tradeoff([1, 2], [0.1, 0.2], ax=right) is figure
    assert len(left.patches) == 6 and len(right.get_lines()) == 1


# -- bad input -------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("call", "error", "words"),
    [
        (lambda: plotting.plot_loadings(MIXED, NAMES[:3]), InvalidParameterError, "3 names but the loadings have 5 rows"),
        (lambda: plotting.plot_loadings([[np.nan, 1.0]]), InvalidDataError, "NaN or infinite"),
        (lambda: plotting.plot_loadings(np.zeros((3, 2)), drop_zero_rows=True), InvalidParameterError, "every loading is zero"),
        (lambda: plotting.plot_variance({"cpev": 0.5}), InvalidParameterError, "needs the metric 'additional_variance'"),
        (lambda: plotting.plot_tradeoff([1, 2, 3], [0.1, 0.2]), InvalidDataError, "same length"),
        (lambda: plotting.plot_tradeoff([1, 2]), InvalidParameterError, "give the values"),
        (lambda: plotting.plot_tradeoff({"a": ([1], [0.1])}, [0.1]), InvalidParameterError, "not both"),
        (lambda: plotting.plot_cv([1, 2], [1.0, 2.0], chosen=5), InvalidParameterError, "not one of the levels [1.0, 2.0]"),
        (lambda: plotting.plot_cv([1, 2], [1.0, 2.0], [0.1, -0.1]), InvalidDataError, "cannot be negative"),
        (lambda: plotting.new_figure(figsize=(0, 3)), InvalidParameterError, "positive"),
    ],
)
def test_bad_input_says_what_is_wrong(call, error, words):
    with pytest.raises(error) as info:
        call()
    assert words in str(info.value)


# -- saving ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["figure.jpg2", "figure", "figure.PNG.txt"])
def test_save_refuses_other_suffixes_and_writes_nothing(tmp_path, name):
    figure = plotting.plot_tradeoff([1, 2], [0.1, 0.2])
    with pytest.raises(InvalidParameterError) as info:
        plotting.save(figure, tmp_path / name)
    assert isinstance(info.value, SpcakitError)  # the CLI's exit 2
    assert ".png, .svg or .pdf" in str(info.value)
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(InvalidParameterError, match="must end in"):  # the same check, before any work
        plotting.check_plot_path(tmp_path / name)
    assert plotting.check_plot_path(tmp_path / "fine.SVG").name == "fine.SVG"


def test_save_refuses_a_folder_and_a_missing_folder(tmp_path):
    figure = plotting.plot_tradeoff([1, 2], [0.1, 0.2])
    (tmp_path / "dir.png").mkdir()
    with pytest.raises(InvalidParameterError, match="is a directory"):
        plotting.save(figure, tmp_path / "dir.png")
    with pytest.raises(InvalidParameterError, match="does not exist"):
        plotting.save(figure, tmp_path / "missing" / "plot.png")


def test_a_failed_save_leaves_the_old_file_and_no_temporary_file(tmp_path, monkeypatch):
    figure = plotting.plot_tradeoff([1, 2], [0.1, 0.2])
    target = tmp_path / "plot.svg"
    target.write_text("old", encoding="utf-8")

    def broken_savefig(buffer, **kwargs):
        buffer.write(b"<svg half")
        raise RuntimeError("renderer failed")

    monkeypatch.setattr(figure, "savefig", broken_savefig)
    with pytest.raises(RuntimeError, match="renderer failed"):
        plotting.save(figure, target)
    assert target.read_text(encoding="utf-8") == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["plot.svg"]


def test_save_keeps_the_permissions_of_the_file_it_replaces(tmp_path):
    target = tmp_path / "plot.png"
    target.write_bytes(b"old")
    target.chmod(0o640)
    plotting.save(plotting.plot_tradeoff([1, 2], [0.1, 0.2]), target)
    assert target.stat().st_mode & 0o777 == 0o640
    assert target.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("suffix", [".svg", ".pdf"])
def test_output_is_byte_identical_run_to_run(tmp_path, suffix):
    """Fixed SVG id salt and no dates: the same plot, built twice, gives the same bytes."""
    first, second = (
        plotting.save(plotting.plot_loadings(MIXED, NAMES, figsize=(3.0, 2.5)), tmp_path / f"{name}{suffix}")
        for name in ("a", "b")
    )
    assert first.read_bytes() == second.read_bytes()
    if suffix == ".svg":
        ET.fromstring(first.read_bytes())  # well-formed XML
        assert b"<dc:date>" not in first.read_bytes()


def test_plotting_leaves_the_global_matplotlib_settings_alone(tmp_path):
    before = dict(mpl.rcParams)
    plotting.save(plotting.plot_loadings(MIXED, NAMES), tmp_path / "loadings.svg")  # saved under a fixed salt
    plotting.plot_cv([1, 2], [1.0, 0.5], chosen=2)
    assert dict(mpl.rcParams) == before


def test_missing_matplotlib_is_a_clear_import_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    with pytest.raises(plotting.PlotDependencyError) as info:
        plotting.plot_tradeoff([1, 2], [0.1, 0.2])
    assert isinstance(info.value, ImportError) and isinstance(info.value, SpcakitError)
    assert str(info.value).startswith("plots need matplotlib: pip install matplotlib (or, in spcakit's repository, pip install -e '.[plot]')")


def test_import_spcakit_does_not_import_matplotlib_and_plots_never_touch_pyplot(tmp_path):
    script = f"""
import sys
import spcakit, spcakit.plotting
assert "matplotlib" not in sys.modules, "import spcakit imported matplotlib"
from spcakit import plotting
plotting.save(plotting.plot_tradeoff([1, 2], [0.1, 0.2]), {str(tmp_path / "p.png")!r})
assert "matplotlib" in sys.modules
assert "matplotlib.pyplot" not in sys.modules, "plotting imported pyplot"
print("ok")
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


# -- Fig. 1 of the encoders paper, drawn by this module ------------------------------------------------
def test_figure1_outputs_regenerate_with_a_matplotlib_svg(tmp_path):
    from spcakit.workflows.reproduce import load_experiment, sweeps

    spec = load_experiment("encoders-fig1-pitprops")
    outcome = sweeps.run_sweep(spec, sparsities=[2, 3], root=REPO)
    records = list(outcome.records)
    paths = sweeps.write_outputs(outcome, tmp_path)
    assert [p.suffix for p in paths] == [".csv", ".json", ".svg", ".md"] and all(p.exists() for p in paths)
    assert len(paths[0].read_text(encoding="utf-8").splitlines()) == 1 + 2 * len(spec.sweep.series)
    svg = paths[2].read_bytes()
    assert ET.fromstring(svg).tag == "{http://www.w3.org/2000/svg}svg"
    assert b"Matplotlib" in svg
    # two panels, one line per method in each, as the records say
    figure = sweeps.plot(spec, records)
    for ax, key in zip(figure.axes, [panel.column for panel in spec.sweep.panels]):
        lines = {line.get_label(): line for line in ax.get_lines()}
        assert set(lines) == set(spec.sweep.series)
        batch = [rec[key] for rec in records if rec["method"] == "Batch"]
        assert list(lines["Batch"].get_ydata()) == batch
    # --replot redraws the same bytes from the JSON alone
    paths[2].unlink()
    assert sweeps.replot(spec, tmp_path).read_bytes() == svg


def test_no_svg_in_the_docs_is_written_by_hand():
    svgs = sorted((REPO / "docs").rglob("*.svg"))
    assert svgs, "docs/ has no SVG"
    for path in svgs:
        assert b"<dc:title>Matplotlib v" in path.read_bytes(), f"{path} was not drawn by matplotlib"


@pytest.mark.parametrize("dataset", ["pitprops", "lymphoma", "colon"])
def test_the_committed_figure1_plots_are_what_the_script_draws_from_the_committed_data(tmp_path, dataset):
    """Byte for byte, when this matplotlib is the one that drew them (other versions draw slightly differently)."""
    from spcakit.workflows.reproduce import load_experiment, sweeps

    committed = REPO / "docs" / "figures" / f"encoders-fig1-{dataset}.svg"
    if f"<dc:title>Matplotlib v{mpl.__version__},".encode() not in committed.read_bytes():
        pytest.skip(f"{committed.name} was drawn by another matplotlib version than {mpl.__version__}")
    shutil.copy(committed.with_suffix(".json"), tmp_path)
    assert sweeps.replot(load_experiment(f"encoders-fig1-{dataset}"), tmp_path).read_bytes() == committed.read_bytes()


def test_a_result_plots_its_loadings_and_variance():
    result = spcakit.fit("builtin:pitprops", "spcart", r=3, k=4)
    heat = result.plot_loadings()
    bars = result.plot_variance()
    assert heat.axes and bars.axes
    labels = [t.get_text() for t in heat.axes[0].get_yticklabels()]
    assert "topdiam" in labels and "length" in labels  # rows named by the variables
    assert len(bars.axes[0].patches) == 3  # one bar per component
