"""The tutorial's committed figures plot what ``docs/make_figures.py`` plots now.

The PNGs of ``docs/figures/tutorial/`` are drawn by the script and committed (the README and the tutorial show
them); a change to a method's fits can make them stale without anything failing (TPower's line in
``tradeoff.png`` once was, 0.30 at k = 4 where the script drew 0.36). Comparing PNG bytes would fail on
another matplotlib or FreeType for nothing; instead the script writes ``figures.json`` beside the PNGs, every
series the figures plot (lines' x and y, bars' heights, heat-maps' cells, the names on the axes), committed
with them, and this test runs the script's data part (the fits and plots, no files: about 8 s on a 2-core
machine) and compares its numbers with the committed ones. When it fails: ``python docs/make_figures.py``,
look at the figures, and commit the PNGs with ``figures.json``.

Skipped, with the reason, where matplotlib or scikit-learn (the plot and sklearn extras) is missing.
"""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "docs" / "make_figures.py"
#: The numbers come from iterative fits (power iterations, eigen-solvers, sums in BLAS), whose last bits may
#: change with the machine, the BLAS or the thread count but not what a figure shows: a plotted value moves
#: by about 1e-3 of the axis before a pixel changes. rtol 1e-6 is far inside that, and far outside such noise
#: (and the JSON's rounding to 10 digits); ATOL does the same for values that are 0 in one of the two.
RTOL = 1e-6
ATOL = 1e-9


def load_script() -> Any:
    missing = [name for name in ("matplotlib", "sklearn") if importlib.util.find_spec(name) is None]
    if missing:
        pytest.skip(f"the tutorial's figures need {', '.join(missing)}: pip install -e '.[plot,sklearn]'")
    spec = importlib.util.spec_from_file_location("make_figures", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def differences(committed: Any, now: Any, where: str) -> list[str]:
    """Where ``now`` differs from ``committed`` (numbers at RTOL/ATOL, everything else exactly)."""
    if isinstance(committed, dict) and isinstance(now, dict):
        out = [f"{where}.{key}: only in the committed data" for key in committed.keys() - now.keys()]
        out += [f"{where}.{key}: not in the committed data" for key in now.keys() - committed.keys()]
        for key in (key for key in committed if key in now):  # in the file's order
            out += differences(committed[key], now[key], f"{where}.{key}")
        return out
    if isinstance(committed, list) and isinstance(now, list):
        if len(committed) != len(now):
            return [f"{where}: {len(committed)} values committed, {len(now)} now"]
        out = []
        for index, (a, b) in enumerate(zip(committed, now)):
            out += differences(a, b, f"{where}[{index}]")
        return out
    numbers = (int, float)
    if isinstance(committed, numbers) and isinstance(now, numbers) and not isinstance(committed, bool):
        if math.isclose(committed, now, rel_tol=RTOL, abs_tol=ATOL):
            return []
        return [f"{where}: {committed!r} committed, {now!r} now"]
    return [] if committed == now else [f"{where}: {committed!r} committed, {now!r} now"]


def test_committed_figures_plot_what_the_script_plots() -> None:
    script = load_script()
    committed_file = script.FIGURES / script.DATA_FILE
    assert committed_file.is_file(), f"{committed_file} is missing: run python docs/make_figures.py and commit it"
    committed = json.loads(committed_file.read_text(encoding="utf-8"))
    now = json.loads(json.dumps(script.figure_data()))  # as written: the same rounding, None for NaN
    assert set(now) == set(committed), f"figures now {sorted(now)}, committed {sorted(committed)}"
    for name in now:
        assert (script.FIGURES / name).is_file(), f"docs/figures/tutorial/{name} is not committed"
    found = differences(committed, now, "figures.json")
    shown = "\n".join(found[:20]) + (f"\n... and {len(found) - 20} more" if len(found) > 20 else "")
    assert not found, (
        "the tutorial's committed figures are stale (docs/figures/tutorial/figures.json against what "
        f"docs/make_figures.py plots now):\n{shown}\nrun python docs/make_figures.py and commit the PNGs and figures.json"
    )


def test_comparison_sees_a_changed_value() -> None:
    committed = {"a.png": {"axes": [{"lines": [{"label": "x", "y": [0.1, 0.30, None]}]}]}}
    assert not differences(committed, {"a.png": {"axes": [{"lines": [{"label": "x", "y": [0.1 + 1e-12, 0.30, None]}]}]}}, "f")
    moved = differences(committed, {"a.png": {"axes": [{"lines": [{"label": "x", "y": [0.1, 0.36, None]}]}]}}, "f")
    assert moved == ["f.a.png.axes[0].lines[0].y[1]: 0.3 committed, 0.36 now"]
    assert differences(committed, {"a.png": {"axes": [{"lines": [{"label": "y", "y": [0.1, 0.30, None]}]}]}}, "f")
    assert differences(committed, {"a.png": {"axes": [{"lines": [{"label": "x", "y": [0.1, 0.30]}]}]}}, "f")
