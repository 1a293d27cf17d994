"""Plugins: registering parts at run time, the third-party ``firm`` plugin, broken plugins, env vars.

The ``firm`` tests need the example plugin installed next to spcakit::

    pip install -e ".[test]" -e ./plugins/spcakit-firm

and skip (saying so) when it is not. Broken plugins are fake distributions
(a ``*.dist-info`` folder with ``entry_points.txt``) put on ``PYTHONPATH`` of
a subprocess, so they never touch this process's plugin session.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import spcakit
from spcakit.parts import plugin as core_plugin
from spcakit.core import hookspecs
from spcakit.inputs.datasets import pitprops
from spcakit.core.plugins import HOOK_NAMES, PluginSession, get_plugin_manager, get_registry, get_session

REPO = Path(__file__).resolve().parents[2]
TEST_PLUGIN = "test-plugin"
TEST_PART = "test-keep-top1"
FIRM_INSTALL = 'pip install -e ".[test]" -e ./plugins/spcakit-firm'


# -- a plugin registered at run time ------------------------------------------------------
@spcakit.part(TEST_PART)
class KeepTop1(spcakit.Truncator):
    """keep the largest entry of each column (test plugin)"""

    def __call__(self, z: np.ndarray) -> np.ndarray:
        out = np.zeros_like(z)
        rows = np.argmax(np.abs(z), axis=0)
        cols = np.arange(z.shape[1])
        out[rows, cols] = z[rows, cols]
        return out


class _TestPlugin:
    @spcakit.hookimpl
    def spcakit_register_parts(self, register):
        register(KeepTop1)


@contextlib.contextmanager
def registered_test_plugin() -> Iterator[spcakit.core.plugins.PluginSession]:
    """Add the test plugin to the global session; always remove it again."""
    session = get_session()
    try:
        record = session.add(_TestPlugin(), TEST_PLUGIN)
        assert record.error is None, record.error
        yield session
    finally:
        session.remove(TEST_PLUGIN)


@pytest.fixture
def test_plugin() -> Iterator[spcakit.core.plugins.PluginSession]:
    with registered_test_plugin() as session:
        yield session


def _cov():
    data = pitprops()
    return spcakit.Covariance(data.matrix, data.feature_names)


def test_runtime_plugin_part_is_usable(test_plugin):
    info = get_registry().part("truncator", TEST_PART)
    assert info.plugin == TEST_PLUGIN
    assert test_plugin.records[TEST_PLUGIN].hooks == ("spcakit_register_parts",)
    result = spcakit.fit(_cov(), spcakit.compose(truncator=TEST_PART), r=3)
    assert result.loadings.shape == (13, 3)
    assert np.count_nonzero(result.loadings, axis=0).tolist() == [1, 1, 1]
    np.testing.assert_allclose(np.linalg.norm(result.loadings, axis=0), 1.0)


def test_runtime_plugin_part_is_listed_by_the_cli(cli, test_plugin):
    out = cli.invoke("parts", "--role", "truncator", "--json")
    assert out.exit_code == 0, out.output
    rows = {row["name"]: row for row in json.loads(out.stdout)}
    assert rows[TEST_PART]["plugin"] == TEST_PLUGIN


def test_test_plugin_is_gone_afterwards():
    with registered_test_plugin():
        assert TEST_PART in get_registry().part_names("truncator")
    assert TEST_PART not in get_registry().part_names("truncator")
    assert get_plugin_manager().get_plugin(TEST_PLUGIN) is None
    assert TEST_PLUGIN not in get_session().records
    with pytest.raises(spcakit.UnknownNameError, match=TEST_PART):
        spcakit.compose(truncator=TEST_PART)


# -- the third-party firm plugin ------------------------------------------------------------
@pytest.fixture
def firm_loaded() -> None:
    try:
        import spcakit_firm  # noqa: F401
    except ImportError:
        pytest.skip(f"the example plugin spcakit-firm is not installed (or not importable); run: {FIRM_INSTALL}")
    record = get_session().records.get("firm")
    if record is None:
        pytest.skip("spcakit-firm is installed but not loaded (SPCAKIT_LOAD_PLUGINS / SPCAKIT_DISABLE_PLUGINS set?)")
    assert record.error is None, record.error


def test_firm_is_listed_as_a_truncator(cli, firm_loaded):
    out = cli.invoke("parts", "--role", "truncator", "--json")
    assert out.exit_code == 0, out.output
    rows = {row["name"]: row for row in json.loads(out.stdout)}
    assert rows["firm"]["plugin"] == "firm"
    assert rows["firm"]["lam"] == "threshold"
    assert rows["firm"]["parameters"] == {"threshold": None, "ratio": 2.0}
    assert rows["hard"]["plugin"] == "core"

    text = cli.invoke("parts", "--role", "truncator")
    assert text.exit_code == 0, text.output
    line = next(ln for ln in text.stdout.splitlines() if ln.split()[:1] == ["firm"])
    assert line.rstrip().endswith("(firm)")


def test_firm_composes_and_runs(cli, firm_loaded):
    out = cli.invoke("compose", "--truncator", "firm", "--data", "builtin:pitprops", "-r", "3", "--json")
    assert out.exit_code == 0, out.output
    doc = json.loads(out.stdout)
    loadings = np.array(doc["loadings"])
    assert loadings.shape == (13, 3)
    np.testing.assert_allclose(np.linalg.norm(loadings, axis=0), 1.0)
    assert 0 < np.count_nonzero(loadings) < loadings.size  # sparse, but no loading zeroed
    assert doc["spec"]["truncator"]["name"] == "firm"


def test_firm_lam_and_ratio_on_the_command_line(cli, firm_loaded):
    ok = cli.invoke("run", "spcart", "-t", "firm", "--lam", "0.3", "--param", "ratio=3", "-r", "2", "--json")
    assert ok.exit_code == 0, ok.output
    assert json.loads(ok.stdout)["spec"]["truncator"] == {"name": "firm", "threshold": 0.3, "ratio": 3}

    bad_lam = cli.invoke("run", "spcart", "-t", "firm", "--lam", "1.5")
    assert bad_lam.exit_code == 2
    assert "[0, 1)" in bad_lam.output
    bad_ratio = cli.invoke("run", "spcart", "-t", "firm", "--param", "ratio=1")
    assert bad_ratio.exit_code == 2
    assert "> 1" in bad_ratio.output


def test_firm_is_listed_as_a_plugin(cli, firm_loaded):
    out = cli.invoke("plugins", "--json")
    assert out.exit_code == 0, out.output
    records = {rec["name"]: rec for rec in json.loads(out.stdout)}
    assert records["firm"] == {
        "name": "firm",
        "package": "spcakit-firm",
        "version": "0.1.0",
        "hooks": ["spcakit_register_parts"],
        "error": None,
        "refused": [],
    }


def test_firm_through_the_python_api(firm_loaded):
    result = spcakit.fit(_cov(), "spcart", r=3, truncator="firm", lam=0.3, ratio=3.0)
    assert result.spec["truncator"] == {"name": "firm", "threshold": 0.3, "ratio": 3.0}
    assert np.all(np.count_nonzero(result.loadings, axis=0) >= 1)
    with pytest.raises(spcakit.InvalidParameterError, match=r"\[0, 1\)"):
        spcakit.fit(_cov(), "spcart", r=3, truncator="firm", lam=1.0)


# -- broken plugins (subprocess, fake distributions) --------------------------------------------
def _fake_distribution(folder: Path, dist: str, version: str, entry_point: str, module: str, source: str) -> Path:
    """Write ``module.py`` and a ``dist-info`` declaring ``[spcakit] entry_point = module``."""
    info = folder / f"{dist.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
    (info / "entry_points.txt").write_text(f"[spcakit]\n{entry_point} = {module}\n")
    (folder / f"{module}.py").write_text(textwrap.dedent(source))
    return folder


def _cli(*args: str, pythonpath: Path | None = None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run ``python -m spcakit.cli ARGS`` in a fresh interpreter."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("SPCAKIT_")}
    if pythonpath is not None:
        environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(pythonpath), environ.get("PYTHONPATH")]))
    environ.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "spcakit.cli", *args],
        capture_output=True, text=True, env=environ, timeout=180,
    )  # fmt: skip


@pytest.fixture
def broken_plugin_path(tmp_path: Path) -> Path:
    return _fake_distribution(
        tmp_path, "broken-plugin", "0.1", "broken", "broken_plugin_mod", 'raise RuntimeError("boom")\n'
    )


def test_plugin_failing_at_import_is_reported_by_name(broken_plugin_path):
    proc = _cli("plugins", "--json", pythonpath=broken_plugin_path)
    assert proc.returncode == 0, proc.stderr
    records = {rec["name"]: rec for rec in json.loads(proc.stdout)}
    broken = records["broken"]
    assert broken["package"] == "broken-plugin"
    assert broken["version"] == "0.1"
    assert "RuntimeError" in broken["error"] and "boom" in broken["error"]
    assert "broken_plugin_mod" in broken["error"]
    assert records["spcart"]["error"] is None and records["core"]["error"] is None


def test_plugin_failing_at_import_does_not_break_a_run(broken_plugin_path):
    proc = _cli("run", "spcart", "--json", pythonpath=broken_plugin_path)
    assert proc.returncode == 0, proc.stderr
    assert "'broken'" in proc.stderr and "boom" in proc.stderr
    assert "Traceback" not in proc.stderr
    loadings = np.array(json.loads(proc.stdout)["loadings"])
    assert loadings.shape == (13, 2)


DUPLICATE_SOURCE = """
    import spcakit

    @spcakit.part("dup-extra")
    class Extra(spcakit.Truncator):
        \"\"\"accepted first, must be rolled back\"\"\"

    @spcakit.part("hard")
    class Hard(spcakit.Truncator):
        \"\"\"taken by the built-in spcart plugin\"\"\"

    @spcakit.hookimpl
    def spcakit_register_parts(register):
        register([Extra, Hard])
"""


@spcakit.part("dup-extra")
class _Extra(spcakit.Truncator):
    """accepted first, must be rolled back"""


@spcakit.part("hard")
class _Hard(spcakit.Truncator):
    """taken by the built-in spcart plugin"""


class _DuplicatePlugin:
    @spcakit.hookimpl
    def spcakit_register_parts(self, register):
        register([_Extra, _Hard])


def test_duplicate_part_name_fails_that_plugin_only(monkeypatch):
    monkeypatch.delenv("SPCAKIT_LOAD_PLUGINS", raising=False)
    monkeypatch.delenv("SPCAKIT_DISABLE_PLUGINS", raising=False)
    session = PluginSession()
    session.add(core_plugin, "core", package="spcakit")
    session.load_entry_points()
    record = session.add(_DuplicatePlugin(), "dup")
    assert record.error is not None
    assert "DuplicateNameError" in record.error and "'hard'" in record.error and "'core'" in record.error
    assert session.records["dup"] is record and record in session.failures()
    hard = session.registry.part("truncator", "hard")
    assert hard.plugin == "core"
    assert hard.cls.__module__ == "spcakit.parts.truncators"
    assert "dup-extra" not in session.registry.part_names("truncator")
    assert session.manager.get_plugin("dup") is None


def test_duplicate_part_name_from_an_installed_plugin(tmp_path):
    path = _fake_distribution(tmp_path, "dup-plugin", "0.2", "dup", "dup_plugin_mod", DUPLICATE_SOURCE)
    plugins = _cli("plugins", "--json", pythonpath=path)
    assert plugins.returncode == 0, plugins.stderr
    records = {rec["name"]: rec for rec in json.loads(plugins.stdout)}
    assert records["spcart"]["error"] is None, records["spcart"]
    assert "DuplicateNameError" in (records["dup"]["error"] or ""), records["dup"]

    parts = _cli("parts", "--role", "truncator", "--json", pythonpath=path)
    assert parts.returncode == 0, parts.stderr
    assert "'dup'" in parts.stderr
    rows = {row["name"]: row for row in json.loads(parts.stdout)}
    assert rows["hard"]["plugin"] == "core"
    assert rows["hard"]["parameters"] == {"threshold": None, "form": "relative"}
    assert "dup-extra" not in rows


BAD_SIGNATURE_SOURCE = """
    import spcakit

    @spcakit.hookimpl
    def spcakit_register_parts(reg):  # the hookspec's argument is called `register`
        pass
"""


def test_plugin_with_a_wrong_hook_signature_is_reported(tmp_path):
    path = _fake_distribution(tmp_path, "badsig-plugin", "0.1", "badsig", "badsig_plugin_mod", BAD_SIGNATURE_SOURCE)
    proc = _cli("plugins", "--json", pythonpath=path)
    assert proc.returncode == 0, proc.stderr
    records = {rec["name"]: rec for rec in json.loads(proc.stdout)}
    assert records["badsig"]["error"]


def test_adding_a_taken_plugin_name_keeps_the_loaded_record(monkeypatch):
    monkeypatch.delenv("SPCAKIT_LOAD_PLUGINS", raising=False)
    monkeypatch.delenv("SPCAKIT_DISABLE_PLUGINS", raising=False)
    session = PluginSession()
    session.load_entry_points()
    record = session.add(_DuplicatePlugin(), "spcart")
    assert record.error is not None
    assert session.records["spcart"].error is None


# -- environment variables --------------------------------------------------------------------
def test_disable_plugins_hides_firm(firm_loaded):
    proc = _cli("parts", "--role", "truncator", "--json", env={"SPCAKIT_DISABLE_PLUGINS": "firm"})
    assert proc.returncode == 0, proc.stderr
    names = {row["name"] for row in json.loads(proc.stdout)}
    assert "firm" not in names
    assert {"hard", "soft"} <= names


def test_load_plugins_loads_only_those():
    proc = _cli("plugins", "--json", env={"SPCAKIT_LOAD_PLUGINS": "spcart"})
    assert proc.returncode == 0, proc.stderr
    records = json.loads(proc.stdout)
    assert [rec["name"] for rec in records] == ["core", "spcart"]  # core (the drivers) is always there
    assert all(rec["error"] is None for rec in records)


def test_load_plugins_empty_loads_none():
    proc = _cli("plugins", "--json", env={"SPCAKIT_LOAD_PLUGINS": ""})
    assert proc.returncode == 0, proc.stderr
    assert [rec["name"] for rec in json.loads(proc.stdout)] == ["core"]


# -- meta: hooks are implemented and documented ---------------------------------------------------
def _hookspec_names() -> set[str]:
    return {name for name, obj in vars(hookspecs).items() if callable(obj) and hasattr(obj, "spcakit_spec")}


def test_every_hookspec_is_called_and_implemented_by_a_builtin(monkeypatch):
    specs = _hookspec_names()
    assert specs == {"spcakit_register_parts", "spcakit_register_methods", "spcakit_register_metrics",
                     "spcakit_register_experiment_pieces"}
    assert specs == set(HOOK_NAMES), "PluginSession only calls the hooks in HOOK_NAMES"
    monkeypatch.delenv("SPCAKIT_LOAD_PLUGINS", raising=False)
    monkeypatch.delenv("SPCAKIT_DISABLE_PLUGINS", raising=False)
    session = PluginSession()
    session.add(core_plugin, "core", package="spcakit")
    session.load_entry_points()
    builtins = [rec for rec in session.records.values() if rec.package == "spcakit"]
    assert {rec.name for rec in builtins} >= {"core", "spcart"}
    for hook in sorted(specs):
        assert any(hook in rec.hooks for rec in builtins), f"no built-in plugin implements {hook}"


def test_every_hookspec_is_documented():
    doc = REPO / "docs" / "plugins.md"
    if not doc.exists():
        pytest.skip(f"{doc.relative_to(REPO)} does not exist")
    text = doc.read_text(encoding="utf-8")
    missing = sorted(hook for hook in _hookspec_names() if hook not in text)
    assert not missing, f"docs/plugins.md does not mention {', '.join(missing)}"


class _MisspelledHookPlugin:
    @spcakit.hookimpl
    def spcakit_register_part(self, register):  # not a spcakit hook: one letter short
        register(_Extra)


def test_a_misspelled_hook_is_reported_not_ignored():
    session = PluginSession()
    record = session.add(_MisspelledHookPlugin(), "misspelled")
    assert record.error is not None and "spcakit_register_part" in record.error
    assert "spcakit_register_parts" in record.error  # names the valid hooks
    assert "never-registered" not in session.registry.part_names("truncator")
