"""The typed registry: duplicates, unknown names, parameter checking, nested parts, plugins."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import attrs

from spcakit.core.errors import DuplicateNameError, InvalidParameterError, SpecError, UnknownNameError
from spcakit.core.hookspecs import hookimpl
from spcakit.core.plugins import PluginSession, get_registry, get_session
from spcakit.core.protocols import BASES, ROLES, part
from spcakit.core.registry import Registry
from spcakit.core.specs import MethodSpec, PartRef
from spcakit.parts.stoppers import AnyOf, MaxIterations, RelativeChange

#: The SPCArt paper's methods, registered by the spcart plugin from specs/methods/spcart/.
SPCART_METHODS = (
    "pca", "st", "spcart", "rsvd-gp", "rsvd-gpb", "tpower",
    "gpower-l0", "gpower-l1", "gpower-l0-block", "gpower-l1-block",
)  # fmt: skip

SETTINGS = settings(max_examples=30, deadline=None)
names = st.text(alphabet="abcdefghijklmnopqrstuvwxyz-0123456789", min_size=1, max_size=12)


def part_class(role: str, name: str) -> type:
    """A part class of ``role`` registered as ``name``, with parameters a = 1 and b = "x"."""

    cls = type(f"Part_{role}", (BASES[role],), {"__annotations__": {"a": "int", "b": "str"}, "a": 1, "b": "x",
                                                 "__doc__": f"test {role} {name}"})
    return part(name)(cls)


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
    registry.register_part(part_class(role, name), plugin=first)
    with pytest.raises(DuplicateNameError) as info:
        registry.register_part(part_class(role, name), plugin=second)
    message = str(info.value)
    assert repr(first) in message and repr(second) in message and repr(name) in message
    assert registry.part(role, name).plugin == first  # the first registration stands
    # the same name in another role is a different entry
    other = next(r for r in ROLES if r != role)
    registry.register_part(part_class(other, name), plugin=second)
    assert registry.part(other, name).plugin == second


def test_duplicate_methods_are_refused_naming_both_plugins():
    registry = Registry()
    registry.register_method(spec("m"), plugin="one")
    with pytest.raises(DuplicateNameError, match=r"'one'.*'two'"):
        registry.register_method(spec("m"), plugin="two")
    assert registry.method_plugin("m") == "one"


def test_only_part_classes_can_be_registered():
    registry = Registry()
    for bad in (lambda: None, object, attrs.frozen(type("Plain", (), {}))):
        with pytest.raises(TypeError, match="part classes made with @spcakit.part"):
            registry.register_part(bad)
    with pytest.raises(TypeError, match="must derive from one of spcakit's part base classes"):
        part("x")(type("NoRole", (), {}))
    with pytest.raises(TypeError, match="lam='c' is not one of its fields"):
        part("x", lam="c")(type("T", (BASES["truncator"],), {"__annotations__": {"a": "int"}, "a": 1}))


def test_the_summary_is_the_first_docstring_line():
    cls = part("doc")(type("T", (BASES["stopper"],), {"__doc__": "  first line.\n\n  more."}))
    assert cls.__part__.summary == "first line."
    assert part("doc", summary="given")(type("T", (BASES["stopper"],), {})).__part__.summary == "given"


class _Plugin:
    def __init__(self, part_names):
        self.part_names = part_names

    @hookimpl
    def spcakit_register_parts(self, register):
        register([part_class("truncator", name) for name in self.part_names])


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
        for call in (lambda: registry.part(name, "hard"), lambda: registry.parts(name)):
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
    registry.register_part(part_class("truncator", "t"))
    with pytest.raises(InvalidParameterError) as info:
        registry.build("truncator", {"name": "t", param: 1})
    message = str(info.value)
    assert repr(param) in message and "a, b" in message
    built = registry.build("truncator", {"name": "t", "a": 3})
    assert (built.a, built.b) == (3, "x")
    assert (registry.build("truncator", "t").a, registry.build("truncator", "t").b) == (1, "x")


def test_build_rejects_misspelt_parameters_of_builtin_parts():
    registry = get_registry()
    with pytest.raises(InvalidParameterError, match=r"'treshold'.*threshold, form"):
        registry.build("truncator", {"name": "hard", "treshold": 0.1})
    with pytest.raises(InvalidParameterError, match=r"'tolerance'.*tol"):
        registry.build("stopper", {"name": "relative-change", "tolerance": 0.1})


def test_a_missing_required_parameter_is_an_invalid_parameter_naming_the_part():
    registry = Registry()
    cls = part("needs")(type("Needs", (BASES["stopper"],), {"__annotations__": {"a": "int"}}))
    registry.register_part(cls)
    assert registry.part("stopper", "needs").parameters() == {"a": None}
    with pytest.raises(InvalidParameterError, match="stopper 'needs'"):
        registry.build("stopper", "needs")


def test_field_validators_speak_for_the_part():
    registry = get_registry()
    with pytest.raises(InvalidParameterError, match=r"max-iterations: n must be a positive integer; got 0"):
        registry.build("stopper", {"name": "max-iterations", "n": 0})
    with pytest.raises(InvalidParameterError, match=r"relative-change: tol must be a positive number; got -1"):
        registry.build("stopper", {"name": "relative-change", "tol": -1})
    assert registry.build("stopper", {"name": "max-iterations", "n": 5.0}).n == 5  # TOML/CLI floats that are integers


def test_part_info_lists_parameters_with_defaults():
    info = get_registry().part("truncator", "hard")
    assert info.parameters() == {"threshold": None, "form": "relative"}
    assert info.lam == "threshold" and info.plugin == "core"


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
    for cls in (MaxIterations, RelativeChange, AnyOf):
        registry.register_part(cls)
    inner = {"name": "any-of", "stoppers": [{"name": "relative-change", "tol": 0.5}]}
    built = registry.build("stopper", {"name": "any-of", "stoppers": [inner, {"name": "max-iterations", "n": 2}]})
    assert built == AnyOf((AnyOf((RelativeChange(0.5),)), MaxIterations(2)))
    echo = part("echo")(type("Echo", (BASES["stopper"],), {"__annotations__": {"values": "object"}, "values": ()}))
    registry.register_part(echo)
    assert registry.build("stopper", {"name": "echo", "values": [1, 2]}).values == [1, 2]


# -- specs: extends and default compositions -------------------------------------------------------
def test_extends_takes_the_parent_and_replaces_keys():
    registry = get_registry()
    tpower, rsvd = registry.method("tpower"), registry.method("rsvd-gp")
    assert tpower.truncator == PartRef("sparsity")
    assert (tpower.driver, tpower.initializer, tpower.updater, tpower.deflator, tpower.stopper, tpower.paper) == (
        rsvd.driver, rsvd.initializer, rsvd.updater, rsvd.deflator, rsvd.stopper, rsvd.paper)
    # the converged stopping rule is declared once, in rsvd-gp, and inherited through extends chains
    for name in ("tpower", "rsvd-gpb", "gpower-l0-block", "gpower-l0", "gpower-l1", "gpower-l1-block"):
        assert registry.method(name).stopper == rsvd.stopper
    assert registry.method("rsvd-gpb").deflator is None  # deflator = "none" removes an inherited deflator


def test_extends_refuses_cycles_and_unknown_parents():
    registry = Registry()
    registry.register_method({"name": "a", "extends": "b"})
    registry.register_method({"name": "b", "extends": "a"})
    registry.register_method({"name": "c", "extends": "nope"})
    with pytest.raises(SpecError, match="circle: a -> b -> a"):
        registry.method("a")
    with pytest.raises(SpecError, match="unknown method 'nope'"):
        registry.method("c")
    with pytest.raises(SpecError, match=r"unknown key\(s\) \['drvier'\]"):
        registry.register_method({"name": "d", "drvier": "block"})


def test_default_compositions_come_from_the_specs_that_declare_them():
    registry = get_registry()
    assert registry.default_composition("block").name == "spcart"
    assert registry.default_composition("deflation").name == "rsvd-gp"
    assert Registry().default_composition("block") is None
    # compose_default is not inherited through extends
    assert all(registry.default_composition(d).name not in ("tpower", "st") for d in ("block", "deflation"))


# -- unregistering -------------------------------------------------------------------------
@SETTINGS
@given(st.lists(st.tuples(st.sampled_from(ROLES), names, st.sampled_from(["p1", "p2", "p3"])), max_size=12))
def test_unregister_plugin_removes_exactly_its_entries(entries):
    registry = Registry()
    kept = {}
    for role, name, plugin in entries:
        if (role, name) in kept:
            continue
        registry.register_part(part_class(role, name), plugin=plugin)
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
            registry.register_part(part_class(role, name), plugin="p4")
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
    assert set(SPCART_METHODS) <= set(registry.method_names())
    assert {name: registry.method_plugin(name) for name in SPCART_METHODS} == dict.fromkeys(SPCART_METHODS, "spcart")
    drivers = {info.name: info.plugin for info in registry.parts("driver")}
    assert {name: drivers.get(name) for name in ("block", "deflation")} == {"block": "core", "deflation": "core"}
    # multistart (fspca) and best-of (deflation: the default method auto)
    assert {plugin for name, plugin in drivers.items() if name not in ("block", "deflation")} <= {"fspca", "deflation"}
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
        "    assert \"pip install -e '.[test]'\" in str(exc), exc\n"
        "else:\n"
        "    raise SystemExit('strategies imported without hypothesis')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
