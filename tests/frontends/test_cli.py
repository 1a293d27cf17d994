"""The ``spcakit`` command line: every command, the ``--json`` schema, data sources,
parameter routing, seeds, ``--out``.

Commands run in-process through typer's ``CliRunner`` (the ``cli`` fixture: stdout and stderr are
captured separately: ``result.stdout``, ``result.stderr``; ``result.output``
is both, as a terminal shows them). Assertions compare runs with each other
rather than pinning iteration counts, so they hold while the numerics evolve.
"""

from __future__ import annotations

import json
import math
import re
import tomllib
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from spcakit.inputs.datasets import PITPROPS_NAMES, pitprops
from spcakit.core.protocols import ROLES

REPO = Path(__file__).resolve().parents[2]
METHOD_NAMES = sorted(tomllib.loads(p.read_text())["name"] for p in (REPO / "specs" / "methods").glob("*.toml"))
METRIC_KEYS = {"nz", "pattern", "cpev", "orthogonality", "additional_variance", "bound", "gap"}  # every default set
RESULT_KEYS = {"method", "spec", "r", "p", "feature_names", "loadings", "metrics", "iterations", "stopping_reason", "seconds"}
RANDOM_SOURCE = "builtin:random?n=30&p=50&seed=1"


def ok(cli, *args: str) -> Any:
    result = cli.invoke(*args)
    assert result.exit_code == 0, f"exit {result.exit_code}\n{result.output}\n{result.exception!r}"
    assert result.exception is None
    return result


def run_json(cli, *args: str) -> dict[str, Any]:
    result = ok(cli, *args, "--json")
    return json.loads(result.stdout)  # exactly one JSON object on stdout


def loadings(doc: dict[str, Any]) -> np.ndarray:
    return np.asarray(doc["loadings"], dtype=float)


def check_schema(doc: dict[str, Any], *, r: int, p: int) -> None:
    assert RESULT_KEYS <= set(doc)
    assert isinstance(doc["method"], str) and doc["method"]
    assert isinstance(doc["spec"], dict) and doc["spec"]["name"] == doc["method"]
    assert doc["r"] == r and isinstance(doc["r"], int)
    assert doc["p"] == p and isinstance(doc["p"], int)
    names = doc["feature_names"]
    assert isinstance(names, list) and len(names) == p and all(isinstance(n, str) for n in names)
    assert len(set(names)) == p
    rows = doc["loadings"]
    assert isinstance(rows, list) and len(rows) == p
    assert all(isinstance(row, list) and len(row) == r for row in rows)
    assert all(isinstance(v, float | int) and math.isfinite(v) for row in rows for v in row)
    x = loadings(doc)
    assert x.shape == (p, r)
    np.testing.assert_allclose(np.linalg.norm(x, axis=0), 1.0, atol=1e-6)
    m = doc["metrics"]
    assert METRIC_KEYS <= set(m)
    assert isinstance(m["nz"], int)
    assert isinstance(m["pattern"], list) and len(m["pattern"]) == r
    assert all(isinstance(k, int) and 1 <= k <= p for k in m["pattern"])
    assert sum(m["pattern"]) == m["nz"]
    assert m["pattern"] == [int(np.count_nonzero(x[:, j])) for j in range(r)]
    assert m["nz"] == int(np.count_nonzero(x))
    for key in ("sp", "std", "worst_sp", "cpev", "ev", "nor", "orthogonality"):  # SPCArt's criteria: its plugin's methods
        if key in m:
            assert isinstance(m[key], float | int) and math.isfinite(m[key]), key
    if "sp" in m:
        assert 0.0 <= m["sp"] <= 1.0 and 0.0 <= m["worst_sp"] <= m["sp"] + 1e-12
    assert 0.0 < m["cpev"] <= 1.0 + 1e-9
    assert isinstance(doc["iterations"], int) and doc["iterations"] >= 1
    assert isinstance(doc["stopping_reason"], str) and doc["stopping_reason"]
    assert isinstance(doc["seconds"], float | int) and doc["seconds"] >= 0


def parse_components(text: str) -> list[tuple[int, dict[str, float]]]:
    """The per-component blocks of the text output: (declared count, {name: weight})."""
    comps: list[tuple[int, dict[str, float]]] = []
    current: dict[str, float] | None = None
    for line in text.splitlines():
        head = re.match(r"Component (\d+) \((\d+) nonzero\)", line)
        if head:
            assert int(head.group(1)) == len(comps) + 1
            current = {}
            comps.append((int(head.group(2)), current))
            continue
        if current is not None:
            row = re.match(r"^\s+(\S+)\s+([+-]\d+\.\d+)$", line)
            if row:
                current[row.group(1)] = float(row.group(2))
                continue
            current = None
    return comps


def write_csv(path: Path, matrix: np.ndarray, header: list[str] | tuple[str, ...], labels: bool = False) -> Path:
    lines = [("," if labels else "") + ",".join(header)]
    for i, row in enumerate(matrix):
        lines.append((f"s{i}," if labels else "") + ",".join(repr(float(v)) for v in row))
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture(scope="module")
def gaussian() -> np.ndarray:
    return np.random.default_rng(7).standard_normal((25, 6))


# -- help and listing commands ---------------------------------------------------------------
def test_help_lists_every_command(cli) -> None:
    result = ok(cli, "--help")
    for command in ("run", "compose", "methods", "parts", "plugins", "reproduce"):
        assert command in result.stdout


@pytest.mark.parametrize("command", ["run", "compose", "methods", "parts", "plugins", "reproduce"])
def test_command_help(cli, command: str) -> None:
    result = ok(cli, command, "--help")
    assert "Usage" in result.stdout


def test_run_help_lists_documented_options(cli) -> None:
    text = ok(cli, "run", "--help").stdout
    for option in ("--data", "--covariance", "--truncator", "--lam", "--deflator", "--param", "--seed", "--json", "--out"):
        assert option in text
    assert "-r" in text


def test_compose_help_lists_documented_options(cli) -> None:
    text = ok(cli, "compose", "--help").stdout
    for option in ("--driver", "--initializer", "--updater", "--truncator", "--deflator", "--stopper",
                   "--data", "--lam", "--param", "--json", "--out"):  # fmt: skip
        assert option in text


def test_methods_text_lists_every_spec(cli) -> None:
    text = ok(cli, "methods").stdout
    starts = {line.split()[0] for line in text.splitlines() if line and not line[0].isspace()}
    assert set(METHOD_NAMES) <= starts
    assert "block: pca -> rotation -> hard" in text  # spcart's composition
    assert "deflate projection" in text


def test_methods_json(cli) -> None:
    doc = json.loads(ok(cli, "methods", "--json").stdout)
    assert isinstance(doc, list)
    by_name = {m["name"]: m for m in doc}
    assert set(METHOD_NAMES) <= set(by_name)
    for name in METHOD_NAMES:
        m = by_name[name]
        assert {"plugin", "name", "driver", "initializer", "updater", "truncator", "stopper"} <= set(m)
        assert m["driver"] in ("block", "deflation", "multistart")
        assert (m["deflator"] is not None) == (m["driver"] == "deflation")
    assert by_name["spcart"]["updater"]["name"] == "rotation"
    assert by_name["tpower"]["truncator"]["name"] == "sparsity"


def test_parts_text_groups_by_role(cli) -> None:
    text = ok(cli, "parts").stdout
    for role in ROLES:
        assert f"{role}s:" in text
    for name in ("hard", "soft", "sparsity", "energy", "l0-penalty", "rotation", "power", "hotelling", "projection"):
        assert re.search(rf"^\s+{re.escape(name)}\s", text, re.M), name


def test_parts_role_filter_text(cli) -> None:
    text = ok(cli, "parts", "--role", "truncator").stdout
    assert "truncators:" in text
    for other in ROLES:
        if other != "truncator":
            assert f"{other}s:" not in text
    for name in ("energy", "hard", "l0-penalty", "none", "soft", "sparsity"):
        assert re.search(rf"^\s+{re.escape(name)}\s", text, re.M), name


def test_parts_json(cli) -> None:
    doc = json.loads(ok(cli, "parts", "--json").stdout)
    assert {p["role"] for p in doc} == set(ROLES)
    for part in doc:
        assert {"role", "name", "plugin", "summary", "paper", "lam", "parameters"} <= set(part)
        assert isinstance(part["parameters"], dict)
    truncators = json.loads(ok(cli, "parts", "--role", "truncator", "--json").stdout)
    assert truncators and all(p["role"] == "truncator" for p in truncators)
    by_name = {p["name"]: p for p in truncators}
    assert {"energy", "hard", "l0-penalty", "none", "soft", "sparsity"} <= set(by_name)
    assert by_name["hard"]["lam"] == "threshold"
    assert by_name["sparsity"]["lam"] == "n_zeros"
    assert by_name["energy"]["lam"] == "energy"
    assert by_name["energy"]["parameters"]["energy"] == 0.15


def test_plugins_text_and_json(cli) -> None:
    text = ok(cli, "plugins").stdout
    assert "spcart" in text and "core" in text
    doc = json.loads(ok(cli, "plugins", "--json").stdout)
    by_name = {p["name"]: p for p in doc}
    assert {"core", "spcart"} <= set(by_name)
    for rec in doc:
        assert {"name", "package", "version", "hooks", "error"} <= set(rec)
    assert by_name["spcart"]["error"] is None
    assert "spcakit_register_methods" in by_name["spcart"]["hooks"]
    assert "spcakit_register_parts" in by_name["core"]["hooks"]


# -- run: text output ----------------------------------------------------------------------------
def test_run_text_names_pitprops_variables(cli) -> None:
    result = ok(cli, "run", "spcart", "-r", "6")
    text = result.stdout
    assert "Traceback" not in result.output and "Error" not in result.output
    assert "topdiam" in text
    assert "builtin:pitprops" in text
    for row in ("NZ", "pattern", "SP", "STD", "worst SP", "CPEV", "EV", "NOR"):
        assert re.search(rf"^\s+{re.escape(row)}\s", text, re.M), row
    comps = parse_components(text)
    assert len(comps) == 6
    assert all(set(weights) <= set(PITPROPS_NAMES) for _, weights in comps)


def test_run_without_a_method_runs_the_default(cli) -> None:
    plain, named = ok(cli, "run", "-r", "2", "-k", "4", "--json"), ok(cli, "run", "auto", "-r", "2", "-k", "4", "--json")
    first, second = json.loads(plain.stdout), json.loads(named.stdout)
    assert first["method"] == "auto" == second["method"]
    assert first["loadings"] == second["loadings"]


def test_run_text_matches_json(cli) -> None:
    """The text lists exactly the nonzero variables of each loading, by name, with their weights."""
    args = ("run", "rsvd-gp", "-r", "6", "--lam", "0.27")
    text = ok(cli, *args).stdout
    doc = run_json(cli, *args)
    x = loadings(doc)
    comps = parse_components(text)
    assert len(comps) == doc["r"]
    for j, (declared, weights) in enumerate(comps):
        expected = {doc["feature_names"][i]: x[i, j] for i in np.nonzero(x[:, j])[0]}
        assert declared == len(expected) == doc["metrics"]["pattern"][j]
        assert set(weights) == set(expected)
        for name, w in weights.items():
            assert w == pytest.approx(expected[name], abs=6e-5)
    m = doc["metrics"]
    assert re.search(rf"^\s+NZ\s+{m['nz']}\s", text, re.M)
    assert re.search(r"^\s+pattern\s+" + r"\s+".join(map(str, m["pattern"])) + r"\s", text, re.M)
    assert re.search(rf"^\s+CPEV\s+{m['cpev']:.4f}\s", text, re.M)


# -- run, compose: --top N ------------------------------------------------------------------------
MORE = re.compile(r"^  \.\.\. and (\d+) more \((\d+) nonzero\)$")


def more_lines(text: str) -> list[tuple[int, int, int]]:
    """The ``... and M more (K nonzero)`` lines: (component, M, K), the component being the block they close."""
    found, component = [], 0
    for line in text.splitlines():
        head = re.match(r"Component (\d+) ", line)
        if head:
            component = int(head.group(1))
        more = MORE.match(line)
        if more:
            found.append((component, int(more.group(1)), int(more.group(2))))
    return found


FIT_ARGS = {"run": ("run", "tpower", "--data", "builtin:pitprops", "-r", "2", "-k", "6"),
            "compose": ("compose", "--data", "builtin:pitprops", "-r", "2", "-k", "6")}  # fmt: skip


@pytest.mark.parametrize("command", ["run", "compose"])
def test_top_prints_the_largest_loadings_and_how_many_more(cli, command: str) -> None:
    args = FIT_ARGS[command]
    full = parse_components(ok(cli, *args).stdout)
    text = ok(cli, *args, "--top", "3").stdout
    top = parse_components(text)
    assert len(top) == len(full) == 2
    for (declared, weights), (all_declared, all_weights) in zip(top, full):
        assert declared == all_declared == len(all_weights) == 6  # the header still counts every nonzero
        assert list(weights.items()) == list(all_weights.items())[:3]  # the 3 largest, in the same order
    assert more_lines(text) == [(1, 3, 6), (2, 3, 6)]


def test_top_at_or_above_the_nonzeros_prints_them_all(cli) -> None:
    args = FIT_ARGS["run"]
    full = parse_components(ok(cli, *args).stdout)
    for top in ("6", "13", "1000"):
        text = ok(cli, *args, "--top", top).stdout
        assert parse_components(text) == full and more_lines(text) == []


def test_top_changes_neither_the_json_nor_the_out_file(cli, tmp_path: Path) -> None:
    args = FIT_ARGS["run"]

    def timeless(doc: dict[str, Any]) -> dict[str, Any]:
        return {key: value for key, value in doc.items() if key != "seconds"}

    reference = run_json(cli, *args)
    assert timeless(run_json(cli, *args, "--top", "1")) == timeless(reference)
    out = tmp_path / "result.json"
    text = ok(cli, *args, "--top", "1", "--out", str(out)).stdout
    assert [len(weights) for _, weights in parse_components(text)] == [1, 1]  # the text is shortened ...
    written = json.loads(out.read_text())
    assert timeless(written) == timeless(reference)  # ... the file keeps every loading
    assert written["metrics"]["pattern"] == [6, 6] and np.count_nonzero(loadings(written)) == 12


@pytest.mark.parametrize("command", ["run", "compose"])
@pytest.mark.parametrize("value", ["0", "-1", "2.5", "text", "", "1e3"])
def test_a_bad_top_exits_2_saying_what_is_valid(cli, command: str, value: str) -> None:
    result = cli.invoke(*FIT_ARGS[command], "--top", value)
    assert result.exit_code == 2, result.output
    assert result.stdout == "" and "Traceback" not in result.output
    assert ("Error: --top takes a positive integer, the number of largest loadings to print per component "
            f"(e.g. --top 5); got {value!r}") in result.stderr  # fmt: skip


@pytest.mark.parametrize("command", ["run", "compose"])
def test_top_help_says_it_leaves_the_json_and_out_whole(cli, command: str) -> None:
    import typer

    from spcakit.cli import app

    assert "--top" in cli.invoke(command, "--help").output
    options = {param.name: param for param in typer.main.get_command(app).commands[command].params}
    assert "--json and the --out file keep every loading" in options["top"].help


# -- run: JSON schema ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    "args",
    [
        ("spcart", "-r", "6"),
        ("rsvd-gp", "-r", "6", "--lam", "0.27"),
        ("rsvd-gpb", "-r", "6", "--lam", "0.3"),
        ("tpower", "-r", "6", "--lam", "10"),
        ("gpower-l0", "-r", "6", "--lam", "0.1"),
        ("gpower-l1", "-r", "3", "--lam", "0.1"),
        ("gpower-l0-block", "-r", "6", "--lam", "0.115"),
        ("gpower-l1-block", "-r", "3", "--lam", "0.1"),
        ("st", "-r", "6"),
        ("pca", "-r", "6"),
        ("spcart",),
    ],
    ids=lambda a: " ".join(a),
)
def test_run_json_schema(cli, args: tuple[str, ...]) -> None:
    doc = run_json(cli, "run", *args)
    r = int(args[args.index("-r") + 1]) if "-r" in args else 2  # default r is 2
    check_schema(doc, r=r, p=13)
    assert doc["method"] == args[0]
    assert doc["feature_names"] == list(PITPROPS_NAMES)


def test_run_json_reference_values(cli) -> None:
    """SPCArt on Pitprops with r = 6: Table 4 of the SPCArt paper (NZ 18, pattern 424332)."""
    doc = run_json(cli, "run", "spcart", "-r", "6", "--order", "method")  # the paper's order
    assert doc["metrics"]["nz"] == 18
    assert doc["metrics"]["pattern"] == [4, 2, 4, 3, 3, 2]
    assert doc["metrics"]["cpev"] == pytest.approx(0.8013, abs=5e-5)
    assert doc["spec"]["truncator"]["name"] == "hard"


def test_pca_is_dense(cli) -> None:
    doc = run_json(cli, "run", "pca", "-r", "3")
    assert doc["metrics"]["pattern"] == [13, 13, 13]
    assert doc["metrics"]["nor"] == pytest.approx(0.0, abs=1e-8)


def test_lam_sets_the_truncation_parameter(cli) -> None:
    doc = run_json(cli, "run", "rsvd-gp", "-r", "6", "--lam", "0.27")
    assert doc["spec"]["truncator"] == {"name": "hard", "form": "relative", "threshold": 0.27}


def test_truncator_and_lam_replace_the_truncation(cli) -> None:
    doc = run_json(cli, "run", "spcart", "-r", "4", "--truncator", "sparsity", "--lam", "10")
    assert doc["spec"]["truncator"]["name"] == "sparsity"
    assert doc["spec"]["truncator"]["n_zeros"] == 10
    assert doc["metrics"]["pattern"] == [3, 3, 3, 3]  # 13 - 10 entries kept per loading
    energy = run_json(cli, "run", "spcart", "-r", "4", "--truncator", "energy", "--lam", "0.2")
    assert energy["spec"]["truncator"]["energy"] == 0.2
    check_schema(energy, r=4, p=13)


def test_sparsity_lam_as_float_text_is_accepted(cli) -> None:
    a = run_json(cli, "run", "tpower", "-r", "3", "--lam", "10")
    b = run_json(cli, "run", "tpower", "-r", "3", "--lam", "10.0")
    np.testing.assert_array_equal(loadings(a), loadings(b))


# -- data sources ---------------------------------------------------------------------------------
def test_builtin_random_n_less_than_p_is_deterministic(cli) -> None:
    a = run_json(cli, "run", "spcart", "--data", RANDOM_SOURCE, "-r", "3")
    b = run_json(cli, "run", "spcart", "--data", RANDOM_SOURCE, "-r", "3")
    check_schema(a, r=3, p=50)
    assert a["feature_names"][0] == "x01" and a["feature_names"][-1] == "x50"
    np.testing.assert_array_equal(loadings(a), loadings(b))
    assert a["metrics"] == b["metrics"]
    other = run_json(cli, "run", "spcart", "--data", "builtin:random?n=30&p=50&seed=2", "-r", "3")
    assert not np.array_equal(loadings(a), loadings(other))


def test_builtin_random_up_to_the_rank(cli) -> None:
    doc = run_json(cli, "run", "rsvd-gp", "--data", "builtin:random?n=8&p=20&seed=3", "-r", "7")
    check_schema(doc, r=7, p=20)


def test_builtin_random_text_uses_default_names(cli) -> None:
    text = ok(cli, "run", "spcart", "--data", RANDOM_SOURCE, "-r", "2").stdout
    assert re.search(r"^\s+x\d\d\s+[+-]\d", text, re.M)
    assert "p=50" in text


def test_builtin_zou(cli) -> None:
    doc = run_json(cli, "run", "spcart", "--data", "builtin:zou", "-r", "2")
    check_schema(doc, r=2, p=10)
    assert doc["feature_names"] == [f"x{i}" for i in range(1, 11)]


def test_npy_source(cli, tmp_path: Path, gaussian: np.ndarray) -> None:
    path = tmp_path / "x.npy"
    np.save(path, gaussian)
    doc = run_json(cli, "run", "spcart", "--data", str(path), "-r", "3")
    check_schema(doc, r=3, p=6)
    assert doc["feature_names"] == [f"x{i}" for i in range(1, 7)]


def test_npy_csv_npz_give_the_same_result(cli, tmp_path: Path, gaussian: np.ndarray) -> None:
    names = ["alpha", "beta", "gamma", "delta", "eps", "zeta"]
    np.save(tmp_path / "x.npy", gaussian)
    np.savez(tmp_path / "x.npz", X=gaussian, feature_names=np.array(names))
    write_csv(tmp_path / "x.csv", gaussian, names)
    docs = {ext: run_json(cli, "run", "rsvd-gp", "--data", str(tmp_path / f"x.{ext}"), "-r", "3") for ext in ("npy", "npz", "csv")}
    for doc in docs.values():
        check_schema(doc, r=3, p=6)
    np.testing.assert_allclose(loadings(docs["npz"]), loadings(docs["npy"]), atol=1e-12)
    np.testing.assert_allclose(loadings(docs["csv"]), loadings(docs["npy"]), atol=1e-10)
    assert docs["npz"]["feature_names"] == names
    assert docs["csv"]["feature_names"] == names


def test_csv_header_gives_feature_names(cli, tmp_path: Path, gaussian: np.ndarray) -> None:
    names = ["height", "weight", "age", "income", "score", "rank"]
    path = write_csv(tmp_path / "people.csv", gaussian, names)
    doc = run_json(cli, "run", "spcart", "--data", str(path), "-r", "2")
    assert doc["feature_names"] == names
    text = ok(cli, "run", "spcart", "--data", str(path), "-r", "2").stdout
    shown = {name for _, weights in parse_components(text) for name in weights}
    assert shown and shown <= set(names)


def test_csv_row_label_column_is_dropped(cli, tmp_path: Path, gaussian: np.ndarray) -> None:
    names = ["a", "b", "c", "d", "e", "f"]
    plain = run_json(cli, "run", "spcart", "--data", str(write_csv(tmp_path / "plain.csv", gaussian, names)), "-r", "2")
    labelled = run_json(cli, "run", "spcart", "--data", str(write_csv(tmp_path / "lab.csv", gaussian, names, labels=True)), "-r", "2")
    assert labelled["feature_names"] == names
    np.testing.assert_allclose(loadings(labelled), loadings(plain), atol=1e-12)


def test_covariance_npy_matches_builtin_pitprops(cli, tmp_path: Path) -> None:
    path = tmp_path / "pitprops.npy"
    np.save(path, pitprops().matrix)
    from_file = run_json(cli, "run", "spcart", "--data", str(path), "--covariance", "-r", "6")
    builtin = run_json(cli, "run", "spcart", "-r", "6")
    check_schema(from_file, r=6, p=13)
    np.testing.assert_allclose(loadings(from_file), loadings(builtin), atol=1e-10)
    assert from_file["metrics"]["pattern"] == builtin["metrics"]["pattern"]


def test_covariance_csv_keeps_header_names(cli, tmp_path: Path) -> None:
    path = write_csv(tmp_path / "pitprops.csv", pitprops().matrix, PITPROPS_NAMES)
    doc = run_json(cli, "run", "rsvd-gp", "--data", str(path), "--covariance", "-r", "6", "--lam", "0.27")
    builtin = run_json(cli, "run", "rsvd-gp", "-r", "6", "--lam", "0.27")
    assert doc["feature_names"] == list(PITPROPS_NAMES)
    np.testing.assert_allclose(loadings(doc), loadings(builtin), atol=1e-10)
    assert "topdiam" in ok(cli, "run", "spcart", "--data", str(path), "--covariance").stdout


def test_covariance_flag_changes_the_reading(cli, tmp_path: Path) -> None:
    """A square matrix is data by default and a covariance with --covariance."""
    c = pitprops().matrix
    path = tmp_path / "square.npy"
    np.save(path, c)
    as_cov = run_json(cli, "run", "spcart", "--data", str(path), "--covariance", "-r", "2")
    as_data = run_json(cli, "run", "spcart", "--data", str(path), "-r", "2")
    assert not np.allclose(loadings(as_cov), loadings(as_data))


def test_npz_cov_key_is_read_as_covariance(cli, tmp_path: Path) -> None:
    np.savez(tmp_path / "c.npz", cov=pitprops().matrix, names=np.array(PITPROPS_NAMES))
    doc = run_json(cli, "run", "spcart", "--data", str(tmp_path / "c.npz"), "-r", "6")
    builtin = run_json(cli, "run", "spcart", "-r", "6")
    assert doc["feature_names"] == list(PITPROPS_NAMES)
    np.testing.assert_allclose(loadings(doc), loadings(builtin), atol=1e-10)


# -- --param routing ------------------------------------------------------------------------------
def _stoppers(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    stopper = doc["spec"]["stopper"]
    assert stopper["name"] == "any-of"
    return {s["name"]: s for s in stopper["stoppers"]}


def test_param_tol_routes_to_the_nested_stopper(cli) -> None:
    default = run_json(cli, "run", "spcart", "-r", "6")
    tight = run_json(cli, "run", "spcart", "-r", "6", "--param", "tol=0.001")
    assert _stoppers(tight)["relative-change"]["tol"] == 0.001
    assert _stoppers(default)["relative-change"]["tol"] == 0.01
    assert tight["iterations"] > default["iterations"]
    assert "0.001" in tight["stopping_reason"]
    loose = run_json(cli, "run", "spcart", "-r", "6", "--param", "stopper.tol=0.5")
    assert loose["iterations"] <= default["iterations"]
    assert _stoppers(loose)["relative-change"]["tol"] == 0.5


@pytest.mark.parametrize("key", ["n", "stopper.n"])
def test_param_n_routes_to_max_iterations(cli, key: str) -> None:
    doc = run_json(cli, "run", "spcart", "-r", "6", "--param", f"{key}=1")
    assert _stoppers(doc)["max-iterations"]["n"] == 1
    assert _stoppers(doc)["relative-change"]["tol"] == 0.01  # untouched
    assert doc["iterations"] == 1


def test_param_truncator_threshold_equals_lam(cli) -> None:
    by_param = run_json(cli, "run", "spcart", "-r", "6", "--param", "truncator.threshold=0.3")
    by_lam = run_json(cli, "run", "spcart", "-r", "6", "--lam", "0.3")
    assert by_param["spec"]["truncator"] == by_lam["spec"]["truncator"]
    np.testing.assert_array_equal(loadings(by_param), loadings(by_lam))


def test_several_params(cli) -> None:
    doc = run_json(cli, "run", "rsvd-gp", "-r", "3", "--param", "tol=0.0001", "-p", "n=7")
    assert _stoppers(doc)["relative-change"]["tol"] == 0.0001
    assert _stoppers(doc)["max-iterations"]["n"] == 7
    assert doc["iterations"] <= 3 * 7


def test_param_form_absolute_with_lam(cli) -> None:
    doc = run_json(cli, "run", "rsvd-gpb", "-r", "3", "--param", "form=absolute", "--lam", "0.1")
    assert doc["spec"]["truncator"] == {"name": "hard", "form": "absolute", "threshold": 0.1}
    check_schema(doc, r=3, p=13)


# -- --bound: the relaxation of the metrics bound and gap ---------------------------------------------
def test_bound_threshold_is_recorded_and_never_above_the_fast_bound(cli) -> None:
    fast = run_json(cli, "run", "tpower", "-k", "4", "-r", "2")
    tight = run_json(cli, "run", "tpower", "-k", "4", "-r", "2", "--bound", "threshold")
    assert fast["spec"]["bound"] == "fast" and tight["spec"]["bound"] == "threshold"
    assert tight["loadings"] == fast["loadings"]
    assert all(t <= f for t, f in zip(tight["metrics"]["bound"], fast["metrics"]["bound"]))
    check_schema(tight, r=2, p=13)
    fast_path = json.loads(ok(cli, "path", "tpower", "-k", "3:4", "--json").stdout)
    tight_path = json.loads(ok(cli, "path", "tpower", "-k", "3:4", "--bound", "threshold", "--json").stdout)
    assert fast_path["bound"] == "fast" and tight_path["bound"] == "threshold"
    for fast_level, tight_level in zip(fast_path["levels"], tight_path["levels"]):
        assert all(t <= f for t, f in zip(tight_level["bound"], fast_level["bound"]))


@pytest.mark.parametrize("command", ["run", "path"])
def test_an_unknown_bound_exits_2_naming_the_valid_ones(cli, command: str) -> None:
    result = cli.invoke(command, "tpower", "-k", "4", "--bound", "exact")
    assert result.exit_code == 2, result.output
    assert "Error: unknown bound relaxation 'exact'; choose one of: fast, threshold" in result.stderr
    assert result.stdout == "" and "Traceback" not in result.output


def test_bound_is_not_a_part_parameter(cli) -> None:
    result = cli.invoke("run", "tpower", "-k", "4", "--param", "bound=threshold")
    assert result.exit_code == 2 and "not a part parameter" in result.stderr


# -- deflators and seeds --------------------------------------------------------------------------
def test_deflator_hotelling_changes_rsvd_gp(cli) -> None:
    projection = run_json(cli, "run", "rsvd-gp", "-r", "6", "--lam", "0.27")
    hotelling = run_json(cli, "run", "rsvd-gp", "-r", "6", "--lam", "0.27", "--deflator", "hotelling")
    assert projection["spec"]["deflator"] == {"name": "projection"}
    assert hotelling["spec"]["deflator"] == {"name": "hotelling"}
    check_schema(hotelling, r=6, p=13)
    assert not np.allclose(loadings(projection), loadings(hotelling))
    explicit = run_json(cli, "run", "rsvd-gp", "-r", "6", "--lam", "0.27", "--deflator", "projection")
    np.testing.assert_array_equal(loadings(explicit), loadings(projection))


@pytest.mark.parametrize("driver,updater", [("block", "rotation"), ("deflation", "power")])
def test_seed_makes_random_initializer_deterministic(cli, driver: str, updater: str) -> None:
    args = ("compose", "--driver", driver, "--initializer", "random", "--updater", updater, "--truncator", "hard", "-r", "3")
    a = run_json(cli, *args, "--seed", "1")
    b = run_json(cli, *args, "--seed", "1")
    np.testing.assert_array_equal(loadings(a), loadings(b))
    assert a["metrics"] == b["metrics"] and a["iterations"] == b["iterations"]
    others = [loadings(run_json(cli, *args, "--seed", str(s))) for s in (2, 3)]
    assert any(not np.allclose(loadings(a), x) for x in others)


def test_seed_does_not_change_deterministic_methods(cli) -> None:
    a = run_json(cli, "run", "spcart", "-r", "4", "--seed", "1")
    b = run_json(cli, "run", "spcart", "-r", "4", "--seed", "2")
    np.testing.assert_array_equal(loadings(a), loadings(b))


# -- compose ----------------------------------------------------------------------------------------
def test_compose_issue_example(cli) -> None:
    args = ("compose", "--driver", "deflation", "--updater", "power", "--truncator", "energy", "--deflator", "hotelling", "-r", "3")
    text = ok(cli, *args).stdout
    assert "topdiam" in text and "Metrics" in text
    doc = run_json(cli, *args)
    check_schema(doc, r=3, p=13)
    spec = doc["spec"]
    assert spec["driver"] == "deflation"
    assert spec["updater"]["name"] == "power"
    assert spec["truncator"]["name"] == "energy"
    assert spec["deflator"]["name"] == "hotelling"
    assert spec["initializer"]["name"] == "max-diagonal"  # the deflation default


def test_compose_defaults(cli) -> None:
    block = run_json(cli, "compose", "-r", "2")["spec"]
    assert (block["driver"], block["initializer"]["name"], block["updater"]["name"]) == ("block", "pca", "rotation")
    assert block["truncator"]["name"] == "hard" and block["deflator"] is None
    deflation = run_json(cli, "compose", "--deflator", "hotelling", "-r", "2")["spec"]
    assert deflation["driver"] == "deflation"
    assert deflation["updater"]["name"] == "power"
    assert run_json(cli, "compose", "--driver", "deflation", "-r", "2")["spec"]["deflator"]["name"] == "projection"


def test_compose_reproduces_spcart(cli) -> None:
    composed = run_json(cli, "compose", "--driver", "block", "--initializer", "pca", "--updater", "rotation", "--truncator", "hard", "-r", "6")
    spcart = run_json(cli, "run", "spcart", "-r", "6")
    assert composed["method"] == "composed"
    np.testing.assert_array_equal(loadings(composed), loadings(spcart))


def test_compose_with_data_lam_and_params(cli) -> None:
    doc = run_json(cli, "compose", "--driver", "deflation", "--updater", "power", "--truncator", "sparsity",
                   "--lam", "40", "--data", RANDOM_SOURCE, "-r", "2", "--param", "n=5")  # fmt: skip
    check_schema(doc, r=2, p=50)
    assert doc["metrics"]["pattern"] == [10, 10]
    assert _stoppers(doc)["max-iterations"]["n"] == 5


def test_compose_with_stopper(cli) -> None:
    doc = run_json(cli, "compose", "--stopper", "max-iterations", "--param", "n=2", "-r", "3")
    assert doc["spec"]["stopper"] == {"name": "max-iterations", "n": 2}
    assert doc["iterations"] == 2


# -- --out ------------------------------------------------------------------------------------------
def test_out_writes_the_same_json(cli, tmp_path: Path) -> None:
    out = tmp_path / "result.json"
    result = ok(cli, "run", "rsvd-gp", "-r", "6", "--lam", "0.27", "--json", "--out", str(out))
    assert out.read_text() == result.stdout
    assert json.loads(out.read_text()) == json.loads(result.stdout)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["result.json"]  # no temporary file left


def test_out_with_text_output_writes_json(cli, tmp_path: Path) -> None:
    out = tmp_path / "result.json"
    result = ok(cli, "run", "spcart", "-r", "6", "--out", str(out))
    assert "topdiam" in result.stdout and not result.stdout.lstrip().startswith("{")
    written = json.loads(out.read_text())
    reference = run_json(cli, "run", "spcart", "-r", "6")
    check_schema(written, r=6, p=13)
    written.pop("seconds"), reference.pop("seconds")
    assert written == reference
    assert sorted(p.name for p in tmp_path.iterdir()) == ["result.json"]


def test_out_overwrites_an_existing_file(cli, tmp_path: Path) -> None:
    out = tmp_path / "result.json"
    out.write_text("old contents\n")
    result = ok(cli, "compose", "-r", "2", "--json", "--out", str(out))
    assert out.read_text() == result.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["result.json"]


@pytest.mark.parametrize(
    "args",
    [
        ("run", "gpower-l0", "--lam", "100"),
        ("run", "spcart", "--lam", "1.5"),
        ("run", "spcart", "-r", "14"),
        ("run", "nosuch"),
        ("run", "spcart", "--param", "tol"),
        ("compose", "--driver", "block", "--deflator", "hotelling"),
        ("compose", "--truncator", "nosuch"),
    ],
    ids=lambda a: " ".join(a),
)
def test_out_on_failure_leaves_nothing(cli, tmp_path: Path, args: tuple[str, ...]) -> None:
    out = tmp_path / "result.json"
    result = cli.invoke(*args, "--json", "--out", str(out))
    assert result.exit_code == 2, result.output
    assert not out.exists()
    assert list(tmp_path.iterdir()) == []  # no temporary file either
    keep = tmp_path / "keep.json"
    keep.write_text("previous\n")
    result = cli.invoke(*args, "--out", str(keep))
    assert result.exit_code == 2
    assert keep.read_text() == "previous\n"
    assert [p.name for p in tmp_path.iterdir()] == ["keep.json"]


def test_out_on_bad_data_leaves_nothing(cli, tmp_path: Path) -> None:
    bad = tmp_path / "data"
    bad.mkdir()
    np.save(bad / "nan.npy", np.array([[1.0, np.nan], [2.0, 3.0], [0.0, 1.0]]))
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    result = cli.invoke("run", "spcart", "--data", str(bad / "nan.npy"), "--out", str(out_dir / "r.json"),
                    "--missing", "error")  # NaN are imputed by default (issue 28): refused on request
    assert result.exit_code == 2
    assert list(out_dir.iterdir()) == []


# -- reproduce ----------------------------------------------------------------------------------------
def test_reproduce_table4_check(cli) -> None:
    result = ok(cli, "reproduce", "spcart-table4", "--check")
    assert "Table 4" in result.stdout
    assert "SPCArt" in result.stdout
    assert "FAILED" not in result.stdout


def test_reproduce_json(cli) -> None:
    doc = json.loads(ok(cli, "reproduce", "spcart-table4", "--json").stdout)
    assert doc["name"] == "spcart-table4"
    assert doc["data"] == "builtin:pitprops" and doc["r"] == 6
    assert doc["rows"]
    for row in doc["rows"]:
        assert {"label", "method", "paper", "ours", "matches", "must_match"} <= set(row)
        for column in row["must_match"]:
            assert row["matches"][column], (row["label"], column)


def test_reproduce_unknown_experiment(cli) -> None:
    result = cli.invoke("reproduce", "nosuch")
    assert result.exit_code == 2
    assert result.stdout == ""
    assert "Error: unknown experiment 'nosuch'" in result.stderr
    assert "spcart-table4" in result.stderr


# -- what a reader sees is the same on every machine --------------------------------------------------
def test_text_output_orders_printed_ties_by_variable_and_never_prints_negative_zero():
    from spcakit.cli import render_text
    from spcakit.workflows.results import Result

    third = 1 / np.sqrt(3)
    # equal weights that differ in the last bits (as another BLAS computes them), in reverse variable order
    col = np.array([third * (1 - 2e-16), 0.0, third, third * (1 + 2e-16), -1e-9])
    col = col / np.linalg.norm(col)
    result = Result(method="m", spec={}, loadings=col[:, None], feature_names=("a", "b", "c", "d", "e"),
                    metrics={"nor": -0.0, "cpev": -1e-17}, iterations=1, stopping_reason="done")
    text = render_text(result, "here")
    rows = [line.split() for line in text.splitlines() if line.startswith("  ") and len(line.split()) == 2]
    assert [name for name, _ in rows[:4]] == ["a", "c", "d", "e"]  # rounded ties keep the variable order
    assert "-0.0" not in text  # neither a weight (-1e-9) nor a metric (-0.0, -1e-17) prints as -0.0000


def test_the_fit_commands_share_one_options_record():
    import attrs

    from spcakit.cli.options import FIT_OPTIONS, FitOptions, fit_options

    assert tuple(FIT_OPTIONS) == tuple(field.name for field in attrs.fields(FitOptions))
    defaults = {field.name: field.default for field in attrs.fields(FitOptions)}
    assert {name: default for name, (_, default) in FIT_OPTIONS.items()} == defaults
    with pytest.raises(ValueError, match="not fit options"):
        fit_options(exclude=("colour",))


@pytest.mark.parametrize("command", ["run", "compose", "path", "cv"])
def test_each_fit_command_takes_the_shared_options(cli, command):
    text = cli.invoke(command, "--help", terminal_width=200).output
    for option in ("--data", "--seed", "--standardize", "--no-center", "--index-col", "--drop", "--columns", "--param"):
        assert option in text, (command, option)
    assert ("--scheduler" in text) == (command != "cv")  # cv fits in memory: its folds hold out rows


def test_the_shared_options_reach_the_fit(cli):
    result = cli.invoke("run", "spcart", "-k", "4", "-r", "3", "--seed", "7", "--standardize", "--json")
    assert result.exit_code == 0, result.output
    document = json.loads(result.output)
    assert document["seed"] == 7 and len(document["loadings"][0]) == 3
    assert document["input"]["standardize"] is True


def test_run_makes_its_json_document_only_when_it_writes_it(cli, count_calls, tmp_path):
    """Text output needs no JSON document (on 100 000 variables, 25 MB of text): ``to_dict`` is not called; with
    ``--json`` or ``--out`` it is, and the file holds it."""
    from spcakit.workflows.results import Result

    calls = count_calls(Result, "to_dict")
    text = ok(cli, "run", "spcart", "-r", "2", "-d", "builtin:pitprops").stdout
    assert "CPEV" in text and calls["n"] == 0
    run_json(cli, "run", "spcart", "-r", "2", "-d", "builtin:pitprops")
    assert calls["n"] == 1
    out = tmp_path / "result.json"
    ok(cli, "run", "spcart", "-r", "2", "-d", "builtin:pitprops", "--out", out)
    assert calls["n"] == 2 and json.loads(out.read_text())["r"] == 2
