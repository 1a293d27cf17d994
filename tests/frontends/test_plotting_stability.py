"""spcakit.plotting.plot_stability and plot_stable_k: PNG files, the heat-map's rows and marks, the chosen k."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import spcakit
from spcakit.core.errors import InvalidDataError, InvalidParameterError

pytest.importorskip("matplotlib")
from matplotlib.collections import QuadMesh

from spcakit import plotting

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
NAMES = [f"g{j:02d}" for j in range(1, 31)]
PLANTED = NAMES[:4]


@pytest.fixture(scope="module")
def data() -> np.ndarray:
    """50 rows of 30 variables, a strong factor on g01..g04."""
    rng = np.random.default_rng(11)
    x = rng.standard_normal((50, 30))
    x[:, :4] += 2.0 * rng.standard_normal((50, 1))
    return x


@pytest.fixture(scope="module")
def stability(data: np.ndarray) -> spcakit.Stability:
    return spcakit.stability(data, "tpower", r=2, k=4, n_resamples=20, seed=0, feature_names=NAMES)


@pytest.fixture(scope="module")
def choice(data: np.ndarray) -> spcakit.StableK:
    return spcakit.stable_k(data, "tpower", r=1, k="1:7", n_resamples=20, seed=0, feature_names=NAMES)


def saved(figure, path: Path) -> bytes:
    plotting.save(figure, path)
    return path.read_bytes()


def expected_rows(probabilities: np.ndarray, top: int) -> list[str]:
    """The heat-map's rows, worked out one variable at a time: the ``top`` most often selected in any component
    (never-selected ones left out), grouped by their best component, most often selected first, then by name."""
    ranked = sorted((-probabilities[i].max(), i) for i in range(len(NAMES)) if probabilities[i].max() > 0)[:top]
    chosen = [i for _, i in ranked]
    return [NAMES[i] for i in sorted(chosen, key=lambda i: (int(np.argmax(probabilities[i])), -probabilities[i].max(), i))]


# -- plot_stability ---------------------------------------------------------------------------------------
def test_the_heat_map_is_a_png_with_the_most_selected_variables_as_rows(stability, tmp_path: Path) -> None:
    figure = plotting.plot_stability(stability, top=8)
    assert saved(figure, tmp_path / "heat.png").startswith(PNG_SIGNATURE)
    ax = figure.axes[0]
    rows = [label.get_text() for label in ax.get_yticklabels()]
    assert rows == expected_rows(stability.probabilities, 8)
    assert rows[:4] == sorted(PLANTED)  # PC1's group first: the planted variables, each selected every time
    assert [label.get_text() for label in ax.get_xticklabels()] == ["PC1", "PC2"]
    [mesh] = [c for c in ax.collections if isinstance(c, QuadMesh)]
    order = [NAMES.index(name) for name in rows]
    np.testing.assert_array_equal(np.asarray(mesh.get_array()).reshape(8, 2), stability.probabilities[order])
    assert mesh.norm.vmin == 0.0 and mesh.norm.vmax == 1.0


def test_the_stable_cells_are_marked_with_their_value(stability) -> None:
    figure = plotting.plot_stability(stability, top=8)
    ax = figure.axes[0]
    rows = [label.get_text() for label in ax.get_yticklabels()]
    marks = sorted((round(text.get_position()[1]), round(text.get_position()[0]), text.get_text()) for text in ax.texts)
    expected = sorted((i, j, f"{stability.probabilities[NAMES.index(name), j]:.2f}")
                      for i, name in enumerate(rows) for j in range(2)
                      if stability.probabilities[NAMES.index(name), j] >= stability.threshold)  # fmt: skip
    assert marks == expected and len(marks) >= len(PLANTED)


def test_the_colour_bar_and_title_say_what_is_drawn(stability) -> None:
    figure = plotting.plot_stability(stability)
    ax, bar = figure.axes
    assert bar.get_ylabel() == "selection probability"
    assert [line.get_ydata()[0] for line in bar.lines] == [stability.threshold]
    title = ax.get_title()
    assert "tpower" in title and "20 subsamples" in title and "0.80" in title


def test_many_cells_get_dots_instead_of_values(data) -> None:
    wide = spcakit.stability(data, "tpower", r=6, k=8, n_resamples=20, seed=0, feature_names=NAMES)
    ax = plotting.plot_stability(wide, top=30).axes[0]
    rows = [label.get_text() for label in ax.get_yticklabels()]
    assert len(rows) * 6 > plotting.MAX_ANNOTATED_CELLS and not ax.texts
    [dots] = [line for line in ax.lines if line.get_label() == "stable"]
    stable = {(i, j) for i, name in enumerate(rows) for j in range(6)
              if wide.probabilities[NAMES.index(name), j] >= wide.threshold}  # fmt: skip
    assert set(zip(np.asarray(dots.get_ydata()).astype(int), np.asarray(dots.get_xdata()).astype(int))) == stable


def test_top_above_the_selected_variables_shows_those_selected(stability) -> None:
    ax = plotting.plot_stability(stability, top=1000).axes[0]
    selected = int(np.count_nonzero(stability.probabilities.max(axis=1) > 0))
    assert len(ax.get_yticklabels()) == selected


def test_the_record_draws_itself_on_a_given_axes(stability) -> None:
    figure, (left, right) = plotting.new_figure(1, 2, figsize=(10, 5))
    assert stability.plot(ax=right, top=5) is figure
    assert not left.collections and [label.get_text() for label in right.get_yticklabels()] == expected_rows(
        stability.probabilities, 5)


@pytest.mark.parametrize("top", [0, -3, 2.5, True])
def test_a_bad_top_is_refused(stability, top) -> None:
    with pytest.raises(InvalidParameterError, match="top is the number of variables to show"):
        plotting.plot_stability(stability, top=top)


def test_anything_but_a_stability_is_refused() -> None:
    with pytest.raises(InvalidDataError, match="plot_stability needs a Stability"):
        plotting.plot_stability(np.zeros((3, 2)))


# -- plot_stable_k ----------------------------------------------------------------------------------------
def test_the_stable_support_against_k_is_a_png_with_the_chosen_k_marked(choice, tmp_path: Path) -> None:
    figure = choice.plot()
    assert saved(figure, tmp_path / "k.png").startswith(PNG_SIGNATURE)
    ax = figure.axes[0]
    [curve] = [line for line in ax.lines if line.get_label() == "stable variables"]
    np.testing.assert_array_equal(curve.get_xdata(), choice.levels)
    np.testing.assert_array_equal(curve.get_ydata(), choice.stable_sizes)
    [chosen] = [line for line in ax.lines if line.get_label() == f"chosen k = {choice.chosen}"]
    assert list(chosen.get_xdata()) == [choice.chosen, choice.chosen]
    assert any(text.get_text() == f"k = {choice.chosen}" for text in ax.texts)
    assert ax.get_xlabel() == plotting.K_LABEL and "tpower" in ax.get_title()


def test_the_thresholds_are_drawn_where_one_keeps_the_bound(choice) -> None:
    right = choice.plot().axes[1]
    [line] = right.lines
    thresholds = np.asarray(choice.thresholds)
    drawn = np.asarray(line.get_ydata(), dtype=float)
    np.testing.assert_array_equal(np.isnan(drawn), thresholds > 1.0)
    np.testing.assert_allclose(drawn[thresholds <= 1.0], thresholds[thresholds <= 1.0])


def test_a_chosen_k_off_the_levels_is_refused() -> None:
    choice = SimpleNamespace(levels=(1, 2, 3), stable_sizes=(0, 2, 2), thresholds=(0.6, 0.6, 0.7), chosen=5,
                             error_bound=1.0, stability=None)  # fmt: skip
    with pytest.raises(InvalidParameterError, match="chosen = 5 is not one of the levels"):
        plotting.plot_stable_k(choice)


def test_levels_and_sizes_of_different_lengths_are_refused() -> None:
    choice = SimpleNamespace(levels=(1, 2, 3), stable_sizes=(0, 2), thresholds=(0.6, 0.6, 0.7), chosen=2)
    with pytest.raises(InvalidDataError, match="the same length"):
        plotting.plot_stable_k(choice)
