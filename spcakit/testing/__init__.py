"""Tools for testing spcakit parts: contract checks and Hypothesis strategies.

* :mod:`spcakit.testing.contracts` - ``check_initializer_contract``,
  ``check_updater_contract``, ``check_truncator_contract``,
  ``check_stopper_contract``, ``check_deflator_contract`` and
  ``check_operator_contract``: call a part as the drivers do (the run's
  :class:`~spcakit.core.records.Carry` included) and raise
  :class:`~spcakit.testing.contracts.ContractViolation` when it breaks a rule
  they rely on. Needs only NumPy.
* :mod:`spcakit.testing.brute_force` - ``brute_force_optimum``, ``support_values``, ``reference_rounding`` and ``left_by``: the sparse
  eigenvalue (plain, or under a generalized deflation's constraint) by enumerating every support, the
  reference the bounds and the exact search are checked against. Needs only NumPy; cheap up to ``p = 16``.
* :data:`EXAMPLE_LAMBDAS` - a λ for each built-in method that has no default sparsity and takes
  no ``k`` (GPower's penalties): every test that runs every registered method uses these.
* :mod:`spcakit.testing.strategies` - Hypothesis strategies for vectors,
  orthonormal bases, covariance and data matrices and problems. Needs
  ``hypothesis`` (``pip install -e '.[test]'``); it is imported only when
  first used, so ``import spcakit.testing`` works without it.

Examples
--------
>>> import numpy as np
>>> from spcakit.testing import check_truncator_contract
>>> import spcakit
>>> hard = spcakit.get_registry().build("truncator", {"name": "hard", "threshold": 0.3})
>>> x = check_truncator_contract(hard, np.array([[0.9], [0.1], [0.4]]))
>>> x.ravel().tolist()
[0.9, 0.0, 0.4]
"""

from __future__ import annotations

import importlib
from typing import Any

from spcakit.testing import brute_force, contracts

#: λ for the built-in methods whose truncation has no default and takes no ``k`` (GPower's penalties, which
#: are absolute: they depend on the data's scale); each keeps some nonzeros in every loading on standardised
#: data of a dozen variables (Pitprops, the constant-column tests' data).
EXAMPLE_LAMBDAS = {"gpower-l0": 0.1, "gpower-l0-block": 0.002, "gpower-l1": 0.2, "gpower-l1-block": 0.05}
from spcakit.testing.brute_force import brute_force_optimum, left_by, reference_rounding, support_values
from spcakit.testing.contracts import (
    ContractViolation,
    check_deflator_contract,
    check_initializer_contract,
    check_operator_contract,
    check_stopper_contract,
    check_truncator_contract,
    check_updater_contract,
)

__all__ = [*contracts.__all__, "EXAMPLE_LAMBDAS", "brute_force", "brute_force_optimum", "contracts", "left_by",
           "reference_rounding", "strategies", "support_values"]


def __getattr__(name: str) -> Any:
    # ``spcakit.testing.strategies`` needs hypothesis: import it on first use only.
    if name == "strategies":
        return importlib.import_module("spcakit.testing.strategies")
    raise AttributeError(f"module 'spcakit.testing' has no attribute {name!r}")
