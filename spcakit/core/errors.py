"""Exceptions that speak to people.

Every error spcakit raises for bad input derives from :class:`SpcakitError`
and says what was wrong and what would be valid. The CLI turns them into a
one-line message and exit code 2; library users can catch them by class.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any


class SpcakitError(Exception):
    """Base class: a problem with what the user asked for."""


class InvalidDataError(SpcakitError, ValueError):
    """The data (matrix or covariance) cannot be used as given."""


class InvalidParameterError(SpcakitError, ValueError):
    """A parameter is outside its valid range or of the wrong kind."""


class UnknownNameError(SpcakitError, KeyError):
    """A method, part or role name that is not registered."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class DuplicateNameError(SpcakitError):
    """A plugin tried to register a name that is already taken."""


class ZeroLoadingError(SpcakitError, ArithmeticError):
    """A truncation removed every entry of a loading vector."""


class ConstantColumnWarning(UserWarning):
    """Columns with zero variance were left out of the fit: they get zero loadings in every component.

    :func:`spcakit.fit` (and what calls it: :class:`spcakit.SparsePCA`,
    :func:`spcakit.path`, :func:`spcakit.cross_validate`) issues it, naming the
    columns, and also when it lowers ``k`` to the number of columns that vary;
    the same text is in ``Result.warnings``. Silence it with
    ``warnings.simplefilter("ignore", spcakit.ConstantColumnWarning)``.
    """


class MissingValuesError(InvalidDataError):
    """The data hold missing values (NaN entries, empty or ``NA`` cells of a CSV file) and nothing else amiss.

    :func:`spcakit.fit` catches it to impute the missing entries (``missing="auto"`` or ``"em"``:
    :mod:`spcakit.workflows.imputation`); with ``missing="error"``, and wherever no imputation applies, it reaches the
    user like any :class:`InvalidDataError` (which it is). Infinite entries raise a plain
    :class:`InvalidDataError`: they are never taken for missing.
    """


class MissingValueWarning(UserWarning):
    """The data hold missing values (NaN) and spcakit imputed them (``missing="auto"``, the default).

    :func:`spcakit.fit` and :class:`spcakit.SparsePCA` issue it, saying the fraction of entries missing and
    the model used (EM on the low-rank sparse model, :mod:`spcakit.workflows.imputation`); also for columns with no
    observed value (they get zero loadings). ``missing="em"`` imputes without this warning (but still warns
    about such columns); ``missing="error"`` refuses NaN.
    """


class SpecError(SpcakitError, ValueError):
    """A TOML method or experiment spec is malformed."""


class PartFailure(RuntimeError):
    """A part raised an unexpected exception (a bug, not bad input): names the part and its plugin.

    The original exception is chained as ``__cause__``.
    """

    def __init__(self, role: str, name: str, plugin: str, error: BaseException) -> None:
        self.role, self.name, self.plugin = role, name, plugin
        super().__init__(
            f"the {role} {name!r} (plugin {plugin!r}) failed: {type(error).__name__}: {error}; "
            f"this is a bug in that part - please report it to the authors of plugin {plugin!r}"
        )


class BadPartResult(RuntimeError):
    """A part returned something the drivers cannot use (wrong shape or type, NaN): a bug in that part.

    :func:`spcakit.fit` turns it into a :class:`PartFailure` naming the plugin.
    """

    def __init__(self, part: object, message: str) -> None:
        meta = getattr(type(part), "__part__", None)
        self.role = meta.role if meta is not None else "part"
        self.name = meta.name if meta is not None else type(part).__name__
        super().__init__(message)


# -- helpers the messages share --------------------------------------------------------------------------
#: Bad cells, lines or columns a message names before "and N more".
SHOWN = 5


def listed(items: Sequence[Any], describe: Callable[[Any], str] = str, limit: int = SHOWN, separator: str = ", ") -> str:
    """How a message names a few of many: the first ``limit`` of ``items``, each as ``describe`` words it, joined by
    ``separator``, then ``" and N more"`` for the rest (``listed(["a", "b", "c"], limit=2)`` is ``"a, b and 1
    more"``)."""
    shown = separator.join(describe(item) for item in items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")


def format_size(nbytes: int) -> str:
    """``nbytes`` in words: ``"373 GiB"``, ``"12 KiB"``, ``"80 bytes"``."""
    for unit, size in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if nbytes >= size:
            return f"{nbytes / size:.3g} {unit}"
    return f"{nbytes} bytes"


def install_hint(libraries: str, extra: str) -> str:
    """How to install an optional capability: its libraries from the package index, or spcakit's extra
    ``extra`` from spcakit's repository (spcakit itself is not on the index)."""
    return f"pip install {libraries} (or, in spcakit's repository, pip install -e '.[{extra}]')"
