"""Bit-identity check for restructurings: every registered method's ``--json`` output, before and after.

A change that only moves code must leave every number exactly as it was. This script runs
``spcakit run METHOD --json`` (in process, through the CLI) for every registered method on three data
sets and writes one file per run; ``--compare DIR`` runs them again and lists every run whose output
differs from the one saved in ``DIR`` (the ``seconds`` field aside: it is a timing).

* Pitprops (built in), r = 6;
* NUS-WIDE (``../shared/data/nus_wide_2400x225.npz``, data), r = 3;
* the lymphoma covariance (``../shared/data/lymphoma_cov_500.npz``, a 500 x 500 covariance), r = 3.

Every method runs with its defaults (the default ``k`` where it takes one; GPower's four, which have no
default penalty, with ``--lam``: :data:`spcakit.testing.EXAMPLE_LAMBDAS`). A run that fails is saved as
its error message and exit code, so that errors are compared too. The shared data sets are skipped with a
message where absent.

Usage::

    python benchmarks/identity.py --save /tmp/before        # on the commit before the change
    python benchmarks/identity.py --compare /tmp/before     # after it: exit 1 when anything differs
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from typer.testing import CliRunner

from spcakit.cli import app
from spcakit.core.plugins import get_registry
from spcakit.testing import EXAMPLE_LAMBDAS

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data"
#: ``name: (arguments, file under the shared data folder or None)``
DATA_SETS = {
    "pitprops": (["--data", "builtin:pitprops", "-r", "6"], None),
    "nus_wide": (["-r", "3"], "nus_wide_2400x225.npz"),
    "lymphoma_cov": (["--covariance", "-r", "3"], "lymphoma_cov_500.npz"),
}
#: Methods with no default for their parameter (GPower's penalties are absolute: they depend on the scale).
EXTRA = {name: ["--lam", str(lam)] for name, lam in EXAMPLE_LAMBDAS.items()}


def run_all(methods: list[str], data_sets: list[str], shared: Path) -> dict[str, str]:
    """``{"method@data": canonical output}`` for every run."""
    runner = CliRunner()
    out: dict[str, str] = {}
    for data in data_sets:
        args, name = DATA_SETS[data]
        if name is not None:
            if not (shared / name).exists():
                print(f"skipped {data}: {shared / name} is absent", file=sys.stderr)
                continue
            args = ["--data", str(shared / name), *args]
        for method in methods:
            start = time.perf_counter()
            result = runner.invoke(app, ["run", method, *args, *EXTRA.get(method, []), "--json"])
            if result.exit_code == 0:
                record = json.loads(result.stdout)
                record.pop("seconds", None)
                text = json.dumps(record, indent=1, sort_keys=True)
            else:
                text = json.dumps({"exit_code": result.exit_code, "output": result.output}, indent=1)
            out[f"{method}@{data}"] = text
            print(f"{method}@{data}: exit {result.exit_code}, {time.perf_counter() - start:.2f} s", file=sys.stderr)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--save", type=Path, help="write every run's output into this folder")
    action.add_argument("--compare", type=Path, help="compare every run with the outputs saved in this folder")
    parser.add_argument("--methods", nargs="*", help="only these methods (default: every registered one)")
    parser.add_argument("--data", nargs="*", choices=sorted(DATA_SETS), default=sorted(DATA_SETS))
    parser.add_argument("--shared", type=Path, default=SHARED, help=f"the shared data folder (default {SHARED})")
    options = parser.parse_args(argv)
    methods = options.methods or sorted(get_registry().method_names())
    outputs = run_all(methods, options.data, options.shared)
    if options.save:
        options.save.mkdir(parents=True, exist_ok=True)
        for key, text in outputs.items():
            (options.save / f"{key}.json").write_text(text)
        print(f"saved {len(outputs)} runs in {options.save}")
        return 0
    differ, missing = [], []
    for key, text in outputs.items():
        saved = options.compare / f"{key}.json"
        if not saved.exists():
            missing.append(key)
        elif saved.read_text() != text:
            differ.append(key)
    print(f"{len(outputs)} runs compared: {len(outputs) - len(differ) - len(missing)} bit-identical, "
          f"{len(differ)} differ{': ' + ', '.join(differ) if differ else ''}, "
          f"{len(missing)} not saved before{': ' + ', '.join(missing) if missing else ''}")
    return 1 if differ or missing else 0


if __name__ == "__main__":
    sys.exit(main())
