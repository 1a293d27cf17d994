"""Shared fixtures: real data sets from ../shared/data (skipped cleanly when absent)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared data folder {SHARED_DATA} is absent")
    return SHARED_DATA


@pytest.fixture(scope="session")
def load_shared():
    """``load_shared("name.npz")`` returns the archive's arrays, or skips when absent."""

    def load(name: str) -> dict[str, np.ndarray]:
        path = SHARED_DATA / name
        if not path.exists():
            pytest.skip(f"{path} is absent")
        with np.load(path, allow_pickle=False) as archive:
            return {k: archive[k] for k in archive.files}

    return load
