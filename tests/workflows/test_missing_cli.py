"""``--missing`` on ``spcakit run`` and ``compose``: a CSV with empty cells is imputed by EM."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest


def test_run_imputes_and_reports_the_fraction(cli, holes_csv: tuple[Path, np.ndarray]) -> None:
    path, missing = holes_csv
    result = cli.invoke("run", "tpower", "--data", path, "-k", "3", "-r", "1")
    assert result.exit_code == 0, result.output
    percent = f"{missing.mean():.1%}"
    assert f"missing: {int(missing.sum())} entries ({percent}) imputed by EM" in result.stdout
    assert f"warning: the data have {int(missing.sum())} missing entries ({percent} of the 80 x 6)" in result.stderr


def test_em_records_the_imputation_in_the_json_without_a_warning(cli, holes_csv: tuple[Path, np.ndarray], tmp_path: Path) -> None:
    path, missing = holes_csv
    out = tmp_path / "r.json"
    result = cli.invoke("run", "tpower", "--data", path, "-k", "3", "-r", "1", "--missing", "em", "--json", "--out", out)
    assert result.exit_code == 0, result.output
    assert "warning" not in result.stderr
    record = json.loads(out.read_text())["input"]["missing"]
    assert record["count"] == int(missing.sum()) and record["fraction"] == pytest.approx(missing.mean())
    assert record["converged"] is True and record["iterations"] >= 1


def test_compose_takes_missing(cli, holes_csv: tuple[Path, np.ndarray]) -> None:
    path, _ = holes_csv
    result = cli.invoke("compose", "--driver", "deflation", "--updater", "power", "--deflator", "projection",
                    "--truncator", "sparsity", "-k", "3", "-r", "1", "--data", path, "--missing", "em", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["input"]["missing"]["model"] == "em"


#: run and path, each with its k (path: a grid)
COMMANDS = [("run", "-k", "3"), ("path", "-k", "1:4")]


@pytest.mark.parametrize("command", COMMANDS, ids=["run", "path"])
def test_error_refuses_with_the_other_options(cli, holes_csv: tuple[Path, np.ndarray], command: tuple[str, ...]) -> None:
    path, _ = holes_csv
    name, *k = command
    result = cli.invoke(name, "tpower", "--data", path, *k, "--missing", "error")
    assert result.exit_code == 2 and result.stdout == ""
    assert "cells are not numbers" in result.stderr and "--missing auto or em" in result.stderr


@pytest.mark.parametrize("command", COMMANDS, ids=["run", "path"])
@pytest.mark.parametrize("value", ["mean", "", "EM"])
def test_a_bad_missing_value_exits_2(cli, holes_csv: tuple[Path, np.ndarray], value: str, command: tuple[str, ...]) -> None:
    path, _ = holes_csv
    name, *k = command
    result = cli.invoke(name, "tpower", "--data", path, *k, "--missing", value)
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "--missing takes auto, em or error" in result.stderr


def test_path_takes_missing(cli) -> None:
    # path imputes each level by EM (tests/workflows/test_missing_path.py); complete data are unchanged by the option
    result = cli.invoke("path", "tpower", "--data", "builtin:pitprops", "-k", "1:2", "--missing", "em")
    assert result.exit_code == 0, result.output
    assert "missing:" not in result.stdout


def test_command_line_warnings_give_command_line_advice(cli, tmp_path):
    """The imputation's warning names the Python keyword (missing='em'); on the command line it names the option."""
    path = tmp_path / "gap.csv"
    rows = ["a,b,c"] + [f"{i},{(i * 7) % 5},{(i * 3) % 4}" for i in range(1, 9)]
    rows[3] = "3,,1"
    path.write_text("\n".join(rows) + "\n")
    ran = cli.main("run", "spcart", "-d", str(path), "-r", "1")
    assert ran.code == 0, ran.err
    assert "give --missing em" in ran.err and "--missing error" in ran.err and "missing='" not in ran.err
