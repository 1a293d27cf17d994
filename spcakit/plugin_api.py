"""The plugin API: everything a part, metric or method plugin needs, in one module. This is the stable surface.

A plugin package (a paper's methods, a new truncation, a metric) imports spcakit through this module alone;
the modules behind it may be renamed or reorganised between releases, these names are not. The built-in
plugins under ``plugins/`` import nothing else of spcakit (a test checks it), so they show what a third-party
package can do. See ``docs/plugins.md`` for a walk through.

What is here, by what it is for:

* **hooks**: :data:`hookimpl`, the decorator of a plugin's ``spcakit_register_*`` functions; :func:`get_registry`,
  and :func:`get_session` to add and remove a plugin in-process (a plugin's own tests);
* **roles and records**: the part roles (:class:`Initializer`, :class:`Updater`, :class:`Truncator`,
  :class:`Deflator`, :class:`Stopper`, :class:`Refiner`, :class:`Driver`) and :func:`part`; the records a
  driver threads (:class:`Carry`, :class:`IterState`, :class:`Outcome`, :class:`Refined`), the stopping
  reasons that carry a certificate or say a cap was reached (:class:`CapReached`, :func:`with_proved_bound`),
  and :class:`Metric` with its :class:`MetricContext`; :class:`CertifiedStop`, whether loadings are certified
  within a tolerance of the best possible (a heuristic that tries candidates stops there);
* **parameters**: the attrs field converters and validators a part's parameters use (:func:`to_int`,
  :func:`number`, :func:`one_of`, :func:`check_cardinality`, ...);
* **the problem and its covariance**: :class:`Problem` and the operators' protocol
  (:class:`CovarianceOperator`), with the eigen policy (:func:`top_eigenpairs`) and the low-rank helpers;
* **numerical building blocks** the generic parts are made of: ties (:mod:`~spcakit.numerics.ties`),
  index sets, the thresholding bounds, dense eigen-solvers, hard thresholding, the drivers' loops;
* **runs inside a part**: :func:`fit` (a method as a member of another, as ``auto`` runs its members), and
  progress reports (:mod:`~spcakit.output.progress`) for long searches;
* **specs**: :func:`specs_root`, the folder of the built-in method and experiment specs.
"""

from __future__ import annotations

from spcakit.analysis.bounds import raised_for_rounding
from spcakit.analysis.certificate import CertifiedStop
from spcakit.analysis.metrics import (
    MetricContext,
    cpev,
    explained_variance,
    format_general,
    format_number,
    orthonormal_basis,
    top_eigenvalues,
)
from spcakit.analysis.search import Search, branch_and_bound, gram_search_matrix, low_rank_spectrum
from spcakit.core.drivers import Parts, StepCallback, prepare, run_block
from spcakit.core.errors import (
    InvalidDataError,
    InvalidParameterError,
    SpcakitError,
    ZeroLoadingError,
)
from spcakit.core.fields import (
    boolean,
    check_cardinality,
    index_list,
    int_or_list,
    integer,
    number,
    one_of,
    optional,
    positive,
    positive_int,
    refuse_zeroed_columns,
    to_float,
    to_int,
    to_int_or_tuple,
    to_tuple,
)
from spcakit.core.hookspecs import hookimpl
from spcakit.core.plugins import get_registry, get_session
from spcakit.core.protocols import (
    Deflator,
    Driver,
    Initializer,
    Metric,
    MetricWarning,
    Refined,
    Refiner,
    Stopper,
    Truncator,
    Updater,
    means_none,
    part,
)
from spcakit.core.records import (
    COMPONENT,
    CONSTRAINT,
    LOADING_PRODUCT,
    TRUNCATION_KEEPS,
    CapReached,
    Carry,
    IterState,
    Outcome,
    constraint_matmat,
    constraint_submatrix,
    known_product,
    with_proved_bound,
)
from spcakit.inputs.checks import numeric_array
from spcakit.inputs.datasets import load_source, square_root
from spcakit.inputs.problem import Problem
from spcakit.numerics import index_sets, ties
from spcakit.numerics.linalg import (
    RANGE_TOL,
    added_variance_problem,
    generalized_top,
    leading_subset,
    range_basis,
)
from spcakit.numerics.operators import (
    DENSE_EIGEN_LIMIT,
    CovarianceOperator,
    DenseCovariance,
    GramCovariance,
    densify,
    project_out,
    rank_one_downdate,
    sparse_product,
    top_eigenpairs,
)
from spcakit.numerics.thresholding import (
    RHO_GRID,
    spectral_knapsack,
    support_capacities,
    threshold_knapsack,
    thresholded_blocks,
    thresholded_spectrum,
)
from spcakit.output import progress
from spcakit.parts.nonnegative import truncate_nonnegative
from spcakit.parts.truncators import SparsityTruncation, hard_threshold
from spcakit.workflows.configure import methods_taking_nonnegative, nonnegative_refusal
from spcakit.workflows.fit import default_support, fit
from spcakit.workflows.reproduce.common import specs_root

__all__ = [
    "COMPONENT",
    "CONSTRAINT",
    "DENSE_EIGEN_LIMIT",
    "LOADING_PRODUCT",
    "RANGE_TOL",
    "RHO_GRID",
    "TRUNCATION_KEEPS",
    "CapReached",
    "Carry",
    "CertifiedStop",
    "CovarianceOperator",
    "Deflator",
    "DenseCovariance",
    "Driver",
    "GramCovariance",
    "Initializer",
    "InvalidDataError",
    "InvalidParameterError",
    "IterState",
    "Metric",
    "MetricContext",
    "MetricWarning",
    "Outcome",
    "Parts",
    "Problem",
    "Refined",
    "Refiner",
    "Search",
    "SparsityTruncation",
    "SpcakitError",
    "StepCallback",
    "Stopper",
    "Truncator",
    "Updater",
    "ZeroLoadingError",
    "added_variance_problem",
    "boolean",
    "branch_and_bound",
    "gram_search_matrix",
    "low_rank_spectrum",
    "check_cardinality",
    "constraint_matmat",
    "constraint_submatrix",
    "cpev",
    "default_support",
    "densify",
    "explained_variance",
    "fit",
    "format_general",
    "format_number",
    "generalized_top",
    "get_registry",
    "get_session",
    "hard_threshold",
    "hookimpl",
    "index_list",
    "index_sets",
    "int_or_list",
    "integer",
    "known_product",
    "leading_subset",
    "load_source",
    "means_none",
    "methods_taking_nonnegative",
    "nonnegative_refusal",
    "number",
    "numeric_array",
    "one_of",
    "optional",
    "orthonormal_basis",
    "part",
    "positive",
    "positive_int",
    "prepare",
    "progress",
    "project_out",
    "raised_for_rounding",
    "range_basis",
    "rank_one_downdate",
    "refuse_zeroed_columns",
    "run_block",
    "sparse_product",
    "specs_root",
    "spectral_knapsack",
    "square_root",
    "support_capacities",
    "threshold_knapsack",
    "thresholded_blocks",
    "thresholded_spectrum",
    "ties",
    "to_float",
    "to_int",
    "to_int_or_tuple",
    "to_tuple",
    "top_eigenpairs",
    "top_eigenvalues",
    "truncate_nonnegative",
    "with_proved_bound",
]  # fmt: skip
