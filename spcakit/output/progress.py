r"""Progress of long-running work inside a part, for whoever listens: nothing happens unless someone does.

A part that may run for long (the ``exact`` method's branch and bound) calls :func:`report` as it goes;
a front end that shows progress (the command line's transient line on a terminal,
:class:`spcakit.cli.common.Progress`) installs a listener around the fit with :func:`listen`. Without
one, :func:`report` returns at once: ``spcakit.fit(...)`` from Python stays silent unless asked.

>>> import spcakit
>>> from spcakit.output import progress
>>> seen = []
>>> with progress.listen(seen.append):                                  # doctest: +SKIP
...     spcakit.fit("builtin:pitprops", "exact", r=1, k=6)
>>> seen[-1].describe()                                                 # doctest: +SKIP
'branch and bound: 50 nodes, best 3.771, bound 3.771, gap 0 %'

Why a context variable and not a callback argument
    ``spcakit.fit``'s ``on_step`` is threaded through the drivers, which call it *between* steps:
    ``on_step(component, n_components, iteration)``. Work that happens *inside* one step (the exact
    method's whole search is a single step of its solver part) never sees it, and threading a callback
    further would change every part's signature (``propose(problem, x, state)``) for the few that run
    long, and make each method spec carry it. The listener is set for a block of code
    (:class:`contextvars.ContextVar`, so each thread and each asynchronous task has its own): the
    parts stay pure - what they compute never depends on it, it only receives copies of numbers
    they already hold - and a part that reports needs no import of the front ends (the search is in
    a plugin; the command line is a layer above).

Reports come as often as the part likes (the search: after every node); a listener that draws keeps
to a few updates a second itself (the command line's does). A part that would have to compute
something only to report it can ask :func:`listening` first.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
from collections.abc import Callable, Iterator

import attrs

__all__ = ["Listener", "Report", "listen", "listening", "report"]


@attrs.frozen(kw_only=True)
class Report:
    """How far a long-running piece of work has got.

    Attributes
    ----------
    task
        What is running, in words (``"branch and bound"``).
    count
        How much of it is done, in ``unit`` (nodes explored); increases from one report to the next of the
        same run of the task.
    unit
        What ``count`` counts (``"nodes"``).
    best
        The best objective value found so far, or ``None`` (never decreases within one run of the task).
    bound
        An upper bound on the best value reachable, or ``None`` (never increases within one run).
    """

    task: str
    count: int
    unit: str = "steps"
    best: float | None = None
    bound: float | None = None

    @property
    def gap(self) -> float | None:
        """``(bound - best) / bound``: at least how far ``best`` is from the optimum (``None`` without both, 0 for
        a bound of 0); never increases within one run, since ``best`` does not decrease nor ``bound`` increase."""
        if self.best is None or self.bound is None or not math.isfinite(self.bound):
            return None
        if self.bound <= 0:
            return 0.0
        return max(0.0, (self.bound - self.best) / self.bound)

    def describe(self) -> str:
        """One line: ``branch and bound: 1,024 nodes, best 3.011, bound 3.046, gap 1.15 %``."""
        parts = [f"{self.count:,} {self.unit}"]
        if self.best is not None:
            parts.append(f"best {self.best:.4g}")
        if self.bound is not None:
            parts.append(f"bound {self.bound:.4g}")
        gap = self.gap
        if gap is not None:
            parts.append(f"gap {100 * gap:.3g} %")
        return f"{self.task}: {', '.join(parts)}"


#: What :func:`listen` installs: called with each :class:`Report`.
Listener = Callable[[Report], None]

_LISTENER: contextvars.ContextVar[Listener | None] = contextvars.ContextVar("spcakit_progress_listener", default=None)


def listening() -> bool:
    """Whether a listener is installed here (so that a part may skip computing what only a report needs)."""
    return _LISTENER.get() is not None


def report(task: str, count: int, *, unit: str = "steps", best: float | None = None, bound: float | None = None) -> None:
    """Tell the installed listener how far ``task`` has got (see :class:`Report`); nothing without one."""
    listener = _LISTENER.get()
    if listener is None:
        return
    listener(Report(task=task, count=int(count), unit=unit, best=None if best is None else float(best),
                    bound=None if bound is None else float(bound)))  # fmt: skip


@contextlib.contextmanager
def listen(listener: Listener | None) -> Iterator[None]:
    """Within the block, every :func:`report` calls ``listener`` (``None``: no one listens, reports are dropped).

    The previous listener is back when the block ends, also on an error; a listener installed in an outer
    block does not hear the reports of an inner one.
    """
    token = _LISTENER.set(listener)
    try:
        yield
    finally:
        _LISTENER.reset(token)
