"""Reproducible and recorded: the default seed, the record of a run (version, seed, input flags, shape,
content hash) in ``Result`` and in the JSON output, ``spcakit --version``, and identical JSON from two
runs of the same command."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import attrs
import numpy as np
import pytest

import spcakit
from spcakit.numerics.operators import DenseCovariance
from spcakit.inputs.dense import Covariance
from spcakit.inputs import as_problem
from spcakit.inputs.checks import content_sha256

REPO = Path(__file__).resolve().parents[2]
#: Keys of the JSON output that measure time; everything else must repeat exactly.
TIMING_KEYS = ("seconds",)


def data(n: int = 50, p: int = 7, seed: int = 4) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((n, p)) @ np.triu(np.ones((p, p)))


def random_start() -> spcakit.MethodSpec:
    """A method whose result depends on the seed: random initial loadings."""
    return spcakit.compose(initializer="random", updater="rotation", truncator="hard")


def recipe(matrix: np.ndarray) -> str:
    """The content hash exactly as documented in :func:`spcakit.inputs.checks.content_sha256`."""
    h = hashlib.sha256(np.array(matrix.shape, dtype="<u8").tobytes())
    h.update(np.ascontiguousarray(matrix, dtype="<f8").tobytes())
    return h.hexdigest()


# -- seeds ----------------------------------------------------------------------------------------------------
def test_the_default_seed_is_zero_and_recorded():
    x = data()
    default = spcakit.fit(x, random_start(), r=3)
    assert default.seed == 0
    np.testing.assert_array_equal(default.loadings, spcakit.fit(x, random_start(), r=3, seed=0).loadings)
    other = spcakit.fit(x, random_start(), r=3, seed=5)
    assert other.seed == 5 and not np.allclose(other.loadings, default.loadings)


def test_seed_none_draws_a_seed_and_records_it_so_the_run_can_be_repeated():
    x = data()
    drawn = [spcakit.fit(x, random_start(), r=3, seed=None) for _ in range(3)]
    seeds = [result.seed for result in drawn]
    assert all(isinstance(s, int) and 0 <= s < 2**32 for s in seeds)
    assert len(set(seeds)) > 1  # three draws of 2**32 alike: probability 2**-64
    for result in drawn:
        np.testing.assert_array_equal(spcakit.fit(x, random_start(), r=3, seed=result.seed).loadings, result.loadings)


# -- the record of the input ---------------------------------------------------------------------------------
def test_the_record_of_a_data_matrix():
    x = data()
    result = spcakit.fit(x, r=2)
    assert result.version == spcakit.__version__
    record = result.input
    assert (record.kind, record.shape, record.center, record.standardize) == ("data", (50, 7), True, False)
    assert record.sha256 == recipe(x) == content_sha256(x)
    np.testing.assert_allclose(record.mean, x.mean(axis=0), rtol=1e-13)
    assert record.scale is None
    assert spcakit.fit(x, r=2, center=False).input.center is False


def test_the_hash_identifies_the_numbers_whatever_their_layout():
    x = data()
    digest = content_sha256(x)
    assert content_sha256(np.asfortranarray(x)) == digest
    assert content_sha256(x[::-1][::-1]) == digest
    assert as_problem(x.tolist()).input.sha256 == digest
    integers = np.arange(12).reshape(4, 3)
    assert content_sha256(integers.astype(float)) == recipe(integers) == as_problem(integers).input.sha256
    pd = pytest.importorskip("pandas")
    assert as_problem(pd.DataFrame(x, columns=[f"c{j}" for j in range(7)])).input.sha256 == digest


def test_the_hash_changes_with_any_value_or_the_shape():
    x = data()
    digest = content_sha256(x)
    changed = x.copy()
    changed[17, 3] = np.nextafter(changed[17, 3], np.inf)  # one value by one unit in the last place
    assert content_sha256(changed) != digest
    assert content_sha256(x.reshape(7, 50)) != digest  # the same bytes in another shape
    assert content_sha256(x[:, :6]) != digest


def test_the_hash_covers_large_matrices_block_by_block():
    """Rows are hashed in blocks (a row wider than a block is one block): the digest is still the recipe's."""
    from spcakit.inputs import checks

    wide = np.asfortranarray(np.random.default_rng(0).standard_normal((40, 3000)))
    tall = np.random.default_rng(1).standard_normal((70_000, 9))
    for matrix in (wide, tall):
        assert content_sha256(matrix) == recipe(matrix)
    assert tall.nbytes > checks.BLOCK_BYTES  # the tall one takes several blocks


def test_data_of_several_blocks_are_hashed_within_the_checks_pass():
    """Data of several blocks are hashed block by block in the pass that checks them: same digest, any layout."""
    from spcakit.inputs import checks

    x = np.random.default_rng(2).standard_normal((30_000, 60))
    assert x.nbytes > 3 * checks.BLOCK_BYTES
    for matrix in (x, np.asfortranarray(x), x.astype(">f8")):
        record = as_problem(matrix).input
        assert record.sha256 == recipe(x) and record.sha256_skipped is None
        assert as_problem(matrix, standardize=True).input.sha256 == recipe(x)  # the values given, not the scaled


def test_matrices_above_the_hash_limit_are_not_hashed_and_the_record_says_so(monkeypatch):
    """Above HASH_LIMIT bytes the hash is skipped: ``sha256`` is None (null in the JSON) and
    ``sha256_skipped`` says why and how to hash; at the limit it is still computed."""
    from spcakit.inputs import checks

    x = data()
    monkeypatch.setattr(checks, "HASH_LIMIT", x.nbytes)
    assert as_problem(x).input.sha256 == recipe(x)
    monkeypatch.setattr(checks, "HASH_LIMIT", x.nbytes - 1)
    result = spcakit.fit(x, r=2)
    assert result.input.sha256 is None and result.to_dict()["input"]["sha256"] is None
    assert "HASH_LIMIT" in result.input.sha256_skipped and "content_sha256" in result.input.sha256_skipped
    assert result.to_dict()["input"]["sha256_skipped"] == result.input.sha256_skipped  # the JSON says so too
    assert "sha256_skipped" not in spcakit.fit(x[:, :3], r=1).to_dict()["input"]  # smaller: hashed, no note
    np.testing.assert_allclose(result.input.mean, x.mean(axis=0), rtol=1e-13)
    c = np.cov(x, rowvar=False)
    monkeypatch.setattr(checks, "HASH_LIMIT", c.nbytes - 1)
    record = as_problem(Covariance(c)).input
    assert record.sha256 is None and "HASH_LIMIT" in record.sha256_skipped
    assert attrs.evolve(result.input, sha256_skipped=None) == result.input  # a note, not the record's identity


def test_the_record_of_a_covariance_and_of_an_operator():
    d = spcakit.datasets.pitprops()
    record = spcakit.fit(Covariance(d.matrix), r=2).input
    assert (record.kind, record.shape, record.center, record.sha256) == ("covariance", (13, 13), None, recipe(d.matrix))
    operator = spcakit.fit(DenseCovariance(d.matrix), r=2).input
    assert (operator.kind, operator.shape, operator.sha256) == ("operator", (13, 13), None)


def test_to_dict_holds_the_record():
    result = spcakit.fit(data(), r=2, standardize=True, seed=3)
    doc = result.to_dict()
    assert doc["spcakit_version"] == spcakit.__version__ and doc["seed"] == 3
    assert doc["input"] == {"kind": "data", "shape": [50, 7], "center": True, "standardize": True,
                            "sha256": content_sha256(data())}  # fmt: skip
    assert json.loads(json.dumps(doc)) == doc  # plain JSON values


# -- command line ---------------------------------------------------------------------------------------------
def test_version_option(cli):
    result = cli.invoke("--version")
    assert result.exit_code == 0 and result.stdout == f"spcakit {spcakit.__version__}\n"
    console = subprocess.run([sys.executable, "-m", "spcakit", "--version"], capture_output=True, text=True, timeout=120)
    assert console.returncode == 0 and console.stdout == f"spcakit {spcakit.__version__}\n" and console.stderr == ""


def test_cli_json_records_version_seed_flags_shape_and_hash(cli, tmp_path: Path):
    x = data()
    csv = tmp_path / "x.csv"
    csv.write_text(",".join(f"v{j}" for j in range(7)) + "\n" + "\n".join(",".join(repr(float(v)) for v in row) for row in x))
    npy = tmp_path / "x.npy"
    np.save(npy, x)
    docs = []
    for source in (csv, npy):
        result = cli.invoke("run", "spcart", "-d", str(source), "--no-center", "--json")
        assert result.exit_code == 0, result.output
        docs.append(json.loads(result.stdout))
    for doc in docs:
        assert doc["spcakit_version"] == spcakit.__version__ and doc["seed"] == 0
        assert doc["input"] == {"kind": "data", "shape": [50, 7], "center": False, "standardize": False,
                                "sha256": recipe(x)}  # fmt: skip
    seeded = json.loads(cli.invoke("compose", "--initializer", "random", "--seed", "7", "--json").stdout)
    assert seeded["seed"] == 7


def test_cli_default_seed_is_zero(cli):
    args = ["compose", "--initializer", "random", "--updater", "rotation", "--truncator", "hard", "-r", "3", "--json"]
    default = json.loads(cli.invoke(*args).stdout)
    zero = json.loads(cli.invoke(*args, "--seed", "0").stdout)
    one = json.loads(cli.invoke(*args, "--seed", "1").stdout)
    for doc in (default, zero, one):
        for key in TIMING_KEYS:
            doc.pop(key)
    assert default == zero and default["seed"] == 0
    assert one["loadings"] != zero["loadings"]


def test_two_runs_of_the_same_command_give_the_same_json(tmp_path: Path):
    """Two processes (with different string hashing, as any two runs have) write identical JSON but for time."""
    x = data(n=80, p=9)
    csv = tmp_path / "table.csv"
    csv.write_text("id," + ",".join(f"v{j}" for j in range(9)) + "\n"
                   + "\n".join(f"{i}," + ",".join(repr(float(v)) for v in row) for i, row in enumerate(x)) + "\n")  # fmt: skip
    outputs = []
    for run in (1, 2):
        out = tmp_path / f"run{run}.json"
        command = [sys.executable, "-m", "spcakit", "compose", "--initializer", "random", "-d", str(csv),
                   "--index-col", "id", "--standardize", "-r", "3", "--json", "--out", str(out)]  # fmt: skip
        env = {**os.environ, "PYTHONHASHSEED": str(run)}
        done = subprocess.run(command, capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert out.read_text() == done.stdout
        outputs.append(json.loads(done.stdout))
    first, second = outputs
    assert set(first) == set(second)
    for key in TIMING_KEYS:
        assert isinstance(first.pop(key), float | int) and isinstance(second.pop(key), float | int)
    assert first == second
    assert first["seed"] == 0 and first["input"]["standardize"] is True and first["input"]["shape"] == [80, 9]
    assert first["spcakit_version"] == spcakit.__version__ and first["feature_names"][0] == "v0"


def test_a_model_keeps_the_note_of_a_skipped_hash(monkeypatch, tmp_path: Path):
    from spcakit.inputs import checks
    from spcakit.workflows.model import Model

    x = data()
    monkeypatch.setattr(checks, "HASH_LIMIT", x.nbytes - 1)
    result = spcakit.fit(x, r=2)
    path = tmp_path / "m.json"
    Model.from_result(result).save(path)
    loaded = Model.load(path)
    assert loaded.input.sha256 is None and loaded.input.sha256_skipped == result.input.sha256_skipped
