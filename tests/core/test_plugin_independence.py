"""Each built-in plugin stands alone: with any one disabled, every method of the others runs.

The generic parts (starts, power step, truncations, Hotelling's and projection deflation, stoppers)
are the core's, so a paper's plugin never depends on another being enabled. A spec that names a part
nobody registered is set aside at load time, with its reason, and costs that method only.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

import spcakit
from spcakit.core.errors import UnknownNameError
from spcakit.core.plugins import PluginSession, get_session
from spcakit.parts import plugin as core_plugin

BUILT_IN = ("spcart", "deflation", "subspace", "encoders", "fspca")

#: Runs every registered method on Pitprops (r = 2) and prints what happened, as JSON.
PROBE = textwrap.dedent("""
    import json, spcakit
    from spcakit.core.plugins import get_registry, get_session
    from spcakit.testing import EXAMPLE_LAMBDAS as lam
    registry = get_registry()
    out = {"refused": get_session().refused(), "runs": {}}
    for name in registry.method_names():
        try:
            result = spcakit.fit("builtin:pitprops", name, r=2, lam=lam.get(name))
            out["runs"][name] = [registry.method_plugin(name), round(result.metrics["cpev"], 6)]
        except Exception as exc:
            out["runs"][name] = [registry.method_plugin(name), f"{type(exc).__name__}: {exc}"]
    print(json.dumps(out))
""")


def _probe(disabled: str) -> dict:
    env = {**os.environ, "SPCAKIT_DISABLE_PLUGINS": disabled}
    env.pop("SPCAKIT_LOAD_PLUGINS", None)
    done = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def everything() -> dict:
    return _probe("")


@pytest.mark.parametrize("disabled", BUILT_IN)
def test_with_one_plugin_disabled_every_method_of_the_others_runs(disabled, everything):
    probe = _probe(disabled)
    assert probe["refused"] == [], probe["refused"]
    expected = {name for name, (plugin, _) in everything["runs"].items() if plugin != disabled}
    assert set(probe["runs"]) == expected
    for name, (plugin, outcome) in probe["runs"].items():
        assert isinstance(outcome, float), f"{name} ({plugin}) with {disabled} disabled: {outcome}"
        if name != "auto":  # auto runs the members that are there (below); every other method is unchanged
            assert outcome == everything["runs"][name][1], name


def test_auto_runs_the_members_that_are_registered():
    probe = _probe("spcart")
    assert isinstance(probe["runs"]["auto"][1], float)
    result_cli = subprocess.run(
        [sys.executable, "-m", "spcakit", "run", "auto", "-r", "2", "--json"],
        env={**os.environ, "SPCAKIT_DISABLE_PLUGINS": "spcart"}, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result_cli.returncode == 0, result_cli.stderr
    assert "not registered, skipped: tpower, spcart" in json.loads(result_cli.stdout)["stopping_reason"]


def test_methods_lists_with_every_built_in_plugin_disabled_but_the_core():
    env = {**os.environ, "SPCAKIT_LOAD_PLUGINS": ""}
    done = subprocess.run([sys.executable, "-m", "spcakit", "methods"], env=env, capture_output=True, text=True,
                          timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr


class _Broken:
    """A plugin whose specs name a part nobody registers, and extend a method that is not there."""

    @spcakit.hookimpl
    def spcakit_register_methods(self, register):
        register({"name": "broken-part", "summary": "names a missing truncator", "driver": "block",
                  "initializer": "pca", "updater": "power", "truncator": "no-such-truncator",
                  "stopper": "max-iterations"})
        register({"name": "broken-parent", "summary": "extends a missing method", "extends": "no-such-method"})
        register({"name": "child-of-spcart", "summary": "extends spcart", "extends": "spcart",
                  "truncator": "energy"})


def test_a_spec_naming_a_missing_part_is_set_aside_and_the_others_keep_working(monkeypatch):
    monkeypatch.delenv("SPCAKIT_LOAD_PLUGINS", raising=False)
    monkeypatch.delenv("SPCAKIT_DISABLE_PLUGINS", raising=False)
    session = PluginSession()
    session.add(core_plugin, "core", package="spcakit")
    session.load_entry_points()
    before = set(session.registry.method_names())
    record = session.add(_Broken(), "broken")
    assert record.error is None
    names = set(session.registry.method_names())
    assert names == before | {"child-of-spcart"}  # listed: those that build; the others set aside
    assert [m.spec.name for m in session.registry.methods()]  # listing works for everyone
    notes = dict(note.split(": ", 1) for _, note in session.refused())
    assert set(notes) == {"broken-part", "broken-parent"}
    assert "no-such-truncator" in notes["broken-part"] and "no-such-method" in notes["broken-parent"]
    with pytest.raises(UnknownNameError, match="'broken-part' .*unavailable.*no-such-truncator"):
        session.registry.method("broken-part")
    assert session.registry.method("child-of-spcart").truncator.name == "energy"


def test_a_method_extending_a_disabled_plugins_method_is_set_aside_not_fatal(monkeypatch):
    monkeypatch.delenv("SPCAKIT_LOAD_PLUGINS", raising=False)
    monkeypatch.delenv("SPCAKIT_DISABLE_PLUGINS", raising=False)
    session = PluginSession()
    session.add(core_plugin, "core", package="spcakit")
    session.add(_Broken(), "broken")  # before spcart: its child's parent is not there yet
    session.loaded = True
    session.check_methods()
    assert "child-of-spcart" not in session.registry.method_names()
    assert any(note.startswith("child-of-spcart: ") for _, note in session.refused())
    session.load_entry_points()  # spcart comes: the child is restored
    assert "child-of-spcart" in session.registry.method_names()


def test_the_process_session_sets_nothing_aside():
    assert get_session().refused() == []
    assert spcakit.get_registry().method("greedy").initializer.name == "max-diagonal"


@pytest.mark.parametrize("variable", ["SPCAKIT_DISABLE_PLUGINS", "SPCAKIT_LOAD_PLUGINS"])
def test_a_plugin_name_in_the_environment_that_no_plugin_has_is_said_with_the_closest(monkeypatch, variable):
    monkeypatch.delenv("SPCAKIT_LOAD_PLUGINS", raising=False)
    monkeypatch.delenv("SPCAKIT_DISABLE_PLUGINS", raising=False)
    monkeypatch.setenv(variable, "spcrat")
    session = PluginSession()
    session.load_entry_points()
    assert len(session.environment_notes) == 1
    note = session.environment_notes[0]
    assert note.startswith(f"{variable} names 'spcrat', which is no installed plugin (did you mean 'spcart'?)")
    monkeypatch.setenv(variable, "spcart,deflation")  # names that are installed: nothing to say
    session = PluginSession()
    session.load_entry_points()
    assert session.environment_notes == ()


@pytest.mark.parametrize("variable", ["SPCAKIT_DISABLE_PLUGINS", "SPCAKIT_LOAD_PLUGINS"])
def test_a_plugin_name_no_plugin_has_is_a_python_warning_at_the_users_line(variable, tmp_path):
    # a fresh interpreter: the process-wide session loads once; its warning points at the caller's code
    import os
    import subprocess
    import sys

    script = tmp_path / "user.py"
    script.write_text("import spcakit\nspcakit.fit('builtin:pitprops', 'pca', r=1)\n")
    env = {**os.environ, variable: "spcrat"}
    env.pop("SPCAKIT_LOAD_PLUGINS" if variable == "SPCAKIT_DISABLE_PLUGINS" else "SPCAKIT_DISABLE_PLUGINS", None)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, check=False)
    assert f"user.py:2: UserWarning: {variable} names 'spcrat', which is no installed plugin (did you mean 'spcart'?)" in done.stderr
