"""Spec files are checked by a schema: unknown keys (with a "did you mean"), wrong types and values
out of range are refused with the file and the key's path, for method and experiment specs alike;
a file that cannot be read is a SpecError naming it, never a traceback."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

import pytest

import spcakit
from spcakit.core.errors import SpecError
from spcakit.core.plugins import PluginSession, get_registry
from spcakit.core.registry import Registry
from spcakit.workflows.reproduce import check_experiment, experiment_path, list_experiments, run_experiment
from spcakit.core.schema import Int, Invalid, ListOf, OneOf, Str, Table, TableOf, Field, format_path, validate
from spcakit.core.specs import MethodSpec, load_method_spec, read_toml
from spcakit.workflows.reproduce.experiment_specs import load_experiment_spec
from spcakit.workflows.reproduce.common import specs_root

# A valid experiment (pitprops, two rows); each case below changes one thing in it.
EXPERIMENT = """\
name = "schema-test"
title = "A table"
paper = "Someone - Something"
data = "builtin:pitprops"
r = 2
columns = ["nz", "cpev"]

[overrides.spcart]
stopper = { name = "max-iterations", n = 5 }

[[rows]]
label = "SPCArt T-sp"
method = "spcart"
params = { truncator = "sparsity", lam = 4 }
paper = { nz = "18", cpev = "0.75" }
must_match = ["nz"]

[[rows]]
label = "TPower"
method = "tpower"
params = { k = 3 }
"""
OVERRIDES = '[overrides.spcart]\nstopper = { name = "max-iterations", n = 5 }\n'
ROWS = EXPERIMENT[EXPERIMENT.index("[[rows]]"):]
TABLES = EXPERIMENT[EXPERIMENT.index("[overrides"):]  # everything after the top-level keys


def write(tmp_path: Path, text: str, name: str = "x.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def refusal(path: Path) -> str:
    """The message of the SpecError the experiment at ``path`` is refused with (read, then checked)."""
    with pytest.raises(SpecError) as info:
        check_experiment(load_experiment_spec(path), p=13)
    return str(info.value)


# (case, edit of the valid text, the key path in the message, the hint in the message)
EXPERIMENT_CASES = [
    ("r-float", ("r = 2", "r = 2.7"), ": r: ", "must be a positive integer; got 2.7 (a float)"),
    ("r-bool", ("r = 2", "r = true"), ": r: ", "must be a positive integer; got true (a boolean)"),
    ("r-zero", ("r = 2", "r = 0"), ": r: ", "must be a positive integer; got 0"),
    ("covariance-string", ("r = 2", 'r = 2\ncovariance = "no"'), ": covariance: ", 'must be true or false; got "no" (a string)'),
    ("top-level-typo", ("title =", "titel ="), "x.toml: unknown key(s) ['titel']", "did you mean 'title'?"),
    ("missing-key", ('data = "builtin:pitprops"\n', ""), "x.toml: missing required key 'data'", "required keys: name, title, data, r, rows"),
    ("paper-not-string", ('paper = "Someone - Something"', "paper = 2016"), ": paper: ", "must be a string; got 2016"),
    ("row-key-typo", ("params = { k = 3 }", "parmas = { k = 3 }"), ": rows[1]: unknown key(s) ['parmas']", "did you mean 'params'?"),
    ("rows-not-array", (TABLES, "rows = 3\n"), ": rows: ", "must be an array of tables ([[rows]]); got 3"),
    ("rows-of-numbers", (TABLES, "rows = [1, 2]\n"), ": rows[0]: ", "must be a table ([[rows]]); got 1"),
    ("rows-empty", (TABLES, "rows = []\n"), ": rows: ", "with at least 1 entry; got 0"),
    ("params-not-table", ("params = { k = 3 }", 'params = "k=3"'), ": rows[1].params: ", 'must be a table of fit keywords and part parameters; got "k=3"'),
    ("row-paper-string", ('paper = { nz = "18", cpev = "0.75" }\nmust_match = ["nz"]', 'paper = "0.75"'), ": rows[0].paper: ",
     "must be a table of the paper's values by column"),
    ("paper-value-bool", ('cpev = "0.75"', "cpev = true"), ": rows[0].paper.cpev: ", "must be a string (keeps the paper's digits) or a number"),
    ("columns-not-list", ('columns = ["nz", "cpev"]', 'columns = "nz"'), ": columns: ", "must be an array of column names (strings)"),
    ("columns-not-strings", ('columns = ["nz", "cpev"]', 'columns = ["nz", 3]'), ": columns[1]: ", "must be a non-empty string; got 3"),
    ("column-typo", ('columns = ["nz", "cpev"]', 'columns = ["nz", "cpve"]'), ": columns[1]: unknown column 'cpve'", "did you mean 'cpev'?"),
    ("paper-column-typo", ('cpev = "0.75"', 'cpve = "0.75"'), ": rows[0].paper.cpve: ", "did you mean 'cpev'?"),
    ("paper-column-not-listed", ('cpev = "0.75"', 'ev = "0.75"'), ": rows[0].paper.ev: ", "add 'ev' to 'columns'"),
    ("must-match-typo", ('must_match = ["nz"]', 'must_match = ["nzz"]'), ": rows[0].must_match[0]: ", "did you mean 'nz'?"),
    ("must-match-number", ('must_match = ["nz"]', "must_match = 1"), ": rows[0].must_match: ", "true, false, or an array"),
    ("label-number", ('label = "TPower"', "label = 5"), ": rows[1].label: ", "must be a non-empty string; got 5"),
    ("overrides-not-table", (OVERRIDES, "overrides = { spcart = 3 }\n"), ": overrides.spcart: ", "must be a table of fit keywords; got 3"),
    ("overrides-keyword-typo", ("stopper = { name", "stoper = { name"), ": overrides.spcart.stoper: ", "did you mean 'stopper'?"),
    ("overrides-value", ("n = 5", "n = -5"), ": overrides.spcart.stopper: ", "n must be a positive integer; got -5"),
    ("overrides-part-typo", ('name = "max-iterations"', 'name = "max-iteration"'), ": overrides.spcart.stopper.name: ",
     "did you mean 'max-iterations'?"),
    ("overrides-nested-name", ('{ name = "max-iterations", n = 5 }', '{ name = "any-of", stoppers = [{ name = "max-iterations" }, { n = 5 }] }'),
     ": overrides.spcart.stopper.stoppers[1]: ", "a part table needs a 'name'"),
    ("overrides-method-typo", ("[overrides.spcart]", "[overrides.spcrat]"), ": overrides.spcrat: unknown method 'spcrat'",
     "did you mean 'spcart'?"),
    ("overrides-method-without-rows", ("[overrides.spcart]", "[overrides.rsvd-gp]"), ": overrides.rsvd-gp: ",
     "no row runs method 'rsvd-gp'; the rows run: spcart, tpower"),
    ("row-method-typo", ('method = "tpower"', 'method = "tpowr"'), ": rows[1].method: unknown method 'tpowr'", "did you mean 'tpower'?"),
    ("row-parameter-typo", ("params = { k = 3 }", "params = { kk = 3 }"), ": rows[1].params.kk: ", "did you mean 'k'?"),
    ("row-parameter-value", ("params = { k = 3 }", "params = { k = -3 }"), ": rows[1].params.k: ", "k must be a positive integer; got -3"),
    ("row-parameter-float-k", ("params = { k = 3 }", "params = { k = 2.5 }"), ": rows[1].params.k: ", "k must be"),
    ("row-truncator-typo", ('truncator = "sparsity"', 'truncator = "sparsty"'), ": rows[0].params.truncator: unknown truncator 'sparsty'",
     "did you mean 'sparsity'?"),
    ("row-truncator-table", ('truncator = "sparsity"', 'truncator = { name = "sparsity" }'), ": rows[0].params.truncator: ",
     "must be a non-empty string"),
    ("row-lambda-for-p", ("lam = 4", "lam = 40"), ": rows[0].params.truncator, rows[0].params.lam: ", "for p=13 variables"),
    ("row-sets-r", ("params = { k = 3 }", "params = { r = 3 }"), ": rows[1].params.r: ", "the top-level r"),
    ("row-seed", ("params = { k = 3 }", "params = { seed = -1 }"), ": rows[1].params.seed: ", "seed must be a non-negative integer"),
    ("row-deflator-on-block-driver", ("lam = 4 }", 'lam = 4, deflator = "schur" }'), ": rows[0].params.deflator: ",
     "runs the 'block' driver, which does not deflate"),
    ("row-without-needed-parameter", ("params = { k = 3 }\n", ""), ": rows[1]: method 'tpower': ", "truncation by sparsity needs"),
]


@pytest.mark.parametrize(("edit", "path", "hint"), [c[1:] for c in EXPERIMENT_CASES], ids=[c[0] for c in EXPERIMENT_CASES])
def test_experiment_spec_refusals_name_the_file_the_key_and_what_is_valid(tmp_path, edit, path, hint):
    old, new = edit
    assert old in EXPERIMENT
    spec_file = write(tmp_path, EXPERIMENT.replace(old, new, 1))
    message = refusal(spec_file)
    assert message.startswith(str(spec_file)), message
    assert path in message and hint in message, message


def test_the_valid_experiment_is_accepted_as_written(tmp_path):
    spec = load_experiment_spec(write(tmp_path, EXPERIMENT))
    check_experiment(spec, p=13)
    assert (spec.r, spec.covariance, spec.columns) == (2, False, ("nz", "cpev"))
    assert spec.rows[0].must_match == ("nz",) and spec.rows[1].label == "TPower"
    assert spec.rows[1].params == {"k": 3} and spec.overrides == {"spcart": {"stopper": {"name": "max-iterations", "n": 5}}}
    assert spec.source == str(tmp_path / "x.toml")
    # labels default to the method, must_match = true means every paper column
    text = EXPERIMENT.replace('label = "TPower"\n', "").replace('must_match = ["nz"]', "must_match = true")
    spec = load_experiment_spec(write(tmp_path, text))
    assert spec.rows[1].label == "tpower" and spec.rows[0].must_match == ("nz", "cpev")


def test_rows_are_checked_before_any_row_runs(tmp_path):
    """A bad last row fails before the first row is fitted (and the lambda range uses the loaded data's p)."""
    spec_file = write(tmp_path, EXPERIMENT.replace("params = { k = 3 }", 'params = { truncator = "sparsity", lam = 13 }'))
    ran = []
    with pytest.raises(SpecError, match=r": rows\[1\]\.params\.lam: .*outside \[0, 12\] for p=13") as info:
        run_experiment(str(spec_file), on_row=ran.append)
    assert ran == [] and str(info.value).startswith(str(spec_file))


# -- method specs ------------------------------------------------------------------------------------
METHOD = """\
name = "schema-method"
summary = "a method"
paper = "Someone - Something"
driver = "block"
initializer = "pca"
updater = "rotation"
truncator = { name = "hard" }
stopper = { name = "any-of", stoppers = [{ name = "max-iterations", n = 3 }] }
"""

METHOD_CASES = [
    ("key-typo", ('driver = "block"', 'drvier = "block"'), "unknown key(s) ['drvier']", "did you mean 'driver'?"),
    ("two-typos", ('driver = "block"\ninitializer', 'drvier = "block"\ninitialiser'), "unknown key(s) ['drvier', 'initialiser']",
     "did you mean 'driver' for 'drvier', 'initializer' for 'initialiser'?"),
    ("name-number", ('name = "schema-method"', "name = 3"), ": name: ", "must be a non-empty string; got 3"),
    ("summary-number", ('summary = "a method"', "summary = 3"), ": summary: ", "must be a string; got 3"),
    ("paper-array", ('paper = "Someone - Something"', 'paper = ["a"]'), ": paper: ", "must be a string; got ['a'] (an array)"),
    ("driver-bool", ('driver = "block"', "driver = true"), ": driver: ", "must be a non-empty string; got true (a boolean)"),
    ("compose-default-string", ('driver = "block"', 'driver = "block"\ncompose_default = "yes"'), ": compose_default: ",
     'must be true or false; got "yes"'),
    ("version-string", ('driver = "block"', 'driver = "block"\nversion = "1"'), ": version: ", 'must be an integer; got "1"'),
    ("version-other", ('driver = "block"', 'driver = "block"\nversion = 2'), ": version: ", "this spcakit reads version 1"),
    ("extends-number", ('driver = "block"', 'driver = "block"\nextends = 3'), ": extends: ", "must be a non-empty string"),
    ("part-number", ('truncator = { name = "hard" }', "truncator = 3"), ": truncator: ", "must be a part name or a table"),
    ("part-name-number", ('truncator = { name = "hard" }', "truncator = { name = 3 }"), ": truncator.name: ", "must be a non-empty string"),
    ("part-name-typo", ('truncator = { name = "hard" }', 'truncator = { nmae = "hard" }'), ": truncator: ",
     "did you mean 'name' for 'nmae'?"),
    ("nested-part-name", ('{ name = "max-iterations", n = 3 }', '{ name = 3, n = 3 }'), ": stopper.stoppers[0].name: ",
     "must be a non-empty string"),
]


@pytest.mark.parametrize(("edit", "path", "hint"), [c[1:] for c in METHOD_CASES], ids=[c[0] for c in METHOD_CASES])
def test_method_spec_refusals_name_the_file_the_key_and_what_is_valid(tmp_path, edit, path, hint):
    old, new = edit
    assert old in METHOD
    spec_file = write(tmp_path, METHOD.replace(old, new, 1))
    readers = [load_method_spec, lambda f: Registry().register_method(read_toml(f), where=str(f))]
    if new.startswith("name = "):  # the registry refuses a method without a string name before the schema sees it
        readers = readers[:1]
    for read in readers:
        with pytest.raises(SpecError) as info:
            read(spec_file)
        message = str(info.value)
        assert message.startswith(str(spec_file)) and path in message and hint in message, message


def test_the_valid_method_is_accepted(tmp_path):
    spec = load_method_spec(write(tmp_path, METHOD))
    assert (spec.name, spec.driver, spec.truncator.name, spec.stopper.params["stoppers"][0]["n"]) == ("schema-method", "block", "hard", 3)
    assert spec.deflator is None


def test_a_plugin_registering_a_bad_spec_file_fails_alone_and_names_the_key(tmp_path):
    spec_file = write(tmp_path, METHOD.replace('driver = "block"', 'drvier = "block"'))

    class Plugin:
        @spcakit.hookimpl
        def spcakit_register_methods(self, register):
            register(spec_file)

    session = PluginSession()
    record = session.add(Plugin(), "bad-spec")
    assert record.error is not None and str(spec_file) in record.error and "did you mean 'driver'?" in record.error
    assert session.registry.method_names() == []


# -- files that cannot be read -------------------------------------------------------------------------
def _non_utf8(path: Path) -> None:
    path.write_bytes('name = "caf\xe9"\n'.encode("latin-1"))


def _folder(path: Path) -> None:
    path.mkdir()


def _empty(path: Path) -> None:
    path.write_bytes(b"")


def _comments(path: Path) -> None:
    path.write_text("# nothing but a comment\n", encoding="utf-8")


def _invalid(path: Path) -> None:
    path.write_text("name = \n", encoding="utf-8")


FILE_CASES = [
    ("not-utf8", _non_utf8, "not UTF-8 text (byte b'\\xe9' on line 1)"),
    ("folder", _folder, "is a folder; give a TOML spec file"),
    ("empty", _empty, "the file has no keys (it is empty or only comments)"),
    ("only-comments", _comments, "the file has no keys"),
    ("invalid-toml", _invalid, "not valid TOML: "),
    ("missing", lambda path: None, "spec file not found"),
]


@pytest.mark.parametrize(("make", "message"), [c[1:] for c in FILE_CASES], ids=[c[0] for c in FILE_CASES])
def test_unreadable_files_are_spec_errors_naming_the_file(tmp_path, make, message):
    path = tmp_path / "x.toml"
    make(path)
    for read in (load_experiment_spec, load_method_spec, read_toml):
        with pytest.raises(SpecError) as info:
            read(path)
        assert str(path) in str(info.value) and message in str(info.value), str(info.value)


def test_a_file_without_read_permission_is_a_spec_error(tmp_path, monkeypatch):
    path = write(tmp_path, EXPERIMENT)

    def denied(self):
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "read_bytes", denied)  # chmod does not stop root, so the denial is simulated
    with pytest.raises(SpecError, match="cannot be read \\(permission denied\\)") as info:
        load_experiment_spec(path)
    assert str(path) in str(info.value)


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root reads files whatever their mode")
def test_a_file_without_read_permission_for_real(tmp_path):
    path = write(tmp_path, EXPERIMENT)
    path.chmod(0)
    try:
        with pytest.raises(SpecError, match="permission denied"):
            load_experiment_spec(path)
    finally:
        path.chmod(0o600)


# -- the shipped specs -----------------------------------------------------------------------------------
def test_every_shipped_spec_file_passes_the_schema():
    method_files = sorted((specs_root() / "methods").rglob("*.toml"))
    assert len(method_files) >= 10
    for path in method_files:
        MethodSpec.check_keys(read_toml(path), str(path))
    registry = get_registry()
    shipped = {tomllib.loads(p.read_text(encoding="utf-8"))["name"] for p in method_files}
    assert shipped <= set(registry.method_names())
    for name in sorted(shipped):
        registry.method(name)  # extends resolved, required keys present
    experiments = list_experiments()
    assert len(experiments) >= 5
    for name in experiments:
        check_experiment(load_experiment_spec(experiment_path(name)))


def test_an_unknown_experiment_name_gets_the_closest_one():
    with pytest.raises(SpecError, match=r"unknown experiment 'spcart-tabel4' \(did you mean 'spcart-table4'\?\); available: .*spcart-table4"):
        experiment_path("spcart-tabel4")


# -- the command line ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (EXPERIMENT.replace("r = 2", "r = 2.7"), ": r: must be a positive integer; got 2.7 (a float)"),
        (EXPERIMENT.replace("params = { k = 3 }", "parmas = { k = 3 }"), "(did you mean 'params'?)"),
        (EXPERIMENT.replace("params = { k = 3 }", "params = { kk = 3 }"), "rows[1].params.kk: "),
        (b"\xff\xfe", "not UTF-8 text"),
        (None, "is a folder"),
    ],
    ids=["wrong-type", "typo", "unknown-parameter", "not-utf8", "folder"],
)
def test_reproduce_refuses_a_bad_spec_file_with_exit_2(cli, tmp_path, text, expected):
    path = tmp_path / "bad.toml"
    if text is None:
        path.mkdir()
    elif isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    code, output = cli.main("reproduce", str(path)).code_and_output
    assert code == 2, output
    assert f"Error: {path}" in output and expected in output and "Traceback" not in output


def test_reproduce_names_a_missing_spec_file(cli, tmp_path):
    code, output = cli.main("reproduce", str(tmp_path / "nope.toml")).code_and_output
    assert code == 2 and f"spec file not found: {tmp_path / 'nope.toml'}" in output


# -- the schema itself -------------------------------------------------------------------------------------
def test_paths_print_as_toml_reads_them():
    assert format_path(("rows", 3, "params", "k")) == "rows[3].params.k"
    assert format_path(("overrides", "rsvd-gp", "stopper.tol")) == 'overrides.rsvd-gp."stopper.tol"'
    assert format_path(()) == ""


def test_schema_kinds_return_defaults_and_prefer_the_deepest_error():
    schema = Table({"r": Field(Int(low=1), required=True), "tags": Field(ListOf(Str()), default=[]),
                    "x": Field(OneOf((Str(), TableOf(Int())), expected="a string or a table of integers"))})
    assert validate(schema, {"r": 3}, "f") == {"r": 3, "tags": [], "x": None}
    with pytest.raises(SpecError, match=r"^f: x\.b: must be an integer; got 1\.5 \(a float\)$"):
        validate(schema, {"r": 1, "x": {"a": 1, "b": 1.5}}, "f")
    with pytest.raises(SpecError, match=r"^f: x: must be a string or a table of integers; got 4 \(an integer\)$"):
        validate(schema, {"r": 1, "x": 4}, "f")
    with pytest.raises(Invalid) as info:
        schema({"r": 1, "tags": ["a", 2]}, ("top",))
    assert info.value.path == ("top", "tags", 1)


def test_a_method_spec_with_a_bad_part_parameter_names_its_file_and_role():
    """A part parameter the spec itself gets wrong is refused when the method is looked up, with the spec's
    file and the part's role, not at run time without saying where the value came from."""
    registry = Registry()
    for info in spcakit.get_registry().parts():
        registry.register_part(info.cls, plugin=info.plugin)
    registry.register_method({
        "name": "bad-threshold", "driver": "block", "initializer": "pca", "updater": "rotation",
        "truncator": "hard", "stopper": {"name": "max-iterations", "n": -5},
    }, where="plugins/x/specs/bad.toml", plugin="x")  # fmt: skip
    registry.register_method({
        "name": "unknown-part", "driver": "block", "initializer": "pca", "updater": "rotation",
        "truncator": "hrad", "stopper": "max-iterations",
    }, where="plugins/x/specs/typo.toml", plugin="x")  # fmt: skip
    with pytest.raises(SpecError, match=r"^plugins/x/specs/bad\.toml: stopper: .*n must be a positive integer"):
        registry.method("bad-threshold")
    with pytest.raises(SpecError, match=r"^plugins/x/specs/typo\.toml: truncator: .*'hrad'.*did you mean 'hard'"):
        registry.method("unknown-part")
    assert {info.spec.name for info in registry.methods()} == {"bad-threshold", "unknown-part"}  # listing still works
