"""The environment every benchmark report records (``benchmarks/timing.py``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"

# In a fresh interpreter: whether SciPy's Matrix Market reader has registered its thread-pool controller depends on
# what this process imported before, and the reports broke only where it had (its version is a function).
SCRIPT = f"""
import io, json, sys
import numpy as np, scipy.io, scipy.sparse
sys.path.insert(0, {str(BENCHMARKS)!r})
import timing
buffer = io.BytesIO()
scipy.io.mmwrite(buffer, scipy.sparse.eye(3, format="coo"))
buffer.seek(0)
scipy.io.mmread(buffer)
print(json.dumps(timing.environment()))
"""


def test_the_environment_is_json_after_a_matrix_market_file_was_read():
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    blas = json.loads(done.stdout)["blas"]
    assert blas and all(isinstance(value, str | int | float | bool | type(None))
                        for library in blas for value in library.values())  # fmt: skip
