"""The boundary contract every fuzz test checks, and the settings they share.

Every command ends in exit 0 (success) or 2 (bad input, with a message); never a traceback, never
an internal error, never a changed input file. The examples are drawn from a fixed seed so that CI
sees the same inputs on every run; ``SPCAKIT_FUZZ_EXAMPLES=2000`` explores further (and randomly).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Iterator
from pathlib import Path

from hypothesis import HealthCheck, settings

import spcakit.core.plugins

EXAMPLES = int(os.environ.get("SPCAKIT_FUZZ_EXAMPLES", "0"))
FUZZ = settings(
    max_examples=EXAMPLES or 100,
    deadline=None,
    derandomize=not EXAMPLES,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    database=None,
)


@contextlib.contextmanager
def installed(plugin: object, name: str) -> Iterator[None]:
    """``plugin`` loaded into the plugin session under ``name`` while the block runs, removed after it."""
    session = spcakit.core.plugins.get_session()
    session.add(plugin, name)
    try:
        yield
    finally:
        session.remove(name)


def assert_contract(code: int, text: str, *, allowed: tuple[int, ...] = (0, 2)) -> None:
    """Exit 0 or 2; a refusal says what is wrong; no traceback or internal error."""
    assert code in allowed, f"exit {code}:\n{text}"
    assert "Traceback" not in text, text
    assert "Internal error" not in text, text
    if code == 2:
        assert text.strip(), "a refusal must say why"


def digest(path: Path) -> str | None:
    """The content hash of a file (``None`` when it does not exist): inputs must never change."""
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None
