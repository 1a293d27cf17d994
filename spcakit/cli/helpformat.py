"""The layout of the command line's help screens: plain text, as git's, ruff's and click's own read.

typer's rich panels (its default when rich is installed) print a value placeholder even for a flag
(``--json <bool>``), join an option's long names with commas (``--r,--n-components``), show a required
argument as ``{method} <str>``, and keep the line breaks of a docstring's later paragraphs, breaking sentences
mid-line. The app is therefore laid out by click's plain formatter (``rich_markup_mode=None``) through the
classes here:

* :class:`App`, the ``typer.Typer`` of :data:`spcakit.cli.common.app`, gives every command :class:`Command`
  (and itself :class:`Group`), so that a command added later is laid out alike;
* :class:`Command` names each argument by its metavar, as click does (``METHOD``, ``[METHOD]``, ``JSON...``),
  in the usage line and the Arguments list, never by typer's ``{method} <str>``;
* both wrap help texts without breaking a word at its hyphen, so that an option named in a help text
  (``--save-model``) or a hyphenated word is never split over two lines;
* :data:`LEGACY_SPELLINGS`: option names that the command line used to accept but no longer shows
  (``--r``, ``--k``, ``--target-k``) are still read, as the names that replaced them, so scripts keep working.

Every option that takes a value declares a ``metavar`` naming it (``-k K``, ``--data SOURCE``, ``--missing
[auto|em|error]``); ``tests/frontends/test_cli_help.py`` renders every help screen and checks this.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import typer
from typer.core import TyperCommand, TyperGroup

#: Option names the command line read before its help screens were tidied, and the names that replaced them:
#: still read (as the new name), no longer shown.
LEGACY_SPELLINGS = {"--r": "--n-components", "--k": "-k", "--target-k": "-k"}

#: Stands for a hyphen while help text is wrapped: not a hyphen, so the wrapper never breaks a line there.
_HYPHEN = "\ue000"

_BaseContext: Any = TyperCommand.context_class
_BaseFormatter: Any = _BaseContext.formatter_class


class HelpFormatter(_BaseFormatter):  # type: ignore[misc]
    """click's formatter, except that no line is broken at a hyphen (``--save-`` / ``model``)."""

    def write_text(self, text: str) -> None:
        with self._hyphens_kept():
            super().write_text(text.replace("-", _HYPHEN))

    def write_dl(self, rows: Sequence[tuple[str, str]], *args: Any, **kwargs: Any) -> None:
        with self._hyphens_kept():
            super().write_dl([(first, second.replace("-", _HYPHEN)) for first, second in rows], *args, **kwargs)

    @contextmanager
    def _hyphens_kept(self) -> Iterator[None]:
        start = len(self.buffer)
        try:
            yield
        finally:
            self.buffer[start:] = [piece.replace(_HYPHEN, "-") for piece in self.buffer[start:]]


class HelpContext(_BaseContext):  # type: ignore[misc]
    formatter_class = HelpFormatter


def argument_name(param: Any) -> str:
    """An argument as the help shows it: its metavar (else its name in capitals), ``...`` when it takes several."""
    name = param.metavar or param.name.upper()
    return f"{name}..." if param.nargs != 1 else name


def _usage_piece(param: Any) -> str:
    name = param.metavar or param.name.upper()
    shown = name if param.required else f"[{name}]"
    return f"{shown}..." if param.nargs != 1 else shown


class Command(TyperCommand):
    """A command whose help names its arguments as click does and whose options keep their legacy spellings."""

    context_class = HelpContext

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if param.param_type_name == "argument":
                pieces.append(_usage_piece(param))
            else:
                pieces.extend(param.get_usage_pieces(ctx))
        return pieces

    def format_options(self, ctx: Any, formatter: Any) -> None:
        arguments = [(argument_name(param), param.help or "") for param in self.get_params(ctx)
                     if param.param_type_name == "argument" and not getattr(param, "hidden", False)]  # fmt: skip
        options = [record for param in self.get_params(ctx) if param.param_type_name == "option"
                   for record in [param.get_help_record(ctx)] if record is not None]  # fmt: skip
        for title, rows in (("Arguments", arguments), ("Options", options)):
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        return super().parse_args(ctx, self.current_spellings(args))

    def current_spellings(self, args: list[str]) -> list[str]:
        """``args`` with each legacy option name (:data:`LEGACY_SPELLINGS`) replaced by the one this command
        declares now (``--r 3`` is ``--n-components 3``, ``--k=5`` is ``-k 5``); option values and whatever
        follows ``--`` are left as they are."""
        options = [param for param in self.params if param.param_type_name == "option"]
        names = {name for param in options for name in param.opts}
        takes_value = {name for param in options if not param.is_flag and not param.count for name in param.opts}
        current: list[str] = []
        value_next = False
        for position, arg in enumerate(args):
            if value_next:
                current.append(arg)
                value_next = False
                continue
            if arg == "--":
                current.extend(args[position:])
                break
            name, equals, value = arg.partition("=")
            new = LEGACY_SPELLINGS.get(name)
            if new is not None and new in names and name not in names:
                current.extend([new, value] if equals else [new])
                value_next = not equals and new in takes_value
                continue
            current.append(arg)
            value_next = arg in takes_value
        return current


class Group(TyperGroup):
    """The ``spcakit`` group: its help wrapped as the commands' is."""

    context_class = HelpContext


class App(typer.Typer):
    """``typer.Typer`` laid out in plain text (``rich_markup_mode=None``), its commands :class:`Command`."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("cls", Group)
        kwargs.setdefault("rich_markup_mode", None)
        super().__init__(**kwargs)

    def command(
        self, name: str | None = None, *, cls: type[TyperCommand] | None = None, **kwargs: Any
    ) -> Callable[[Any], Any]:
        return super().command(name, cls=cls or Command, **kwargs)
