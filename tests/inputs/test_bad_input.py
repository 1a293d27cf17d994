"""Bad input: one clear ``Error: ...`` line naming the problem and the valid range,
exit code 2, never a traceback, nothing written to ``--out``; and the same cases
through the Python API raise the documented exception classes.

Cases marked ``xfail(strict=True, reason="BUG: ...")`` document the expected
behaviour of known bugs; they turn into failures (XPASS) once fixed, so the
marker must then be removed.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import spcakit
from spcakit.inputs.datasets import pitprops
from spcakit.core.errors import (
    InvalidDataError,
    InvalidParameterError,
    SpcakitError,
    UnknownNameError,
    ZeroLoadingError,
)


# -- data files -------------------------------------------------------------------------------------
def _gauss(n: int = 20, p: int = 5, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((n, p))


def _with(value: float) -> np.ndarray:
    x = _gauss()
    x[1, 0] = value
    return x


def _constant() -> np.ndarray:
    x = _gauss()
    x[:, 2] = 3.0
    return x


def _asymmetric() -> np.ndarray:
    c = np.eye(4)
    c[0, 1] = 0.5
    return c


def _complex() -> np.ndarray:
    rng = np.random.default_rng(0)
    return rng.standard_normal((20, 4)) + 1j * rng.standard_normal((20, 4))


NPY: dict[str, Callable[[], np.ndarray]] = {
    "nan.npy": lambda: _with(np.nan),
    "inf.npy": lambda: _with(np.inf),
    "empty.npy": lambda: np.zeros((0, 3)),
    "empty-cols.npy": lambda: np.zeros((5, 0)),
    "const.npy": _constant,
    "allconst.npy": lambda: np.ones((6, 3)),
    "nonsquare.npy": lambda: _gauss(4, 5),
    "asym.npy": _asymmetric,
    "nonpsd.npy": lambda: np.array([[1.0, 2.0], [2.0, 1.0]]),
    "zerocov.npy": lambda: np.zeros((3, 3)),
    "vector.npy": lambda: np.arange(5.0),
    "cube.npy": lambda: np.ones((2, 2, 2)),
    "onerow.npy": lambda: np.ones((1, 4)),
    "strings.npy": lambda: np.array([["a", "b"], ["c", "d"]]),
    "small.npy": lambda: _gauss(20, 5),
    "complex.npy": _complex,
}
TEXT: dict[str, str] = {
    "empty.csv": "",
    "header-only.csv": "a,b,c\n",
    "nan.csv": "a,b,c\n1,2,3\nnan,1,2\n4,5,1\n",
    "const.csv": "height,weight,age\n1,2,7\n2,1,7\n3,5,7\n",
    "words.csv": "a,b\n1,x\n2,3\n",
    "ragged.csv": "a,b\n1,2\n3\n",
    "dup.csv": "a,a\n1,2\n3,1\n4,4\n",
    "asym.csv": "a,b\n1,0.5\n0,1\n",
    "nonsquare.csv": "a,b,c\n1,0,0\n0,1,0\n",
    "data.txt": "1 2\n3 4\n",
    "garbage.npy": "not a numpy file\n",
    "garbage.npz": "not a zip file\n",
}


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("bad-data")
    for name, make in NPY.items():
        np.save(folder / name, make())
    for name, text in TEXT.items():
        (folder / name).write_text(text)
    (folder / "latin1.csv").write_bytes(b"a,b\n\xff\xfe,1\n2,3\n")
    (folder / "folder.csv").mkdir()
    (folder / "folder.npy").mkdir()
    np.savez(folder / "ambiguous.npz", a=np.ones((3, 3)), b=np.ones((3, 3)))
    np.savez(folder / "nan.npz", X=_with(np.nan))
    return folder


# -- helpers ----------------------------------------------------------------------------------------------
def assert_bad(result: Any, *phrases: str) -> str:
    """Exit 2, a single ``Error: ...`` line on stderr that contains every phrase, no traceback, no stdout."""
    assert result.exit_code == 2, f"exit code {result.exit_code}; output:\n{result.output}\nexception: {result.exception!r}"
    assert isinstance(result.exception, SystemExit), f"uncaught {result.exception!r}"
    assert "Traceback" not in result.output
    assert result.stdout == ""
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, f"expected one line on stderr, got:\n{result.stderr}"
    message = lines[0]
    assert message.startswith("Error: "), message
    for phrase in phrases:
        assert phrase.lower() in message.lower(), f"{phrase!r} not in {message!r}"
    return message


def bug(reason: str) -> pytest.MarkDecorator:
    return pytest.mark.xfail(strict=True, reason=f"BUG: {reason}")


# -- the CLI: one case per kind of bad input --------------------------------------------------------------
CASES = [
    # data
    # NaN are imputed by default (--missing auto: tests/workflows/test_missing_cli.py); --missing error refuses them
    pytest.param(["run", "spcart", "--data", "{files}/nan.npy", "--missing", "error"], ["NaN", "row 1, column 0", "finite", "--missing auto or em"], id="nan-npy"),
    pytest.param(["run", "spcart", "--data", "{files}/inf.npy"], ["infinite", "finite"], id="inf-npy"),
    pytest.param(["run", "spcart", "--data", "{files}/nan.csv", "--missing", "error"], ["line 3, column 'a'", "nan", "finite", "--missing auto or em"], id="nan-csv"),
    pytest.param(["run", "spcart", "--data", "{files}/nan.npz", "--missing", "error"], ["NaN", "finite"], id="nan-npz"),
    pytest.param(["run", "spcart", "--data", "{files}/empty.npy"], ["empty", "(0, 3)", "at least one row"], id="empty-npy"),
    pytest.param(["run", "spcart", "--data", "{files}/empty-cols.npy"], ["empty", "at least one"], id="empty-columns"),
    pytest.param(["run", "spcart", "--data", "{files}/empty.csv"], ["empty"], id="empty-csv"),
    pytest.param(["run", "spcart", "--data", "{files}/header-only.csv"], ["no data rows"], id="header-only-csv"),
    pytest.param(["run", "spcart", "--data", "{files}/const.npy", "-r", "5"],  # a constant column is welcome, r > 4 is not
                 ["r=5", "vary: 4 of the 5", "constant", "zero variance", "x3", "1 <= r <= 4"], id="constant-column"),
    pytest.param(["run", "spcart", "--data", "{files}/const.csv", "-r", "3"], ["constant", "age", "1 <= r <= 2"],
                 id="constant-column-csv"),
    pytest.param(["run", "spcart", "--data", "{files}/allconst.npy"], ["3 column(s) are constant"], id="all-constant"),
    pytest.param(["run", "spcart", "--data", "{files}/vector.npy"], ["2-D", "(5,)"], id="1d-array"),
    pytest.param(["run", "spcart", "--data", "{files}/cube.npy"], ["2-D", "(2, 2, 2)"], id="3d-array"),
    pytest.param(["run", "spcart", "--data", "{files}/onerow.npy"], ["at least 2 samples"], id="one-row"),
    pytest.param(["run", "spcart", "--data", "{files}/strings.npy"], ["numeric"], id="non-numeric-npy"),
    pytest.param(["run", "spcart", "--data", "{files}/words.csv"], ["not a number", "line 2, column 'b'"], id="non-numeric-csv"),
    pytest.param(["run", "spcart", "--data", "{files}/ragged.csv"], ["line 3", "header has 2"], id="ragged-csv"),
    pytest.param(["run", "spcart", "--data", "{files}/data.txt"], ["unsupported file type", ".npy, .npz, .csv or .tsv"], id="unsupported-suffix"),
    pytest.param(["run", "spcart", "--data", "{files}/garbage.npy"], ["cannot read"], id="garbage-npy"),
    pytest.param(["run", "spcart", "--data", "{files}/garbage.npz"], ["cannot read"], id="garbage-npz"),
    pytest.param(["run", "spcart", "--data", "{files}/folder.npy"], ["is a folder", ".npy, .npz, .csv or .tsv"], id="folder-npy"),
    pytest.param(["run", "spcart", "--data", "{files}/ambiguous.npz"], ["which array", "X, x, data"], id="ambiguous-npz"),
    pytest.param(["run", "spcart", "--data", "{files}/missing.npy"], ["neither a file nor a built-in", "builtin:pitprops"], id="missing-file"),
    pytest.param(["run", "spcart", "--data", "builtin:nosuch"], ["unknown built-in", "builtin:zou"], id="unknown-builtin"),
    pytest.param(["run", "spcart", "--data", "builtin:pitprops?n=3"], ["takes no parameters"], id="builtin-params"),
    pytest.param(["run", "spcart", "--data", "builtin:random?q=1"], ["n, p and seed", "q"], id="random-unknown-key"),
    pytest.param(["run", "spcart", "--data", "builtin:random?n=abc"], ["integers"], id="random-non-integer"),
    pytest.param(["run", "spcart", "--data", "builtin:random?n=1&p=3"], ["n >= 2"], id="random-n-1"),
    # covariance
    pytest.param(["run", "spcart", "--data", "{files}/nonsquare.npy", "--covariance"], ["square", "(4, 5)", "drop --covariance"], id="cov-nonsquare-npy"),
    pytest.param(["run", "spcart", "--data", "{files}/nonsquare.csv", "--covariance"], ["square", "(2, 3)"], id="cov-nonsquare-csv"),
    pytest.param(["run", "spcart", "--data", "{files}/asym.npy", "--covariance"], ["symmetric", "(0, 1)"], id="cov-asymmetric-npy"),
    pytest.param(["run", "spcart", "--data", "{files}/asym.csv", "--covariance"], ["symmetric"], id="cov-asymmetric-csv"),
    pytest.param(["run", "spcart", "--data", "{files}/nonpsd.npy", "--covariance"], ["positive semi-definite", ">= 0"], id="cov-not-psd"),
    pytest.param(["run", "spcart", "--data", "{files}/nan.npy", "--covariance"], ["NaN", "finite"], id="cov-nan"),
    # r
    pytest.param(["run", "spcart", "-r", "14"], ["r=14", "p=13", "1 <= r <= 13"], id="r-above-p"),
    pytest.param(["run", "spcart", "-r", "0"], ["positive integer", "0"], id="r-zero"),
    pytest.param(["run", "spcart", "-r", "-3"], ["positive integer"], id="r-negative"),
    pytest.param(["run", "spcart", "--data", "builtin:zou", "-r", "11"], ["p=10", "1 <= r <= 10"], id="r-above-p-zou"),
    pytest.param(["run", "spcart", "--data", "{files}/small.npy", "-r", "6"], ["p=5", "1 <= r <= 5"], id="r-above-p-npy"),
    pytest.param(["run", "spcart", "--data", "builtin:random?n=5&p=10", "-r", "5"], ["rank", "1 <= r <= 4"], id="r-above-rank"),
    pytest.param(["run", "rsvd-gp", "--data", "builtin:random?n=30&p=50&seed=1", "-r", "30"], ["rank", "1 <= r <= 29"], id="r-above-rank-n<p"),
    # lambda
    pytest.param(["run", "spcart", "--lam", "1"], ["lambda=1", "[0, 1)"], id="hard-lam-1"),
    pytest.param(["run", "spcart", "--lam", "-0.1"], ["lambda=-0.1", "[0, 1)"], id="hard-lam-negative"),
    pytest.param(["run", "rsvd-gp", "--lam", "2.5"], ["[0, 1)"], id="rsvd-gp-lam-2.5"),
    pytest.param(["run", "spcart", "--truncator", "soft", "--lam", "1"], ["soft", "[0, 1)"], id="soft-lam-1"),
    pytest.param(["run", "spcart", "--truncator", "soft", "--lam", "-1"], ["soft", "[0, 1)"], id="soft-lam-negative"),
    pytest.param(["run", "spcart", "--truncator", "sparsity", "--lam", "13"], ["lambda=13", "[0, 12]"], id="sparsity-lam-p"),
    pytest.param(["run", "tpower", "--lam", "20"], ["[0, 12]"], id="tpower-lam-20"),
    pytest.param(["run", "spcart", "--truncator", "sparsity", "--lam", "-1"], ["[0, 12]"], id="sparsity-lam-negative"),
    pytest.param(["run", "spcart", "--truncator", "sparsity", "--lam", "2.5"], ["integer", "2.5"], id="sparsity-lam-fraction"),
    pytest.param(["run", "tpower", "--data", "builtin:random?n=30&p=50&seed=1", "--lam", "50"], ["[0, 49]"], id="sparsity-lam-p50"),
    pytest.param(["run", "spcart", "--truncator", "energy", "--lam", "1"], ["energy", "[0, 1)"], id="energy-lam-1"),
    pytest.param(["run", "spcart", "--truncator", "energy", "--lam", "-0.2"], ["energy", "[0, 1)"], id="energy-lam-negative"),
    pytest.param(["run", "spcart", "--lam", "abc"], ["--lam must be a number"], id="lam-not-a-number"),
    pytest.param(["run", "spcart", "--lam", "nan"], ["finite"], id="lam-nan"),
    pytest.param(["run", "spcart", "--lam", "inf"], ["finite"], id="lam-inf"),
    pytest.param(["run", "spcart", "--lam", "1e400"], ["finite"], id="lam-overflow"),
    pytest.param(["run", "gpower-l0"], ["needs --lam", ">= 0"], id="gpower-l0-no-lam"),
    pytest.param(["run", "gpower-l0", "--lam", "-1"], [">= 0"], id="gpower-l0-lam-negative"),
    pytest.param(["run", "gpower-l1", "--lam", "-1"], [">= 0"], id="gpower-l1-lam-negative"),
    pytest.param(["run", "spcart", "--truncator", "none", "--lam", "0.3"], ["no lambda"], id="lam-on-none"),
    pytest.param(["run", "spcart", "--param", "form=absolute"], ["absolute", "--lam"], id="absolute-no-lam"),
    # a truncation that zeroes a whole loading
    pytest.param(["run", "gpower-l0", "--lam", "100"], ["zeroed loading", "gamma=100", "smaller --lam"], id="gpower-l0-huge-lam"),
    pytest.param(["run", "gpower-l1", "--lam", "100"], ["zeroed loading", "smaller --lam"], id="gpower-l1-huge-lam"),
    pytest.param(["run", "gpower-l0-block", "--lam", "100"], ["zeroed loading", "smaller --lam"], id="gpower-l0-block-huge-lam"),
    pytest.param(["run", "gpower-l1-block", "--lam", "100"], ["zeroed loading", "smaller --lam"], id="gpower-l1-block-huge-lam"),
    pytest.param(["run", "spcart", "--lam", "0.9"], ["zeroed loading", "1/sqrt(p)"], id="spcart-lam-0.9"),
    pytest.param(["run", "rsvd-gp", "--lam", "0.9"], ["zeroed loading", "1/sqrt(p)"], id="rsvd-gp-lam-0.9"),
    # names
    pytest.param(["run", "nosuch"], ["unknown method 'nosuch'", "spcart", "tpower"], id="unknown-method"),
    pytest.param(["run", "spcart", "--truncator", "nosuch"], ["unknown truncator 'nosuch'", "hard", "sparsity"], id="unknown-truncator"),
    pytest.param(["run", "rsvd-gp", "--deflator", "nosuch"], ["unknown deflator 'nosuch'", "hotelling", "projection"], id="unknown-deflator"),
    pytest.param(["parts", "--role", "nosuch"], ["unknown role 'nosuch'", "truncator", "deflator"], id="unknown-role"),
    pytest.param(["parts", "--role", "nosuch", "--json"], ["unknown role 'nosuch'"], id="unknown-role-json"),
    pytest.param(["compose", "--driver", "nosuch"], ["unknown driver 'nosuch'", "block", "deflation"], id="compose-unknown-driver"),
    pytest.param(["compose", "--initializer", "nosuch"], ["unknown initializer 'nosuch'", "pca"], id="compose-unknown-initializer"),
    pytest.param(["compose", "--updater", "nosuch"], ["unknown updater 'nosuch'", "rotation"], id="compose-unknown-updater"),
    pytest.param(["compose", "--truncator", "nosuch"], ["unknown truncator 'nosuch'", "hard"], id="compose-unknown-truncator"),
    pytest.param(["compose", "--driver", "deflation", "--deflator", "nosuch"], ["unknown deflator 'nosuch'"], id="compose-unknown-deflator"),
    pytest.param(["compose", "--stopper", "nosuch"], ["unknown stopper 'nosuch'", "max-iterations"], id="compose-unknown-stopper"),
    pytest.param(["reproduce", "nosuch"], ["unknown experiment 'nosuch'", "spcart-table4"], id="unknown-experiment"),
    # --param
    pytest.param(["run", "spcart", "--param", "tol"], ["KEY=VALUE", "'tol'"], id="param-no-equals"),
    pytest.param(["run", "spcart", "--param", "=3"], ["KEY=VALUE"], id="param-no-key"),
    pytest.param(["run", "spcart", "--param", "nosuch=1"], ["'nosuch'", "valid:", "stopper.tol", "truncator.threshold"], id="param-unknown"),
    pytest.param(["run", "spcart", "--param", "foo.tol=1"], ["not a role", "stopper"], id="param-bad-role"),
    pytest.param(["run", "spcart", "--param", "deflator.tol=1"], ["tol"], id="param-role-without-it"),
    pytest.param(["run", "spcart", "--param", "tol=-1"], ["tol", "positive"], id="param-tol-negative"),
    pytest.param(["run", "spcart", "--param", "tol=abc"], ["tol", "number"], id="param-tol-text"),
    pytest.param(["run", "spcart", "--param", "n=0"], ["n must be a positive integer"], id="param-n-zero"),
    pytest.param(["run", "spcart", "--param", "n=1.5"], ["n must be a positive integer"], id="param-n-fraction"),
    pytest.param(["run", "spcart", "--param", "form=weird"], ["relative, absolute", "weird"], id="param-form"),
    pytest.param(["run", "spcart", "--param", "seed=1"], ["'seed' is not a part parameter", "--seed 1"],
                 id="param-seed-is-an-option"),
    pytest.param(["run", "auto", "--param", "r=3"], ["'r' is not a part parameter", "-r 3"], id="param-r-is-an-option"),
    pytest.param(["run", "spcart", "--param", "truncator.threshold=2"], ["[0, 1)"], id="param-threshold-2"),
    pytest.param(["compose", "--param", "nosuch=1"], ["'nosuch'", "valid:"], id="compose-param-unknown"),
    pytest.param(["compose", "--param", "tol"], ["KEY=VALUE"], id="compose-param-malformed"),
    # deflator on a block method
    pytest.param(["run", "spcart", "--deflator", "hotelling"], ["does not deflate", "rsvd-gp"], id="deflator-on-spcart"),
    pytest.param(["run", "rsvd-gpb", "--deflator", "projection"], ["does not deflate"], id="deflator-on-rsvd-gpb"),
    pytest.param(["compose", "--driver", "block", "--deflator", "hotelling"], ["never deflates", "--driver deflation"], id="compose-block-deflator"),
    # --out
    pytest.param(["run", "spcart", "--out", "{files}/no/such/folder/r.json"], ["--out", "does not exist"], id="out-missing-folder"),
    pytest.param(["compose", "--out", "{files}/no/such/folder/r.json"], ["does not exist"], id="compose-out-missing-folder"),
    pytest.param(["run", "spcart", "--out", "{files}"], ["is a directory"], id="out-is-a-directory"),
    # known bugs: expected behaviour
    pytest.param(["run", "spcart", "--seed", "-1"], ["seed"], id="seed-negative"),
    pytest.param(["compose", "--initializer", "random", "--seed", "-5"], ["seed"], id="compose-seed-negative"),
    pytest.param(["run", "spcart", "--data", "builtin:random?seed=-1"], ["seed"], id="random-seed-negative"),
    pytest.param(["run", "spcart", "--data", "{files}/latin1.csv"], ["latin1.csv"], id="csv-not-utf8"),
    pytest.param(["run", "spcart", "--data", "{files}/folder.csv"], ["folder.csv"], id="csv-is-a-directory"),
    pytest.param(["run", "spcart", "--data", "{files}/complex.npy"], ["complex"], id="complex-data"),
    pytest.param(["run", "spcart", "--data", "{files}/zerocov.npy", "--covariance"], ["zero variance"], id="cov-all-zero"),
    pytest.param(["run", "spcart", "--param", "tol=true"], ["tol", "number"], id="param-tol-bool"),
    pytest.param(["run", "spcart", "--param", "stoppers=3"], ["stoppers", "list"], id="param-stoppers-int"),
    pytest.param(["run", "spcart", "--param", "n=null"], ["n must be a positive integer"], id="param-n-null"),
]


@pytest.mark.parametrize("args,phrases", CASES)
def test_cli_bad_input(cli, files: Path, args: list[str], phrases: list[str]) -> None:
    assert_bad(cli.invoke(*(a.replace("{files}", str(files)) for a in args)), *phrases)


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(["run", "spcart", "-r", "x"], id="r-not-integer"),
        pytest.param(["run", "spcart", "-r", "1.5"], id="r-fraction"),
        pytest.param(["run", "spcart", "--seed", "abc"], id="seed-not-integer"),
        pytest.param(["run", "spcart", "--nosuch"], id="unknown-option"),
        pytest.param(["nosuch"], id="unknown-command"),
        pytest.param(["run", "spcart", "--lam"], id="option-without-value"),
    ],
)
def test_cli_usage_errors(cli, args: list[str]) -> None:
    """Errors found by the option parser: exit 2 with a usage message on stderr, no traceback."""
    result = cli.invoke(*args)
    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit)
    assert "Traceback" not in result.output
    assert result.stdout == ""
    assert "Usage" in result.stderr or "Error" in result.stderr


def test_bad_input_writes_nothing_to_out(cli, files: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    for args in (
        ["run", "gpower-l0", "--lam", "100"],
        ["run", "spcart", "--data", str(files / "nan.npy"), "--missing", "error"],
        ["run", "spcart", "--data", str(files / "asym.npy"), "--covariance"],
        ["run", "spcart", "--lam", "1"],
        ["run", "spcart", "--param", "tol"],
    ):
        assert_bad(cli.invoke(*args, "--json", "--out", str(out)))
    assert list(tmp_path.iterdir()) == []
    assert not (files / "no").exists()  # --out into a missing folder does not create it
    assert_bad(cli.invoke("run", "spcart", "--out", str(files / "no" / "r.json")))
    assert not (files / "no").exists()


# -- the console script itself (``spcakit.cli:main``), end to end -------------------------------------------
def _console(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "spcakit.cli", *args], capture_output=True, text=True, timeout=60)


def test_console_bad_input_exit_2_without_traceback() -> None:
    proc = _console("run", "gpower-l0", "--lam", "100")
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines() == [proc.stderr.strip()]
    assert proc.stderr.startswith("Error: ") and "zeroed loading" in proc.stderr


def test_console_negative_seed_without_traceback() -> None:
    proc = _console("run", "spcart", "--seed", "-1")
    assert "Traceback" not in proc.stderr
    assert proc.returncode == 2


# -- the Python API: the same cases raise the documented classes ----------------------------------------------
PIT = pitprops()


def _pit(**kwargs: Any) -> Callable[[], Any]:
    kwargs.setdefault("method", "spcart")  # the SPCArt parts' parameters (the default method is auto)
    return lambda: spcakit.fit(spcakit.Covariance(PIT.matrix, PIT.feature_names), **kwargs)


def _data(x: Any, **kwargs: Any) -> Callable[[], Any]:
    return lambda: spcakit.fit(x, **kwargs)


API_CASES = [
    # data
    pytest.param(_data(_with(np.nan), missing="error"), InvalidDataError, ["NaN", "missing='em'"], id="nan"),  # imputed by default
    pytest.param(_data(_with(np.inf)), InvalidDataError, ["infinite"], id="inf"),
    pytest.param(_data(np.zeros((0, 3))), InvalidDataError, ["empty"], id="empty"),
    pytest.param(_data(np.zeros((4, 0))), InvalidDataError, ["empty"], id="no-columns"),
    pytest.param(_data(_constant(), r=5), InvalidParameterError, ["constant", "4 of the 5", "1 <= r <= 4"],
                 id="constant-column"),
    pytest.param(_data(np.ones((6, 3))), InvalidDataError, ["3 column(s) are constant", "no variance"], id="all-constant"),
    pytest.param(_data(np.arange(5.0)), InvalidDataError, ["2-D"], id="1d"),
    pytest.param(_data(np.ones((1, 3))), InvalidDataError, ["2 samples"], id="one-row"),
    pytest.param(_data(_gauss(4, 5), covariance=True), InvalidDataError, ["square"], id="cov-nonsquare"),
    pytest.param(_data(_asymmetric(), covariance=True), InvalidDataError, ["symmetric"], id="cov-asymmetric"),
    pytest.param(lambda: spcakit.fit(spcakit.Covariance(_asymmetric())), InvalidDataError, ["symmetric"], id="Covariance-asymmetric"),
    pytest.param(_data(np.array([[1.0, 2.0], [2.0, 1.0]]), covariance=True, r=1), InvalidDataError, ["semi-definite"], id="cov-not-psd"),
    pytest.param(_data(_gauss(), feature_names=["a", "b"]), InvalidDataError, ["one name per column"], id="wrong-name-count"),
    # r
    pytest.param(_pit(r=14), InvalidParameterError, ["1 <= r <= 13"], id="r-above-p"),
    pytest.param(_pit(r=0), InvalidParameterError, ["positive integer"], id="r-zero"),
    pytest.param(_pit(r=2.5), InvalidParameterError, ["positive integer"], id="r-float"),
    pytest.param(_pit(r=True), InvalidParameterError, ["positive integer"], id="r-bool"),
    pytest.param(_data(_gauss(5, 10), r=5), InvalidParameterError, ["rank", "1 <= r <= 4"], id="r-above-rank"),
    # lambda
    pytest.param(_pit(lam=1.0), InvalidParameterError, ["[0, 1)"], id="hard-lam-1"),
    pytest.param(_pit(lam=-0.1), InvalidParameterError, ["[0, 1)"], id="hard-lam-negative"),
    pytest.param(_pit(truncator="soft", lam=1.0), InvalidParameterError, ["[0, 1)"], id="soft-lam-1"),
    pytest.param(_pit(truncator="sparsity", lam=13), InvalidParameterError, ["[0, 12]"], id="sparsity-lam-p"),
    pytest.param(_pit(truncator="sparsity", lam=2.5), InvalidParameterError, ["integer"], id="sparsity-lam-fraction"),
    pytest.param(_pit(truncator="energy", lam=1.0), InvalidParameterError, ["[0, 1)"], id="energy-lam-1"),
    pytest.param(_pit(truncator="energy", lam=-0.5), InvalidParameterError, ["[0, 1)"], id="energy-lam-negative"),
    pytest.param(_pit(method="gpower-l0"), InvalidParameterError, ["--lam"], id="gpower-l0-no-lam"),
    pytest.param(_pit(truncator="none", lam=0.3), InvalidParameterError, ["no lambda"], id="lam-on-none"),
    # zeroed loadings
    pytest.param(_pit(method="gpower-l0", lam=100), ZeroLoadingError, ["zeroed loading"], id="gpower-l0-huge-lam"),
    pytest.param(_pit(method="gpower-l1-block", lam=100), ZeroLoadingError, ["zeroed loading"], id="gpower-l1-block-huge-lam"),
    pytest.param(_pit(method="spcart", lam=0.9), ZeroLoadingError, ["zeroed loading"], id="spcart-lam-0.9"),
    # names
    pytest.param(_pit(method="nosuch"), UnknownNameError, ["nosuch"], id="unknown-method"),
    pytest.param(_pit(truncator="nosuch"), UnknownNameError, ["nosuch"], id="unknown-truncator"),
    pytest.param(_pit(method="rsvd-gp", deflator="nosuch"), UnknownNameError, ["nosuch"], id="unknown-deflator"),
    pytest.param(lambda: spcakit.compose(driver="nosuch"), UnknownNameError, ["nosuch"], id="compose-unknown-driver"),
    pytest.param(lambda: spcakit.compose(updater="nosuch"), UnknownNameError, ["nosuch"], id="compose-unknown-updater"),
    pytest.param(lambda: spcakit.compose(driver="deflation", stopper="nosuch"), UnknownNameError, ["nosuch"], id="compose-unknown-stopper"),
    pytest.param(lambda: spcakit.get_registry().parts("nosuch"), UnknownNameError, ["nosuch"], id="registry-unknown-role"),
    # params and deflators
    pytest.param(_pit(deflator="hotelling"), InvalidParameterError, ["does not deflate"], id="deflator-on-block"),
    pytest.param(lambda: spcakit.compose(driver="block", deflator="hotelling"), InvalidParameterError, ["never deflates"], id="compose-block-deflator"),
    pytest.param(_pit(nosuch=1), InvalidParameterError, ["valid:"], id="param-unknown"),
    pytest.param(_pit(**{"foo.tol": 1}), InvalidParameterError, ["not a role"], id="param-bad-role"),
    pytest.param(_pit(tol=-1), InvalidParameterError, ["tol"], id="param-tol-negative"),
    pytest.param(_pit(n=0), InvalidParameterError, ["positive integer"], id="param-n-zero"),
    pytest.param(_pit(form="weird"), InvalidParameterError, ["relative, absolute"], id="param-form"),
    pytest.param(_pit(seed=-1), InvalidParameterError, ["seed"], id="seed-negative"),
]


@pytest.mark.parametrize("call,exc_type,phrases", API_CASES)
def test_api_raises(call: Callable[[], Any], exc_type: type[Exception], phrases: list[str]) -> None:
    with pytest.raises(exc_type) as info:
        call()
    assert isinstance(info.value, SpcakitError)
    message = str(info.value)
    for phrase in phrases:
        assert phrase.lower() in message.lower(), f"{phrase!r} not in {message!r}"


def test_exception_classes_are_catchable_as_builtins() -> None:
    assert issubclass(InvalidDataError, ValueError)
    assert issubclass(InvalidParameterError, ValueError)
    assert issubclass(UnknownNameError, KeyError)
    assert issubclass(ZeroLoadingError, ArithmeticError)
    for cls in (InvalidDataError, InvalidParameterError, UnknownNameError, ZeroLoadingError):
        assert issubclass(cls, SpcakitError)
    assert str(UnknownNameError("unknown method 'x'")) == "unknown method 'x'"  # not quoted like KeyError


def test_api_accepts_what_the_cli_accepts() -> None:
    """The boundaries themselves are valid: λ = 0, λ = p - 1 zeros, r = p, r = n - 1."""
    cov = spcakit.Covariance(PIT.matrix, PIT.feature_names)
    assert spcakit.fit(cov, "spcart", r=2, lam=0).metrics["pattern"] == [13, 13]
    assert spcakit.fit(cov, "tpower", r=2, lam=12).metrics["pattern"] == [1, 1]
    assert spcakit.fit(cov, "spcart", r=2, truncator="energy", lam=0).r == 2
    assert spcakit.fit(cov, "pca", r=13).r == 13
    assert spcakit.fit(_gauss(5, 10), "spcart", r=4).r == 4


def test_messages_name_a_few_of_many_the_same_way():
    """One rule for every message that names some of many items: the first SHOWN (or the limit given), then how
    many more."""
    from spcakit.core.errors import SHOWN, listed

    assert listed(["a", "b", "c"], limit=2) == "a, b and 1 more"
    assert listed(["a", "b"], limit=2) == "a, b"
    assert listed([]) == ""
    assert listed(list(range(SHOWN + 3)), lambda j: f"x{j}") == ", ".join(f"x{j}" for j in range(SHOWN)) + " and 3 more"
    assert listed(["p", "q", "r"], repr, separator="; ") == "'p'; 'q'; 'r'"
