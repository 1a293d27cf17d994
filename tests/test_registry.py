"""The typed registry: duplicates, unknown names, parameter checking, nested parts, plugins."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spcakit.errors import DuplicateNameError, InvalidParameterError, UnknownNameError
from spcakit.hookspecs import hookimpl
from spcakit.plugins import PluginSession, get_registry, get_session
from spcakit.protocols import ROLES
from spcakit.registry import Registry
from spcakit.specs import MethodSpec, PartRef
from spcakit_spcart import METHODS
from spcakit_spcart.stoppers import AnyOf, MaxIterations, RelativeChange, make_any_of, make_max_iterations, make_relative_change

SETTINGS = settings(max_examples=30, deadline=None)
names = st.text(alphabet="abcdefghijklmnopqrstuvwxyz-0123456789", min_size=1, max_size=12)


def factory(a: int = 1, b: str = "x"):
    return (a, b)


def spec(name: str) -> MethodSpec:
    return MethodSpec(
        name=name, driver="block", initializer=PartRef("pca"), updater=PartRef("rotation"),
        truncator=PartRef("hard"), stopper=PartRef("max-iterations"),
    )


# -- duplicates ----------------------------------------------------------------------------
@SETTINGS
@given(st.sampled_from(ROLES), names, names, names)
def test_a_second_registration_is_refused_naming_both_plugins(role, name, first, second):
    registry = Registry()
    registry.register_part(role, name, factory, plugin=first)
    with pytest.raises(DuplicateNameError) as info:
        registry.register_part(role, name, factory, plugin=second)
    message = str(info.value)
    assert repr(first) in message and repr(second) in message and repr(name) in message
    assert registry.part(role, name).plugin == first  # the first registration stands
    # the same name in another role is a different entry
    other = next(r for r in ROLES if r != role)
    registry.register_part(other, name, factory, plugin=second)
    assert registry.part(other, name).plugin == second


def test_duplicate_methods_are_refused_naming_both_plugins():
    registry = Registry()
    registry.register_method(spec("m"), plugin="one")
    with pytest.raises(DuplicateNameError, match=r"'one'.*'two'"):
        registry.register_method(spec("m"), plugin="two")
    assert registry.methods()[0].plugin == "one"


class _Plugin:
    def __init__(self, part_names):
        self.part_names = part_names

    @hookimpl
    def spcakit_register_parts(self, register):
        for name in self.part_names:
            register("truncator", name, factory)


def test_a_plugin_that_collides_is_recorded_with_the_error_and_leaves_nothing_behind():
    session = PluginSession()
    assert session.add(_Plugin(["shared"]), "first").error is None
    record = session.add(_Plugin(["only-second", "shared"]), "second")
    assert record.error is not None and "'first'" in record.error and "'second'" in record.error
    assert session.failures() == [record]
    assert session.registry.part_names("truncator") == ["shared"]  # 'only-second' rolled back
    assert session.registry.part("truncator", "shared").plugin == "first"


# -- unknown names ----------------------------------------------------------------------------
@SETTINGS
@given(st.sampled_from(["initializer", "updater", "truncator", "deflator", "stopper", "driver"]), names)
def test_unknown_part_names_list_the_valid_ones(role, name):
    registry = get_registry()
    valid = registry.part_names(role)
    if name in valid:
        assert registry.part(role, name).name == name
        return
    with pytest.raises(UnknownNameError) as info:
        registry.part(role, name)
    message = str(info.value)
    assert repr(name) in message
    assert all(v in message for v in valid)
    assert ", ".join(sorted(valid)) in message
    with pytest.raises(UnknownNameError):
        registry.build(role, name)


@SETTINGS
@given(names)
def test_unknown_methods_and_roles_list_the_valid_ones(name):
    registry = get_registry()
    if name not in registry.method_names():
        with pytest.raises(UnknownNameError) as info:
            registry.method(name)
        assert all(m in str(info.value) for m in registry.method_names())
    if name not in ROLES:
        for call in (lambda: registry.part(name, "hard"), lambda: registry.parts(name),
                     lambda: Registry().register_part(name, "x", factory)):
            with pytest.raises(UnknownNameError) as info:
                call()
            assert all(role in str(info.value) for role in ROLES)


def test_unknown_name_message_is_not_quoted_like_a_key_error():
    with pytest.raises(UnknownNameError) as info:
        Registry().part("truncator", "nope")
    assert str(info.value).startswith("unknown truncator 'nope'")
    assert "(none)" in str(info.value)


# -- building and parameters --------------------------------------------------------------------
@SETTINGS
@given(names.filter(lambda n: n not in ("a", "b")))
def test_build_rejects_unknown_parameters_listing_the_valid_ones(param):
    registry = Registry()
    registry.register_part("truncator", "t", factory)
    with pytest.raises(InvalidParameterError) as info:
        registry.build("truncator", {"name": "t", param: 1})
    message = str(info.value)
    assert repr(param) in message and "a, b" in message
    assert registry.build("truncator", {"name": "t", "a": 3}) == (3, "x")
    assert registry.build("truncator", "t") == (1, "x")


def test_build_rejects_misspelt_parameters_of_builtin_parts():
    registry = get_registry()
    with pytest.raises(InvalidParameterError, match=r"'treshold'.*threshold, form"):
        registry.build("truncator", {"name": "hard", "treshold": 0.1})
    with pytest.raises(InvalidParameterError, match=r"'tolerance'.*tol"):
        registry.build("stopper", {"name": "relative-change", "tolerance": 0.1})


def test_factories_with_var_keywords_accept_any_parameter_and_bad_calls_are_invalid_parameters():
    registry = Registry()
    registry.register_part("stopper", "kw", lambda **kw: kw)
    assert registry.build("stopper", {"name": "kw", "anything": 1}) == {"anything": 1}

    def needs(a):
        return a

    registry.register_part("stopper", "needs", needs)
    assert registry.part("stopper", "needs").parameters() == {"a": None}
    with pytest.raises(InvalidParameterError, match="stopper 'needs'"):
        registry.build("stopper", "needs")


def test_part_info_lists_parameters_with_defaults():
    info = get_registry().part("truncator", "hard")
    assert info.parameters() == {"threshold": None, "form": "relative"}
    assert info.lam == "threshold" and info.plugin == "spcart"


@SETTINGS
@given(st.integers(1, 500), st.floats(1e-6, 1.0), st.booleans())
def test_nested_part_tables_are_built(n, tol, as_refs):
    items = [{"name": "max-iterations", "n": n}, {"name": "relative-change", "tol": tol}]
    if as_refs:
        items = [PartRef(i["name"], {k: v for k, v in i.items() if k != "name"}) for i in items]
    built = get_registry().build("stopper", {"name": "any-of", "stoppers": items})
    assert built == AnyOf((MaxIterations(n), RelativeChange(tol)))
    # nested tables are checked too
    with pytest.raises(InvalidParameterError, match="'m'"):
        get_registry().build("stopper", {"name": "any-of", "stoppers": [{"name": "max-iterations", "m": n}]})


def test_nested_tables_can_nest_again_and_plain_values_stay_plain():
    registry = Registry()
    registry.register_part("stopper", "max-iterations", make_max_iterations)
    registry.register_part("stopper", "relative-change", make_relative_change)
    registry.register_part("stopper", "any-of", make_any_of)
    inner = {"name": "any-of", "stoppers": [{"name": "relative-change", "tol": 0.5}]}
    built = registry.build("stopper", {"name": "any-of", "stoppers": [inner, {"name": "max-iterations", "n": 2}]})
    assert built == AnyOf((AnyOf((RelativeChange(0.5),)), MaxIterations(2)))
    registry.register_part("stopper", "echo", lambda values=(): values)
    assert registry.build("stopper", {"name": "echo", "values": [1, 2]}) == [1, 2]


# -- unregistering -------------------------------------------------------------------------
@SETTINGS
@given(st.lists(st.tuples(st.sampled_from(ROLES), names, st.sampled_from(["p1", "p2", "p3"])), max_size=12))
def test_unregister_plugin_removes_exactly_its_entries(entries):
    registry = Registry()
    kept = {}
    for role, name, plugin in entries:
        if (role, name) in kept:
            continue
        registry.register_part(role, name, factory, plugin=plugin)
        kept[role, name] = plugin
    registry.register_method(spec("m-p1"), plugin="p1")
    registry.register_method(spec("m-p2"), plugin="p2")
    registry.unregister_plugin("p1")
    for role in ROLES:
        expected = sorted(name for (rl, name), plugin in kept.items() if rl == role and plugin != "p1")
        assert registry.part_names(role) == expected
    assert registry.method_names() == ["m-p2"]
    # names freed by the removal can be registered again, by anyone
    for (role, name), plugin in kept.items():
        if plugin == "p1":
            registry.register_part(role, name, factory, plugin="p4")
            assert registry.part(role, name).plugin == "p4"


def test_session_remove_unregisters_a_plugin_everywhere():
    session = PluginSession()
    session.add(_Plugin(["a1", "a2"]), "alpha")
    session.add(_Plugin(["b1"]), "beta")
    session.remove("alpha")
    assert session.registry.part_names("truncator") == ["b1"]
    assert "alpha" not in session.records and session.manager.get_plugin("alpha") is None


def test_builtin_plugins_register_the_paper_methods_and_drivers():
    registry = get_registry()
    assert set(METHODS) <= set(registry.method_names())
    assert {m.spec.name: m.plugin for m in registry.methods() if m.spec.name in METHODS} == dict.fromkeys(METHODS, "spcart")
    drivers = {info.name: info.plugin for info in registry.parts("driver")}
    assert {name: drivers.get(name) for name in ("block", "deflation")} == {"block": "core", "deflation": "core"}
    assert {plugin for name, plugin in drivers.items() if name not in ("block", "deflation")} <= {"fspca"}  # multistart
    assert not [r for r in get_session().failures() if r.name in ("spcart", "core")]


def test_core_and_contracts_import_without_hypothesis():
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['hypothesis'] = None\n"
        "import spcakit, spcakit.testing, spcakit.testing.contracts\n"
        "try:\n"
        "    spcakit.testing.strategies\n"
        "except ImportError as exc:\n"
        "    assert 'spcakit[test]' in str(exc), exc\n"
        "else:\n"
        "    raise SystemExit('strategies imported without hypothesis')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
