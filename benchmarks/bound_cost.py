"""What the per-loading bound and gap (``spcakit.analysis.bounds``, issue 26) add to a default fit.

Each case fits with every registered metric and with every metric but ``bound`` and ``gap``, in turn, best
of ``--repeats``, one BLAS thread, and reports the difference as a share of the fit (the issue's target:
at most 5 % of SPCArt's fit on the image patches); the difference is within the timing noise, so the
bound's own computation (:func:`spcakit.analysis.bounds.component_bounds` on the run's shared basis, best of
``--repeats``) is timed alone too. Cases:

* 5000 grey 13 x 13 patches of ``china.jpg`` (:func:`estimator.image_patches`), ``spcart`` with r = 20;
* a 1000 x 1000 sample covariance of 2000 Gaussian rows, ``spcart`` with r = 10;
* Pitprops, ``greedy`` with r = 6 and k = 4.

``python benchmarks/bound_cost.py`` (``--out benchmarks/results/bound_cost.json``).
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--out", type=Path, default=HERE / "results" / "bound_cost.json")
    options = parser.parse_args(argv)

    from threadpoolctl import threadpool_info, threadpool_limits

    from default_cost import best_time
    from estimator import image_patches
    import spcakit
    from spcakit.analysis.bounds import component_bounds
    from spcakit.inputs import as_problem
    from spcakit.analysis.metrics import MetricContext, loading_span
    from spcakit.core.plugins import get_registry

    rng = np.random.default_rng(0)
    gaussian = rng.standard_normal((2000, 1000))
    cases = {
        "patches 5000 x 169, spcart, r = 20": (image_patches(5000, 13), "spcart", {"r": 20}),
        "covariance p = 1000, spcart, r = 10": (spcakit.Covariance(gaussian.T @ gaussian / 1999), "spcart", {"r": 10}),
        "pitprops, greedy, r = 6, k = 4": ("builtin:pitprops", "greedy", {"r": 6, "k": 4}),
    }
    every = [m.name for m in get_registry().metrics()]
    without = [name for name in every if name not in ("bound", "gap")]
    rows = []
    with threadpool_limits(1):
        for name, (data, method, keywords) in cases.items():
            with_bound, result = best_time(lambda: spcakit.fit(data, method, metrics=every, **keywords), options.repeats)
            without_bound, _ = best_time(lambda: spcakit.fit(data, method, metrics=without, **keywords), options.repeats)
            added = with_bound - without_bound
            problem = as_problem(data)
            covariance, loadings = problem.covariance, result.loadings
            top = MetricContext(problem, loadings).exact_top_eigenvalue()
            span = loading_span(loadings, covariance)
            own, _ = best_time(lambda: component_bounds(covariance, loadings, top_eigenvalue=top, span=span), options.repeats)
            rows.append({"case": name, "fit_s": with_bound, "fit_without_bound_s": without_bound, "added_s": added,
                         "added_share": added / with_bound, "bound_alone_s": own, "bound_alone_share": own / with_bound,
                         "gap": [round(g, 4) for g in result.metrics["gap"]]})
            print(f"{name}: fit {with_bound * 1e3:.1f} ms, without bound/gap {without_bound * 1e3:.1f} ms "
                  f"({added * 1e3:+.2f} ms); the bound alone {own * 1e3:.2f} ms ({100 * own / with_bound:.1f} % of the fit); "
                  f"gaps {rows[-1]['gap'][:6]}")
    blas = [f"{info.get('internal_api')} {info.get('version')}" for info in threadpool_info()]
    document = {"machine": platform.processor() or platform.machine(), "python": platform.python_version(),
                "numpy": np.__version__, "spcakit": spcakit.__version__, "blas": blas, "threads": 1, "cases": rows}
    options.out.parent.mkdir(parents=True, exist_ok=True)
    options.out.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
