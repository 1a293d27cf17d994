"""What the reduced benchmark tests share: importing a module of ``benchmarks/`` (not a package) by name."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture(scope="session")
def benchmark_module() -> Callable[[str], ModuleType]:
    """``load(name)``: ``benchmarks/NAME.py`` imported (with ``benchmarks/`` on the path only while importing, for
    its sibling modules such as ``timing``)."""

    def load(name: str) -> ModuleType:
        sys.path.insert(0, str(BENCHMARKS))
        try:
            return importlib.import_module(name)
        finally:
            sys.path.remove(str(BENCHMARKS))

    return load
