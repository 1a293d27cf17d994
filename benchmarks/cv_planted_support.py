"""How often ``spcakit.cross_validate`` finds a planted sparse support (issue 14, item 3).

The numbers quoted in ``spcakit.cv``'s description ("Which rule"). Data: spiked models with ``p = 30``
variables and unit Gaussian noise; factors of standard deviation ``sd`` on disjoint blocks of variables
(equal weights, random signs; the columns shuffled). Settings: ``(n, sd)`` in (300, 3), (200, 3),
(400, 2.5), (300, 2), each with one support of 6 or of 10 variables (``r = 1``) and with two supports of
6 (``r = 2``, the first spike ``1.3 sd``). For each, ``--seeds`` data sets (data seed ``100 + s``, fold
seed ``s``), cross-validated by SPCArt and TPower over ``k = 1..30`` with 5 folds. A run is a hit when
the chosen ``k`` is within one of the support size; both rules are read from the same run (``least`` is
the ``min`` rule's choice).

Usage::

    python benchmarks/cv_planted_support.py                  # 20 seeds: 480 runs, about 1.5 minutes on 2 cores
    python benchmarks/cv_planted_support.py --seeds 5
    python benchmarks/cv_planted_support.py --out benchmarks/results/cv_planted_support.json
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

import spcakit
from spcakit.inputs.datasets import planted_support

P = 30
SETTINGS = ((300, 3.0), (200, 3.0), (400, 2.5), (300, 2.0))
SHAPES = (("one support of 6", (6,), (1.0,)), ("one support of 10", (10,), (1.0,)),
          ("two supports of 6", (6, 6), (1.3, 1.0)))  # fmt: skip
METHODS = ("spcart", "tpower")


def spiked(n: int, p: int, sizes: tuple[int, ...], sds: list[float], seed: int) -> np.ndarray:
    """Factors of standard deviation ``sds`` on disjoint blocks of ``sizes`` variables, plus unit noise; columns shuffled."""
    return planted_support(n, p, sizes, sds, seed).matrix


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20, help="data sets per setting (default 20)")
    parser.add_argument("--out", type=Path, help="also write the results as JSON to this file")
    args = parser.parse_args()
    rows = []
    for n, sd in SETTINGS:
        for shape, sizes, factors in SHAPES:
            sds = [round(sd * f, 6) for f in factors]
            for method in METHODS:
                start = time.perf_counter()
                offsets: dict[str, list[int]] = {"1se": [], "min": []}
                for seed in range(args.seeds):
                    data = spiked(n, P, sizes, sds, 100 + seed)
                    cv = spcakit.cross_validate(data, method, len(sizes), k="1:p", rule="1se", seed=seed)
                    offsets["1se"].append(int(cv.chosen) - sizes[0])
                    offsets["min"].append(int(cv.least) - sizes[0])
                seconds = (time.perf_counter() - start) / args.seeds
                row = {"n": n, "sd": sds, "shape": shape, "method": method, "seconds_per_run": seconds,
                       **{f"hits_{rule}": sum(abs(o) <= 1 for o in v) for rule, v in offsets.items()},
                       **{f"offsets_{rule}": v for rule, v in offsets.items()}}  # fmt: skip
                rows.append(row)
                print(f"n={n} sd={sds} {shape:18} {method:7} 1se {row['hits_1se']}/{args.seeds} "
                      f"(k - s in [{min(offsets['1se'])}, {max(offsets['1se'])}])  min {row['hits_min']}/{args.seeds} "
                      f"(k - s in [{min(offsets['min'])}, {max(offsets['min'])}])  {seconds:.2f} s/run", flush=True)  # fmt: skip
    runs = len(rows) * args.seeds
    totals = {rule: sum(row[f"hits_{rule}"] for row in rows) for rule in ("1se", "min")}
    print(f"hits: 1se {totals['1se']}/{runs}, min {totals['min']}/{runs}")
    if args.out is not None:
        document = {"seeds": args.seeds, "p": P, "folds": 5, "grid": "1:p", "totals": totals, "runs": runs,
                    "spcakit_version": spcakit.__version__, "settings": rows}  # fmt: skip
        args.out.write_text(json.dumps(document, indent=1) + "\n")


if __name__ == "__main__":
    main()
