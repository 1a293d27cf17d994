"""``spcakit stability``: the stable supports of planted data in text and JSON, ``--top``, a grid of ``k``, threads
and a cluster giving the numbers of one thread, the progress line, and bad input refused (exit 2, nothing written).

The data: 60 rows of 40 variables, the first five (``v01``..``v05``) sharing a strong factor, the rest noise; 20
resamples keep each run under a second.
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from rich.console import Console

from spcakit.cli import stability as stability_cli
from spcakit.cli.common import Progress

N_ROWS, N_VARIABLES = 60, 40
NAMES = [f"v{j:02d}" for j in range(1, N_VARIABLES + 1)]
PLANTED = set(NAMES[:5])
FAST = ("--resamples", "20")


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A CSV of planted data: a factor of variance 4 on v01..v05, unit noise on every variable."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((N_ROWS, N_VARIABLES))
    x[:, :5] += 2.0 * rng.standard_normal((N_ROWS, 1))
    path = tmp_path_factory.mktemp("stability") / "planted.csv"
    np.savetxt(path, x, delimiter=",", fmt="%.6f", comments="", header=",".join(NAMES))
    return path


def ok(cli, *args: object) -> Any:
    result = cli.invoke(*args)
    assert result.exit_code == 0, f"exit {result.exit_code}\n{result.output}\n{result.exception!r}"
    return result


def refused(cli, *args: object) -> str:
    """Run a command that must exit 2 with one ``Error:`` line and nothing on stdout; its message."""
    result = cli.invoke(*args)
    assert result.exit_code == 2, f"exit {result.exit_code}\n{result.output}\n{result.exception!r}"
    assert result.stdout == ""
    assert result.stderr.startswith("Error: ")
    return result.stderr


def stability_json(cli, *args: object) -> dict[str, Any]:
    return json.loads(ok(cli, "stability", *args, "--json").stdout)


def listed(text: str) -> dict[str, tuple[int, list[str], int]]:
    """Per component of ``Stability.describe``'s text: ``(stable count, the names listed, the count of the
    '... and M more' line or 0)``."""
    components: dict[str, tuple[int, list[str], int]] = {}
    current = None
    for line in text.splitlines():
        head = re.match(r"^(PC\d+): (\d+) stable of", line)
        if head:
            current = head[1]
            components[current] = (int(head[2]), [], 0)
        elif current and (more := re.match(r"^  \.\.\. and (\d+) more$", line)):
            count, names, _ = components[current]
            components[current] = (count, names, int(more[1]))
        elif current and (entry := re.match(r"^  (\S+)\s+[01]\.\d\d\s+[-+]\d\.\d{4}$", line)):
            components[current][1].append(entry[1])
        elif not line.strip():
            current = None
    return components


# -- one k -----------------------------------------------------------------------------------------------
def test_the_text_lists_the_planted_variables_as_stable(cli, planted: Path) -> None:
    text = ok(cli, "stability", "tpower", "-d", planted, "-k", "5", *FAST).stdout
    assert text.startswith("Stability of tpower (r = 1) over 20 subsamples of 30 of the 60 rows, seed 0")
    count, names, more = listed(text)["PC1"]
    assert count == 5 and set(names) == PLANTED and more == 0


def test_without_a_method_the_default_method_runs(cli, planted: Path) -> None:
    text = ok(cli, "stability", "-d", planted, *FAST).stdout
    assert text.startswith("Stability of auto (r = 1)")
    assert PLANTED <= set(listed(text)["PC1"][1])


def test_the_json_holds_probabilities_in_0_1_and_the_planted_ones_stable(cli, planted: Path) -> None:
    doc = stability_json(cli, "tpower", "-d", planted, "-k", "5", "-r", "2", *FAST)
    probabilities = np.asarray(doc["probabilities"], dtype=float)
    assert probabilities.shape == (N_VARIABLES, 2)
    assert np.all((probabilities >= 0) & (probabilities <= 1))
    assert doc["feature_names"] == NAMES and doc["n_resamples"] == 20 and doc["threshold"] == 0.8
    planted_rows = [NAMES.index(name) for name in sorted(PLANTED)]
    assert np.all(probabilities[planted_rows, 0] >= doc["threshold"])
    assert set(doc["stable_support"][0]) == PLANTED
    assert doc["data"] == str(planted) and doc["result"]["data"] == str(planted)
    assert doc["result"]["method"] == "tpower" and doc["result"]["r"] == 2


def test_top_prints_that_many_per_component_and_how_many_more(cli, planted: Path) -> None:
    args = ("stability", "tpower", "-d", planted, "-k", "5", "-r", "2", *FAST)
    full = listed(ok(cli, *args).stdout)
    short = listed(ok(cli, *args, "--top", "2").stdout)
    assert short.keys() == full.keys() == {"PC1", "PC2"}
    for component, (count, names, more) in short.items():
        assert count == full[component][0]
        assert names == full[component][1][:2]
        assert more == max(0, count - 2)
    assert len(short["PC1"][1]) == 2 and short["PC1"][2] == 3  # PC1: 5 stable, 2 listed, "... and 3 more"


@pytest.mark.parametrize("value", ["0", "-1", "2.5", "many"])
def test_a_bad_top_exits_2_saying_what_is_valid(cli, planted: Path, value: str) -> None:
    assert "--top takes a positive integer" in refused(cli, "stability", "tpower", "-d", planted, "--top", value)


def test_threads_give_the_numbers_of_one_thread(cli, planted: Path) -> None:
    args = ("spcart", "-d", planted, "-k", "5", "-r", "2", *FAST)  # spcart: one resample per task (tpower runs blocks)
    one, two = stability_json(cli, *args, "--workers", "1"), stability_json(cli, *args, "--workers", "2")
    assert (one["workers"], two["workers"]) == ("1 thread", "2 threads")
    assert one["probabilities"] == two["probabilities"]
    assert one["intervals"] == two["intervals"]


def test_a_cluster_gives_the_numbers_of_one_thread(cli, planted: Path) -> None:
    distributed = pytest.importorskip("distributed")
    args = ("tpower", "-d", planted, "-k", "5", *FAST)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, protocol="tcp://",
                                  host="127.0.0.1", dashboard_address=None) as cluster:  # fmt: skip
        remote = stability_json(cli, *args, "--scheduler", cluster.scheduler_address)
    local = stability_json(cli, *args)
    assert remote["workers"].startswith("a Dask cluster")
    assert remote["probabilities"] == local["probabilities"]


def test_the_bootstrap_says_its_bound_is_not_proved(cli, planted: Path) -> None:
    text = ok(cli, "stability", "tpower", "-d", planted, "-k", "5", "--scheme", "bootstrap", *FAST).stdout
    assert "over 20 bootstrap samples of the 60 rows" in text
    assert "warning: Meinshausen & Bühlmann's error bound is proved for subsamples" in text


# -- a grid of k -------------------------------------------------------------------------------------------
def test_a_grid_prints_the_levels_the_chosen_k_and_why(cli, planted: Path) -> None:
    text = ok(cli, "stability", "tpower", "-d", planted, "-k", "1:8", *FAST).stdout
    rows = re.findall(r"^\s*(\d+)\s+(\d+)\s+(\d\.\d{3}|none)(  \*)?$", text, flags=re.MULTILINE)
    assert [int(level) for level, *_ in rows] == list(range(1, 9))
    [chosen] = [int(level) for level, _, _, mark in rows if mark]
    assert f"* chosen: k = {chosen}: the smallest k whose stable support" in text
    assert "The stability at the chosen level:" in text
    sizes = [int(size) for _, size, _, _ in rows]
    assert max(sizes) == len(PLANTED)  # the planted support, and no noise variable, is stable at some k
    assert sizes[chosen - 1] >= max(sizes) - 1  # within the bound's slack (1 per component) of the largest
    assert set(listed(text)["PC1"][1]) <= PLANTED


def test_a_grid_json_holds_the_levels_and_the_chosen_stability(cli, planted: Path) -> None:
    doc = stability_json(cli, "tpower", "-d", planted, "-k", "2,4,6", "--threshold", "0.7", *FAST)
    assert doc["levels"] == [2, 4, 6] and doc["chosen"] in doc["levels"] and doc["error_bound"] == 1.0
    assert all(threshold >= 0.7 for threshold in doc["thresholds"])  # --threshold: the least of a grid's
    assert doc["reason"].startswith(f"k = {doc['chosen']}:")
    assert doc["stability"]["result"]["data"] == str(planted) and doc["data"] == str(planted)
    assert set(doc["stability"]["stable_support"][0]) <= PLANTED


def test_the_error_bound_raises_the_thresholds(cli, planted: Path) -> None:
    args = ("tpower", "-d", planted, "-k", "4,5", *FAST)
    loose, tight = stability_json(cli, *args, "--error-bound", "2"), stability_json(cli, *args, "--error-bound", "0.5")
    assert all(a < b for a, b in zip(loose["thresholds"], tight["thresholds"]))


# -- bad input ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "args, says",
    [
        (("--resamples", "1"), "--resamples takes an integer of at least 2"),
        (("--threshold", "0.3"), "--threshold must be in (0.5, 1]"),
        (("--scheme", "foo"), "--scheme takes subsample (half the rows without replacement"),
        (("--workers", "0"), "--workers takes a positive number of threads"),
        (("-k", "abc"), "-k takes an integer (one stability analysis, e.g. -k 5) or a grid"),
        (("-k", "1:p"), "a stability grid's entries are numbers"),
        (("-k", "0:5"), "k = 0 in the grid '0:5' is not a sparsity level"),
        (("-k", "2:41"), "[1, p] = [1, 40]"),
        (("-k", "5", "--error-bound", "2"), "--error-bound sets the thresholds of a grid of k"),
        (("-k", "2:6", "--error-bound", "0"), "--error-bound takes a positive number"),
        (("--workers", "2", "--scheduler", "tcp://127.0.0.1:8786"), "--workers and --scheduler both say where"),
        (("--scheduler", "foo"), "--scheduler foo: no host and port"),
        (("--param", "k=3"), "k is given with -k"),
    ],
)
def test_bad_values_exit_2_saying_what_is_valid(cli, planted: Path, args: tuple[str, ...], says: str) -> None:
    assert says in refused(cli, "stability", "tpower", "-d", planted, *args)


def test_a_covariance_exits_2_with_the_librarys_message(cli) -> None:
    message = refused(cli, "stability", "tpower", "-d", "builtin:pitprops", "-k", "3")
    assert "builtin:pitprops is a covariance (or correlation) matrix" in message
    assert "give the data matrix (n samples x p variables)" in message


def test_the_data_are_required(cli) -> None:
    assert "--data is required: a data matrix whose rows" in refused(cli, "stability", "tpower")


def test_an_unknown_method_exits_2_listing_the_methods(cli, planted: Path) -> None:
    message = refused(cli, "stability", "no-such-method", "-d", planted)
    assert "unknown method 'no-such-method'" in message and "tpower" in message


# -- --out and --plot ----------------------------------------------------------------------------------------
def test_out_writes_the_json_and_prints_the_text(cli, planted: Path, tmp_path: Path) -> None:
    out = tmp_path / "stability.json"
    result = ok(cli, "stability", "tpower", "-d", planted, "-k", "5", *FAST, "--out", out)
    assert listed(result.stdout)["PC1"][0] == 5
    assert f"wrote the stability of tpower to {out}" in result.stderr
    written = json.loads(out.read_text())
    printed = stability_json(cli, "tpower", "-d", planted, "-k", "5", *FAST)
    for doc in (written, printed):
        doc.pop("seconds")
        doc["result"].pop("seconds")
    assert written == printed


def test_out_into_a_missing_folder_exits_2_and_writes_nothing(cli, planted: Path, tmp_path: Path) -> None:
    out = tmp_path / "missing" / "stability.json"
    assert "does not exist" in refused(cli, "stability", "tpower", "-d", planted, *FAST, "--out", out)
    assert not out.parent.exists()


def test_out_onto_the_input_exits_2_and_leaves_it_alone(cli, planted: Path) -> None:
    before = planted.read_bytes()
    assert "is the input file" in refused(cli, "stability", "tpower", "-d", planted, *FAST, "--out", planted)
    assert planted.read_bytes() == before


def test_a_failed_run_writes_no_out_file(cli, planted: Path, tmp_path: Path) -> None:
    out = tmp_path / "stability.json"
    refused(cli, "stability", "tpower", "-d", planted, "-k", "41", *FAST, "--out", out)
    assert not out.exists()


@pytest.mark.parametrize("k", ["5", "1:6"])
def test_plot_writes_a_png(cli, planted: Path, tmp_path: Path, k: str) -> None:
    pytest.importorskip("matplotlib")
    figure = tmp_path / "stability.png"
    result = ok(cli, "stability", "tpower", "-d", planted, "-k", k, *FAST, "--plot", figure)
    assert f"wrote the stability plot to {figure}" in result.stderr
    assert figure.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")


def test_a_plot_with_a_bad_suffix_exits_2_before_any_work(cli, planted: Path, tmp_path: Path) -> None:
    figure = tmp_path / "stability.jpg"
    assert "the file name must end in .png, .svg or .pdf" in refused(cli, "stability", "tpower", "-d", planted,
                                                                     "--plot", figure)  # fmt: skip
    assert not figure.exists()


# -- help and progress ---------------------------------------------------------------------------------------
def test_help_lists_the_options(cli) -> None:
    text = ok(cli, "stability", "--help").stdout
    for option in ("--data", "--n-components", "-k", "--resamples", "--scheme", "--threshold", "--error-bound",
                   "--workers", "--scheduler", "--top", "--json", "--out", "--plot", "--standardize", "--seed"):  # fmt: skip
        assert option in text, option
    assert "stability" in ok(cli, "--help").stdout


def test_the_progress_line_counts_the_resamples(cli, planted: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    screen = io.StringIO()
    console = Console(file=screen, force_terminal=True, width=100)
    monkeypatch.setattr(stability_cli, "Progress", lambda enabled: Progress(True, console=console))
    ok(cli, "stability", "tpower", "-d", planted, "-k", "5", *FAST)
    assert re.search(r"resamples: \d+ resamples", screen.getvalue())
