"""``spcakit reproduce`` for every kind of experiment spec: ``sweep`` (``--out``, ``--replot``, ``--tune``),
``realizations``, ``curve`` and ``traces``, and the clear refusals of a spec of an unknown kind or with
misplaced keys. Small specs written here run in a second or two; the paper's own specs are run in their
reduced form by tests/reproductions."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from spcakit.core.errors import SpecError
from spcakit.workflows.reproduce import list_experiments, load_experiment, run_experiment

REPO = Path(__file__).resolve().parents[2]


def write(tmp_path: Path, text: str, name: str = "x.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


SWEEP = """name = "mini-sweep"
kind = "sweep"
title = "A small sweep on Pitprops"
data = "builtin:pitprops"
r = 2
columns = ["nz", "normalized_loss", "symmetric_explained_variance"]

[[rows]]
label = "Batch, r = 3"
method = "encoder-batch"
params = { sparsity = 3 }

[[rows]]
label = "TPower, r = 3"
method = "tpower"
params = { k = 3 }

[[rows]]
label = "GPower-l1, r = 3"
method = "gpower-l1"
params = { threshold = 0.9 }

[[rows]]
label = "Batch, r = 5"
method = "encoder-batch"
params = { sparsity = 5 }

[[rows]]
label = "TPower, r = 5"
method = "tpower"
params = { k = 5 }

[[rows]]
label = "GPower-l1, r = 5"
method = "gpower-l1"
params = { threshold = 0.9 }

[sweep]
dataset = "pitprops"
series = ["Batch", "TPower", "GPower-l1"]
panels = [
    { column = "normalized_loss", label = "normalized loss", best = "min" },
    { column = "symmetric_explained_variance", label = "symmetric explained variance" },
]
plot_title = "Pitprops"
show_pattern = ["GPower-l1"]
reduced = [5]
tune = { GPower-l1 = "threshold" }
"""


# -- sweep ----------------------------------------------------------------------------------------------
def test_a_sweep_writes_its_csv_json_svg_and_markdown_and_replots_the_same_svg(cli, tmp_path):
    pytest.importorskip("matplotlib")
    spec = write(tmp_path, SWEEP)
    out = tmp_path / "figures"
    result = cli.invoke("reproduce", spec, "--out", out, "--json")
    assert result.exit_code == 0, result.output
    names = sorted(p.name for p in out.iterdir())
    assert names == ["mini-sweep.csv", "mini-sweep.json", "mini-sweep.md", "mini-sweep.svg"]
    doc = json.loads(result.stdout)
    assert doc == json.loads((out / "mini-sweep.json").read_text(encoding="utf-8"))
    assert doc["dataset"] == "pitprops" and doc["k"] == 2
    records = {(rec["method"], rec["r"]): rec for rec in doc["records"]}
    assert set(records) == {(s, r) for s in ("Batch", "TPower", "GPower-l1") for r in (3, 5)}
    for (series, r), rec in records.items():
        assert rec["normalized_loss"] >= 1.0 - 1e-9 and 0.0 <= rec["symmetric_explained_variance"] <= 1.0 + 1e-9
        if series != "GPower-l1":
            assert rec["pattern"] == [r, r]
    csv_lines = (out / "mini-sweep.csv").read_text(encoding="utf-8").splitlines()
    assert csv_lines[0] == "method,r,pattern,normalized_loss,symmetric_explained_variance,params" and len(csv_lines) == 7
    markdown = (out / "mini-sweep.md").read_text(encoding="utf-8").splitlines()
    assert markdown[0] == "| r | Batch | TPower | GPower-l1 |" and [line.split(" |")[0] for line in markdown[2:]] == ["| 3", "| 5"]
    best = min(rec["normalized_loss"] for rec in doc["records"] if rec["r"] == 3)
    assert f"**{best:.4f}**" in markdown[2]
    assert "/".join(map(str, records[("GPower-l1", 3)]["pattern"])) in markdown[2].split("|")[-2]
    svg = (out / "mini-sweep.svg").read_bytes()
    (out / "mini-sweep.svg").unlink()
    (out / "mini-sweep.csv").unlink()
    replot = cli.invoke("reproduce", spec, "--replot", "--out", out)
    assert replot.exit_code == 0, replot.output
    assert (out / "mini-sweep.svg").read_bytes() == svg  # from the JSON alone: nothing else was written
    assert not (out / "mini-sweep.csv").exists()


def test_the_papers_sweep_runs_by_name_and_its_text_lists_every_point(cli):
    result = cli.invoke("reproduce", "encoders-fig1-pitprops")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].startswith("Fig. 1, Pitprops")
    points = [line.split()[:2] for line in lines if line.split()[:1] and line.split()[0] in ("Batch", "Iterative", "TPower")]
    assert len(points) == 3 * 9 and {int(r) for _, r in points} == set(range(2, 11))


def test_reduced_runs_the_sparsities_of_the_spec(tmp_path):
    outcome = run_experiment(str(write(tmp_path, SWEEP)), reduced=True)
    assert sorted({rec["r"] for rec in outcome.records}) == [5]


def test_tune_writes_the_densest_feasible_penalty_into_the_spec(cli, tmp_path):
    spec = write(tmp_path, SWEEP)
    result = cli.invoke("reproduce", spec, "--tune")
    assert result.exit_code == 0, result.output
    tuned = load_experiment(str(spec))
    values = {row.label: row.params["threshold"] for row in tuned.rows if row.method == "gpower-l1"}
    assert set(values) == {"GPower-l1, r = 3", "GPower-l1, r = 5"} and all(0 < v < 0.9 for v in values.values())
    assert values["GPower-l1, r = 5"] <= values["GPower-l1, r = 3"]  # more nonzeros allowed: a smaller penalty
    assert len(repr(values["GPower-l1, r = 3"]).lstrip("0.").rstrip("0")) <= 7  # 6 significant digits
    records = run_experiment(str(spec)).records
    for rec in records:
        if rec["method"] == "GPower-l1":
            assert max(rec["pattern"]) <= rec["r"], rec
    # the rest of the file is as it was
    assert spec.read_text(encoding="utf-8").replace(repr(values["GPower-l1, r = 3"]), "0.9", 1).replace(
        repr(values["GPower-l1, r = 5"]), "0.9", 1) == SWEEP


@pytest.mark.parametrize("args, words", [
    (["--replot"], "--replot needs --out"),
    (["--replot", "--out", "."], "--replot is for an experiment of kind 'sweep'"),
    (["--tune"], "--tune is for an experiment of kind 'sweep'"),
])
def test_figure_options_are_refused_where_they_do_not_apply(cli, args, words):
    name = "encoders-fig1-pitprops" if args == ["--replot"] else "spcart-table4"
    result = cli.invoke("reproduce", name, *args)
    assert result.exit_code == 2 and words in result.stderr, result.output


def test_replot_without_the_json_says_so(cli, tmp_path):
    pytest.importorskip("matplotlib")
    result = cli.invoke("reproduce", write(tmp_path, SWEEP), "--replot", "--out", tmp_path)
    assert result.exit_code == 2 and "mini-sweep.json: not found" in result.stderr, result.output


# -- refusals ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("edit, words", [
    (lambda t: t.replace('kind = "sweep"', 'kind = "figure"'),
     "x.toml: kind: unknown experiment kind 'figure'; valid: table, sweep, realizations, curve, traces"),
    (lambda t: t.replace('kind = "sweep"', 'kind = "swep"'), "unknown experiment kind 'swep' (did you mean 'sweep'?)"),
    (lambda t: t.replace('kind = "sweep"\n', ""), "x.toml: sweep: only an experiment of kind = \"sweep\" has a [sweep] table"),
    (lambda t: t[:t.index("[sweep]")], 'kind = "sweep" needs a [sweep] table'),
    (lambda t: t.replace('label = "Batch, r = 3"', 'label = "Batch at 3"'), "rows[0].label: a sweep row is labelled 'SERIES, r = R'"),
    (lambda t: t.replace('show_pattern = ["GPower-l1"]', 'show_pattern = ["GPower"]'), "sweep.show_pattern: unknown series 'GPower'"),
    (lambda t: t.replace("plot_title", "plot_titel"), "sweep: unknown key(s) ['plot_titel'] (did you mean 'plot_title'?)"),
])
def test_a_bad_sweep_spec_is_refused_with_exit_2(cli, tmp_path, edit, words):
    result = cli.invoke("reproduce", write(tmp_path, edit(SWEEP)))
    assert result.exit_code == 2 and words in result.stderr, result.stderr


# -- realizations, curve, traces ------------------------------------------------------------------------------
REALIZATIONS = """name = "mini-realizations"
kind = "realizations"
title = "Schemes C and E, d = 10, m = 3, k = 5"
r = 3
realizations = 3
reference = "fspca-exhaustive"
params = { k = 5 }

[reduced]
realizations = 1

[[cases]]
name = "C"
generator = { name = "fspca-scheme", scheme = "C", d = 10 }
params = { epsilon = 0.0 }

[[cases]]
name = "E"
generator = { name = "fspca-scheme", scheme = "E", d = 10 }
params = { epsilon = 0.1 }

[[rows]]
label = "Go"
method = "fspca-go"
params = { epsilon_form = "absolute" }

[[rows]]
label = "IPU, best of 4"
method = "fspca-ipu"
params = { epsilon_form = "absolute", restarts = 4 }
seeded = true

[[rows]]
label = "IPU, single starts"
method = "fspca-ipu"
params = { epsilon_form = "absolute" }
single_starts = 4

[[rows]]
label = "IPU, convex relaxation"
method = "fspca-ipu"
params = { epsilon_form = "absolute" }
start = "fantope"
"""


def test_realizations_score_every_row_against_the_reference(cli, tmp_path):
    result = cli.invoke("reproduce", write(tmp_path, REALIZATIONS), "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["kind"] == "realizations" and list(doc["scores"]) == ["C", "E"]
    for rows in doc["scores"].values():
        assert list(rows) == ["Go", "IPU, best of 4", "IPU, single starts", "IPU, convex relaxation"]
        assert len(rows["IPU, single starts"]["re"]) == 3 * 4 and len(rows["Go"]["re"]) == 3
        best, singles = np.asarray(rows["IPU, best of 4"]["re"]), np.asarray(rows["IPU, single starts"]["re"]).reshape(3, 4)
        np.testing.assert_allclose(best, singles.min(axis=1), atol=1e-12)  # best of 4 = the best of its own starts
        for scores in rows.values():
            assert min(scores["re"]) >= -1e-9 and all(0.0 <= ir <= 1.0 for ir in scores["ir"])
            assert scores["summary"]["n"] == len(scores["re"])
    for scores in doc["scores"]["C"].values():  # rank(A) = m: every method is exact (Thm. 4.2)
        assert scores["summary"]["hf"] == 1.0 and max(abs(re) for re in scores["re"]) < 1e-9


def test_a_reduced_realization_is_the_first_of_the_full_run(tmp_path):
    path = str(write(tmp_path, REALIZATIONS))
    full, reduced = run_experiment(path), run_experiment(path, reduced=True)
    for case in ("C", "E"):
        for label, scores in reduced.scores[case].items():
            assert scores.re == full.scores[case][label].re[:len(scores.re)] and len(scores.re) in (1, 4)


CURVE = """name = "mini-curve"
kind = "curve"
title = "Pitprops: NEV against k"
data = "builtin:pitprops"
r = 2
metric = "normalized_explained_variance"
parameter = "k"
values = [3, 6, 9]

[[rows]]
label = "Go"
method = "fspca-go"
params = { epsilon = 0.1, epsilon_form = "absolute" }

[[rows]]
label = "IPU"
method = "fspca-ipu"
params = { epsilon = 0.1, epsilon_form = "absolute" }

[[rows]]
label = "TPower (G)"
method = "tpower"
r = 1
score = "fspca-refined"

[[rows]]
label = "bound"
method = "fspca-go"
score = "fspca-bound"
"""


def test_a_curve_scores_each_row_at_each_value(cli, tmp_path):
    result = cli.invoke("reproduce", write(tmp_path, CURVE), "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["values"] == [3, 6, 9] and list(doc["curves"]) == ["Go", "IPU", "TPower (G)", "bound"]
    for i in range(3):
        go, ipu, greedy, bound = (doc["curves"][label][i] for label in ("Go", "IPU", "TPower (G)", "bound"))
        assert go <= ipu + 1e-12 and ipu <= bound + 1e-12 and bound <= 1.0 and 0.0 < greedy <= 1.0 + 1e-12
    assert doc["curves"]["IPU"] == sorted(doc["curves"]["IPU"])  # more rows allowed: never less variance
    text = cli.invoke("reproduce", write(tmp_path, CURVE)).stdout.splitlines()
    assert text[3].split() == ["k", "Go", "IPU", "TPower", "(G)", "bound"] and [t.split()[0] for t in text[5:8]] == ["3", "6", "9"]


TRACES = """name = "mini-traces"
kind = "traces"
title = "Pitprops: IPU's objective at every step"
data = "builtin:pitprops"
r = 2
params = { k = 6, epsilon = 0.1, epsilon_form = "absolute" }
seeds = [0, 1, 2]

[reduced]
seeds = [0]

[[rows]]
label = "IPU (Go start)"
method = "fspca-ipu"

[[rows]]
label = "IPU (random start, seed {seed})"
method = "fspca-ipu"
params = { start = "random" }
each_seed = true

[[rows]]
label = "Go"
method = "fspca-go"
"""


def test_traces_record_the_objective_after_every_step(cli, tmp_path):
    out = tmp_path / "out"
    result = cli.invoke("reproduce", write(tmp_path, TRACES), "--reduced", "--json", "--out", out)
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc == json.loads((out / "mini-traces.json").read_text(encoding="utf-8"))
    traces = doc["traces"]
    assert list(traces) == ["IPU (Go start)", "IPU (random start, seed 0)", "Go"]
    assert len(traces["Go"]) == 1 and traces["IPU (Go start)"][0] == pytest.approx(traces["Go"][0], rel=1e-12)
    for history in traces.values():
        assert np.all(np.diff(history[1:]) >= -1e-9 * max(history))


@pytest.mark.parametrize("text, edit, words", [
    (REALIZATIONS, lambda t: t.replace('"fspca-scheme"', '"fspca-schem"', 1), "cases[0].generator: unknown generator 'fspca-schem' (did you mean 'fspca-scheme'?)"),
    (REALIZATIONS, lambda t: t.replace('start = "fantope"', 'start = "fantop"'), "rows[3].start: unknown start 'fantop' (did you mean 'fantope'?)"),
    (REALIZATIONS, lambda t: t.replace('reference = "fspca-exhaustive"', 'reference = "fspca-exhaustiv"'), "reference: unknown method 'fspca-exhaustiv' (did you mean 'fspca-exhaustive'?)"),
    (REALIZATIONS, lambda t: t.replace("realizations = 3\n", "", 1), "missing required key 'realizations'"),
    (REALIZATIONS, lambda t: t.replace("restarts = 4", "restart = 4"), "rows[1].params.restart: method 'fspca-ipu' has no parameter 'restart'"),
    (CURVE, lambda t: t.replace('score = "fspca-refined"', 'score = "fspca-refine"'), "rows[2].score: unknown score 'fspca-refine' (did you mean 'fspca-refined'?)"),
    (CURVE, lambda t: t.replace("values = [3, 6, 9]", "valeus = [3, 6, 9]"), "unknown key(s) ['valeus'] (did you mean 'values'?)"),
    (TRACES, lambda t: t.replace("each_seed = true", 'score = "fspca-refined"'), "rows[1].score: only a curve's rows have a score"),
])
def test_a_bad_study_spec_is_refused_with_exit_2(cli, tmp_path, text, edit, words):
    result = cli.invoke("reproduce", write(tmp_path, edit(text)))
    assert result.exit_code == 2 and words in result.stderr, result.stderr


# -- the paper's experiments ------------------------------------------------------------------------------------
def test_every_paper_experiment_is_a_spec_of_a_known_kind():
    kinds = {name: load_experiment(name).kind for name in list_experiments()}
    assert {kinds[n] for n in ("fspca-table2", "fspca-fig2-lymphoma", "fspca-fig4-lymphoma", "encoders-fig1-colon")} == {
        "realizations", "curve", "traces", "sweep"}
    assert kinds["spcart-table4"] == "table"


@pytest.mark.reproduction
def test_a_paper_study_runs_by_name_in_its_reduced_form(cli, shared_data):
    if not (shared_data / "lymphoma_cov_500.npz").exists():
        pytest.skip("lymphoma_cov_500.npz is absent")
    result = cli.invoke("reproduce", "fspca-fig4-lymphoma", "--reduced", "--root", REPO)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].startswith("Fig. 4, Lymphoma") and lines[3].split() == ["row", "steps", "first", "last"]
    steps = {line.rsplit(None, 3)[0]: int(line.rsplit(None, 3)[1]) for line in lines[5:8]}
    assert list(steps) == ["IPU (Go start)", "IPU (random start, seed 0)", "Go"]
    assert steps["Go"] == 1 and all(n <= 10 for n in steps.values())  # "IPU takes less than 10 steps to converge"


def test_a_missing_spec_kind_reads_as_a_table(tmp_path):
    with pytest.raises(SpecError, match="rows"):
        load_experiment(str(write(tmp_path, 'name = "t"\ntitle = "t"\ndata = "builtin:pitprops"\nr = 2\n')))


# -- --out writes only where it is told ---------------------------------------------------------------------
TABLE_ON_A_FILE = """name = "{name}"
title = "A one-row table on a data file"
data = "{data}"
r = 1

[[rows]]
method = "spcart"
params = {{ k = 2 }}
"""


def _data_and_spec(tmp_path: Path, name: str = "mini-table") -> tuple[Path, Path]:
    data = tmp_path / "d.npy"
    np.save(data, np.random.default_rng(4).standard_normal((30, 5)))
    return data, write(tmp_path, TABLE_ON_A_FILE.format(name=name, data=data))


@pytest.mark.parametrize("name", ["../../escaped", "/tmp/absolute", "a/b", ".hidden", "x\\\\y"])
def test_an_experiment_named_like_a_path_is_refused(cli, tmp_path, name):
    _, spec = _data_and_spec(tmp_path, name)
    ran = cli.main("reproduce", spec, "--out", tmp_path / "out")
    assert ran.code == 2 and "is not a plain file name" in ran.err
    assert not (tmp_path / "out").exists() and not Path("/tmp/absolute.json").exists()


def test_a_link_to_the_input_in_the_out_folder_is_never_written_through(cli, tmp_path):
    data, spec = _data_and_spec(tmp_path)
    before = data.read_bytes()
    out = tmp_path / "out"
    out.mkdir()
    (out / "mini-table.json").symlink_to(data)
    ran = cli.main("reproduce", spec, "--out", out)
    assert ran.code == 2 and "is the input file" in ran.err
    assert data.read_bytes() == before


def test_a_write_protected_outcome_file_is_never_replaced(cli, tmp_path):
    _, spec = _data_and_spec(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    kept = out / "mini-table.json"
    kept.write_text("{}")
    kept.chmod(0o444)
    try:
        ran = cli.main("reproduce", spec, "--out", out)
        assert ran.code == 2 and "write-protected" in ran.err
        assert kept.read_text() == "{}"
    finally:
        kept.chmod(0o644)


def test_a_sweep_writes_its_set_all_or_nothing(cli, tmp_path):
    pytest.importorskip("matplotlib")
    spec = write(tmp_path, SWEEP)
    out = tmp_path / "out"
    out.mkdir()
    old = {suffix: f"old {suffix}\n" for suffix in ("csv", "json", "md")}
    for suffix, text in old.items():
        (out / f"mini-sweep.{suffix}").write_text(text)
    (out / "mini-sweep.svg").mkdir()  # one output of the set cannot be written
    ran = cli.main("reproduce", spec, "--out", out, "--reduced")
    assert ran.code == 2 and "mini-sweep.svg" in ran.err
    assert {suffix: (out / f"mini-sweep.{suffix}").read_text() for suffix in old} == old  # the old set untouched
    assert not [p for p in out.iterdir() if p.name.endswith(".tmp")]  # no temporary file left behind
