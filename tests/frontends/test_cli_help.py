"""Every help screen of the ``spcakit`` command line reads like a good command line's (git's, ruff's, click's).

The screens are found from the app object itself (``spcakit --help`` and ``spcakit COMMAND --help`` for every
command and subcommand), so a command added later is checked too. Each is rendered at 80 and 100 columns, in
plain text, and must: exit 0; name every option's value (``-k K``, ``--data SOURCE``, ``--missing
[auto|em|error]``), never with typer's or click's type placeholders (``<bool>``, ``<str>``, ``TEXT``,
``INTEGER``); show no value after a flag; give each option the names a user types, each once, none a double
dash before a single letter (``--r``); name each argument in capitals (``METHOD``), never ``{method}``; fit
the width; show each help text whole (never cut by an explicit line break, or at a hyphen); and list each
command on ``spcakit --help`` with a one-line summary.
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from spcakit.cli import app
from spcakit.cli.helpformat import LEGACY_SPELLINGS, Command

WIDTHS = (80, 100)
#: Placeholders typer (``<bool>``, ``<list[str]>``) and click (``TEXT``, ``INTEGER``) print for a value they
#: know only by its type.
TYPE_PLACEHOLDER = re.compile(r"<[a-z][\w\[\], |]*>|\b(?:TEXT|INTEGER|FLOAT|BOOLEAN|FILENAME|DIRECTORY)\b")
#: An option name of a double dash and one letter (``--r``), anywhere on a screen.
DOUBLE_DASH_LETTER = re.compile(r"(?<![\w-])--\w(?![\w-])")
#: What an option is named: one dash and a letter, or two dashes and words of two or more characters in all.
OPTION_NAME = re.compile(r"-[A-Za-z]|--(?=[a-z0-9-]{2})[a-z0-9]+(?:-[a-z0-9]+)*")


def _commands(command: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    yield path, command
    for name, sub in getattr(command, "commands", {}).items():
        if not sub.hidden:
            yield from _commands(sub, (*path, name))


ROOT = typer.main.get_command(app)
COMMANDS = list(_commands(ROOT))
SCREENS = [(path, command, width) for path, command in COMMANDS for width in WIDTHS]


def render(path: tuple[str, ...], width: int) -> Any:
    result = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": str(width), "TERM": "dumb", "NO_COLOR": "1"},
                                terminal_width=width)  # fmt: skip
    assert result.exit_code == 0, f"`spcakit {' '.join(path)} --help` exits {result.exit_code}:\n{result.output}"
    return result


def whole(text: str) -> str:
    """``text`` with every run of whitespace one space: how a help text reads once wrapped."""
    return " ".join(text.split())


def params(command: Any, kind: str) -> list[Any]:
    return [p for p in command.params if p.param_type_name == kind and not getattr(p, "hidden", False)]


def test_the_commands_are_found() -> None:
    names = {" ".join(path) for path, _ in COMMANDS}
    assert {"", "run", "compose", "transform", "path", "cv", "stability", "methods", "parts", "plugins",
            "reproduce", "plot"} <= names  # fmt: skip


SCREEN_IDS = [f"{' '.join(path) or 'spcakit'}@{width}" for path, _, width in SCREENS]
COMMAND_IDS = [" ".join(path) or "spcakit" for path, _ in COMMANDS]


@pytest.mark.parametrize(("path", "command", "width"), SCREENS, ids=SCREEN_IDS)
def test_help_screen(path: tuple[str, ...], command: Any, width: int) -> None:
    text = render(path, width).stdout
    where = f"`spcakit {' '.join(path)} --help` at {width} columns"
    lines = text.splitlines()
    assert lines and lines[0].startswith(f"Usage: spcakit {' '.join(path)}".rstrip()), where

    placeholder = TYPE_PLACEHOLDER.search(text)
    assert placeholder is None, f"{where}: a type placeholder {placeholder.group()!r} instead of a named value"
    single = DOUBLE_DASH_LETTER.search(text)
    assert single is None, f"{where}: an option name {single.group()!r} (a double dash before one letter)"
    assert "{" not in lines[0] and "}" not in lines[0], f"{where}: braces in the usage line {lines[0]!r}"
    too_long = [line for line in lines if len(line) > width]
    assert not too_long, f"{where}: lines wider than the screen:\n" + "\n".join(too_long)

    flat = whole(text)
    for paragraph in inspect.cleandoc(command.help or "").split("\n\n"):
        assert whole(paragraph) in flat, f"{where}: the command's help is not shown whole: {paragraph!r}"
    for param in params(command, "option") + params(command, "argument"):
        assert param.help, f"{where}: {param.name} has no help text"
        assert param.help[0].isupper() and param.help.rstrip().endswith("."), (
            f"{where}: the help of {param.name} is not a sentence (a capital first, a full stop last): {param.help!r}"
        )
        assert whole(param.help) in flat, f"{where}: the help of {param.name} is cut or changed: {param.help!r}"


@pytest.mark.parametrize(("path", "command"), COMMANDS, ids=COMMAND_IDS)
def test_options_name_their_values(path: tuple[str, ...], command: Any) -> None:
    """Each option's names are what a user types, each once; an option that takes a value names it, a flag
    shows none, and the screen shows them so: ``-r, --n-components N``, ``--json``."""
    text = render(path, 100).stdout
    seen: set[str] = set()
    for param in params(command, "option"):
        names = [*param.opts, *param.secondary_opts]
        assert not seen & set(names), f"{path}: {sorted(seen & set(names))} declared twice"
        seen |= set(names)
        for name in names:
            assert OPTION_NAME.fullmatch(name), f"{path}: odd option name {name!r}"
            assert name not in LEGACY_SPELLINGS, f"{path}: {name} is a legacy spelling, read but not shown"
        shown = ", ".join(sorted(param.opts, key=len))
        if param.is_flag or param.count:
            assert param.metavar is None, f"{path}: the flag {shown} names a value ({param.metavar})"
            secondary = f" / {', '.join(param.secondary_opts)}" if param.secondary_opts else ""
            bare = re.search(rf"^  {re.escape(shown + secondary)}(?:  |$)", text, re.MULTILINE)
            assert bare, f"{path}: {shown} is not shown bare"
        else:
            assert param.metavar, f"{path}: {shown} takes a value but does not name it (give it a metavar)"
            assert re.search(rf"^  {re.escape(shown)} {re.escape(param.metavar)}(?:  |$)", text, re.MULTILINE), (
                f"{path}: {shown} {param.metavar} is not shown so:\n{text}"
            )


@pytest.mark.parametrize(("path", "command"), COMMANDS, ids=COMMAND_IDS)
def test_arguments_are_named_in_capitals(path: tuple[str, ...], command: Any) -> None:
    text = render(path, 100).stdout
    usage = text.splitlines()[0]
    for param in params(command, "argument"):
        name = param.metavar
        assert name and name.isupper(), f"{path}: the argument {param.name} is shown as {name!r}, not in capitals"
        piece = name if param.required else f"[{name}]"
        assert f" {piece}{'...' if param.nargs != 1 else ''}" in usage, f"{path}: {piece} not in {usage!r}"
        listed = re.search(rf"^  {re.escape(name)}(?:\.\.\.)?  ", text, re.MULTILINE)
        assert listed, f"{path}: {name} is not listed under Arguments"


def test_the_command_list_has_one_line_per_command() -> None:
    for width in WIDTHS:
        text = render((), width).stdout
        listed = text.split("\nCommands:\n", 1)[1].rstrip("\n").splitlines()
        commands = [(name, command) for name, command in ROOT.commands.items() if not command.hidden]
        assert len(listed) == len(commands), f"at {width} columns a summary takes more than one line:\n{text}"
        for line, (name, command) in zip(listed, commands):
            summary = whole(inspect.cleandoc(command.help or "").split("\n\n")[0])
            assert summary.endswith(".") and summary.count(". ") == 0, f"{name}: the summary is not one sentence"
            assert line.split() == [name, *summary.split()], f"at {width} columns, {name!r} is listed as {line!r}"


# -- the legacy spellings ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(("args", "current"), [
    (["--r", "3"], ["--n-components", "3"]),
    (["--r=3"], ["--n-components", "3"]),
    (["--k", "4", "--json"], ["-k", "4", "--json"]),
    (["--target-k=4"], ["-k", "4"]),
    (["--data", "--k", "--k", "2"], ["--data", "--k", "-k", "2"]),  # an option's value is left as it is
    (["-k", "--r"], ["-k", "--r"]),
    (["--", "--r"], ["--", "--r"]),
])  # fmt: skip
def test_legacy_spellings_are_read_as_the_current_names(args: list[str], current: list[str]) -> None:
    run = ROOT.commands["run"]
    assert isinstance(run, Command)
    assert run.current_spellings(args) == current


def test_legacy_spellings_still_run(cli) -> None:
    legacy = cli.invoke("run", "spcart", "--r", "3", "--target-k", "4", "--json")
    current = cli.invoke("run", "spcart", "-r", "3", "-k", "4", "--json")
    assert legacy.exit_code == current.exit_code == 0, legacy.output
    old, new = (json.loads(result.stdout) for result in (legacy, current))
    assert old["loadings"] == new["loadings"] and old["r"] == 3
    path = cli.invoke("path", "spcart", "--k", "1:3", "--csv")
    assert path.exit_code == 0 and len(path.stdout.splitlines()) == 4, path.output


def test_spcakit_alone_prints_its_help(cli) -> None:
    ran = cli.main()
    assert ran.code == 2 and ran.out.startswith("Usage: spcakit [OPTIONS] COMMAND [ARGS]...\n"), ran.output
    assert "\nCommands:\n" in ran.out and ran.err == ""
