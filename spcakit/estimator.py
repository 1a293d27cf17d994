r"""``spcakit.SparsePCA``: any spcakit method as a scikit-learn transformer.

Needs scikit-learn (``pip install -e '.[sklearn]'``); ``import spcakit``
never imports it: ``spcakit.SparsePCA`` loads this module on first use.

>>> from sklearn.datasets import load_breast_cancer
>>> import spcakit
>>> df = load_breast_cancer(as_frame=True).data
>>> model = spcakit.SparsePCA(n_components=3, method="tpower", k=5, standardize=True).fit(df)
>>> model.components_.shape
(3, 30)
>>> [int(row.astype(bool).sum()) for row in model.components_]
[5, 5, 5]
>>> scores = model.transform(df)          # n x 3, regression onto the loadings' span

The estimator checks its input with scikit-learn's own validation (so a
DataFrame's column names become ``feature_names_in_``), standardises when
asked, and hands a float array and the names to :func:`spcakit.fit`; the
full :class:`~spcakit.workflows.results.Result` is kept as ``result_``.

``X`` may be a ``scipy.sparse`` matrix or array (CSR or CSC as they are, other
formats converted to CSR by scikit-learn's validation): it is never densified.
A DataFrame whose columns are all sparse (``pd.arrays.SparseArray`` with fill value 0) is read as CSR too
(``df.sparse.to_coo().tocsr()``), and its column names become ``feature_names_in_``.
``fit`` centres and standardises it implicitly
(:class:`~spcakit.numerics.operators.CenteredSparseGram`), ``transform`` computes
:math:`(X - \mathbf 1\mu^\top)R` as :math:`XR - \mathbf 1(\mu^\top R)`, and
``reconstruction_error`` takes the squared norms of the centred rows from the
stored entries; ``score``, whose leave-one-variable-out predictions need the
dense rows, densifies one block of rows at a time.

One module, a little above the 600 lines the others keep to: it is the one scikit-learn class and the
conventions of scikit-learn's inputs it honours (the checks of its parameters, dtypes kept, sparse
frames, sample weights), which the other modules must not import scikit-learn for.
"""

from __future__ import annotations

import numbers
import warnings
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
import scipy.sparse as sp

try:
    from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.utils.validation import (
        _check_feature_names, _check_feature_names_in, _check_n_features, check_array, check_is_fitted,
        check_random_state, validate_data,
    )
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "spcakit.SparsePCA needs scikit-learn >= 1.6 (for sklearn.utils.validation.validate_data); "
        f"install it with: pip install -e '.[sklearn]' ({exc})"
    ) from exc

from spcakit.analysis.metrics import loading_products, score_correlations
from spcakit.numerics import index_sets
from spcakit.workflows.configure import check_k, configure
from spcakit.workflows.fit import fit
from spcakit.workflows.arguments import check_arguments
from spcakit.core.errors import InvalidDataError, InvalidParameterError, MissingValuesError
from spcakit.inputs.options import InputOptions, check_missing, error_text, open_input
from spcakit.workflows.model import regression_map
from spcakit.workflows.cv import held_out_error
from spcakit.numerics.operators import ROW_BLOCK_BYTES, stored_per_column
from spcakit.core.plugins import get_registry
from spcakit.inputs.checks import check_frame_columns, label_text, pandas_class
from spcakit.inputs.names import DuplicateNamesWarning, unique_names
from spcakit.core.registry import Registry
from spcakit.core.specs import MethodSpec
from spcakit.core.records import IssuedWarning

__all__ = ["SparsePCA"]

#: The ``scipy.sparse`` formats the estimator works in (others are converted to the first by scikit-learn).
SPARSE_FORMATS = ("csr", "csc")

#: The dtypes the estimator keeps (scikit-learn's ``preserves_dtype``): float32 data give float32
#: ``components_`` and scores, float64 data float64; any other input (integers, booleans) is read as float64.
#: The fit itself computes in float64 (see :class:`SparsePCA`'s Notes, *dtypes*).
PRESERVED_DTYPES = (np.float64, np.float32)



# -- pure helpers ------------------------------------------------------------------------------------------
#: What :meth:`SparsePCA.score` says when the estimator was fitted on wide data (one text, so that Python shows it
#: once per place however many folds and levels a search scores).
WIDE_DATA_SCORE = (
    "SparsePCA.score on wide data (more variables than training rows): there the held-out error tends to keep "
    "falling as variables are added, so a search over k by this score (GridSearchCV) favours dense loadings; to "
    "choose a support small enough to read, choose k by stability: spcakit.stable_k(X, method, n_components), "
    "which keeps Meinshausen & Bühlmann's bound on false selections"
)


def _resolve_method(method: Any, truncator: str | None, deflator: str | None, registry: Registry) -> MethodSpec:
    """The method spec that will run: a registered name or a :class:`MethodSpec`, truncator/deflator replaced."""
    if isinstance(method, str):
        spec = registry.method(method)
    elif isinstance(method, MethodSpec):
        spec = method
    else:
        raise InvalidParameterError(
            f"method must be a registered method name (see `spcakit methods`) or a MethodSpec from "
            f"spcakit.compose(); got {type(method).__name__} {method!r}"
        )
    return configure(spec, truncator=truncator, deflator=deflator, registry=registry)


#: The prefix of the scores' column names (``PC1``, ``PC2``, ...; :meth:`SparsePCA.get_feature_names_out`): the
#: names of the loadings' columns (:attr:`spcakit.Result.component_names`) and of ``spcakit transform``'s header.
OUTPUT_PREFIX = "PC"

#: The metrics the estimator reads, the ones its attributes expose: ``result_.metrics`` holds these;
#: :func:`spcakit.analysis.metrics.compute_metrics` gives any other afterwards.
ESTIMATOR_METRICS = ("nz", "pattern", "sp", "cpev", "additional_variance", "cumulative_variance", "bound", "gap",
                     "orthogonality_violation")

#: Arguments of spcakit.fit that the estimator sets itself, and how users set them instead of through ``params``.
_ESTIMATOR_ARGUMENTS = {
    "data": "fit(X)", "method": "SparsePCA(method=...)", "r": "SparsePCA(n_components=...)",
    "n_components": "SparsePCA(n_components=...)",
    "truncator": "SparsePCA(truncator=...)", "lam": "SparsePCA(lam=...)", "deflator": "SparsePCA(deflator=...)",
    "seed": "SparsePCA(random_state=...)", "center": "SparsePCA(center=...)", "covariance": "the estimator (data only)",
    "feature_names": "the DataFrame's columns", "standardize": "SparsePCA(standardize=...)",
    "columns": "selecting the columns of X", "drop": "selecting the columns of X", "on_step": "spcakit.fit (not the estimator)",
    "registry": "spcakit.fit (not the estimator)", "metrics": "the estimator (see ESTIMATOR_METRICS)",
    "refiner": "SparsePCA(refiner=...)", "target_cpev": "SparsePCA(target_cpev=...)", "bound": "SparsePCA(bound=...)",
    "nonnegative": "SparsePCA(nonnegative=...)", "constraint": "SparsePCA(constraint=...)",
}  # fmt: skip


def _sparsity_params(k: Any, lam: Any, params: Mapping[str, Any] | None) -> dict[str, Any]:
    """The keyword arguments of :func:`spcakit.fit` that set the sparsity of ``method``.

    ``lam`` goes to the method's truncator as its λ (``spcakit.fit(lam=...)``);
    ``params`` are part parameters as ``spcakit.fit(**params)`` takes them
    (and a ``stopper`` replacement), never an argument the
    estimator sets itself (``seed``, ``lam``, ...: the message says which);
    ``k``, the number of nonzero variables per loading, is ``spcakit.fit``'s
    sparsity knob ``k``, which every method translates to its own parameter
    (:func:`spcakit.workflows.configure.set_k`: SPCArt, rSVD-GP and TPower keep the ``k``
    largest entries, ``greedy``/``exhaustive`` solve for cardinality ``k``,
    FSPCA shares ``k`` variables between all loadings, the encoders use
    ``k`` variables per feature). A method that cannot express a cardinality
    refuses ``k`` when fitted, naming the methods that take it.
    """
    if params is not None and not isinstance(params, Mapping):
        raise InvalidParameterError(
            f"params must be a mapping of part parameters, e.g. {{'stopper.tol': 1e-4}}, or None; got {params!r}"
        )
    out: dict[str, Any] = dict(params or {})
    reserved = sorted(set(out) & set(_ESTIMATOR_ARGUMENTS))
    if reserved:
        raise InvalidParameterError(
            "params holds part parameters (and a stopper replacement); "
            + "; ".join(f"{key!r} is set by {_ESTIMATOR_ARGUMENTS[key]}" for key in reserved)
        )
    if lam is not None:
        out["lam"] = lam
    if k is None:
        return out
    given = sorted(key for key in out if key == "k" or key.endswith(".k"))
    if given:
        raise InvalidParameterError(
            f"k is given both as SparsePCA(k={k!r}) and in params ({', '.join(given)}); give it once"
        )
    out["k"] = k
    return out


def _check_n_components(n_components: Any, n_samples: int, n_features: int, center: bool) -> int:
    """``n_components`` as an int in [1, min(n_features, rank bound of the (centred) data)]."""
    if isinstance(n_components, bool) or not isinstance(n_components, numbers.Integral) or n_components < 1:
        raise InvalidParameterError(f"n_components must be a positive integer; got {n_components!r}")
    rank_bound = n_samples - 1 if center else n_samples
    upper = min(n_features, rank_bound)
    if n_components > upper:
        rank_text = "n_samples - 1 (centring removes one dimension)" if center else "n_samples"
        raise InvalidParameterError(
            f"n_components={n_components} must be between 1 and min(n_features, {rank_text}) = {upper} "
            f"for data with n_samples={n_samples}, n_features={n_features}"
        )
    return int(n_components)


def _check_target_cpev(target_cpev: Any, k: Any, lam: Any) -> float | None:
    """``target_cpev`` as a float in (0, 1], or ``None``; refused beside ``k`` or ``lam`` (they set the sparsity too)."""
    if target_cpev is None:
        return None
    given = [name for name, value in (("k", k), ("lam", lam)) if value is not None]
    if given:
        raise InvalidParameterError(
            f"target_cpev chooses k itself; give either target_cpev or {' / '.join(given)}, not both"
        )
    if isinstance(target_cpev, (bool, np.bool_)) or not isinstance(target_cpev, numbers.Real) or not 0 < target_cpev <= 1:
        raise InvalidParameterError(
            f"target_cpev is a fraction of PCA's CPEV in (0, 1], e.g. 0.9; got {target_cpev!r}"
        )
    return float(target_cpev)


def _check_flag(value: Any, name: str) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise InvalidParameterError(f"{name} must be True or False; got {value!r}")
    return bool(value)


def _seed(random_state: Any) -> int:
    """An int seed for :func:`spcakit.fit` from a scikit-learn ``random_state``.

    An int is the seed itself (scikit-learn's range check applies: 0 to 2**32 - 1);
    ``None`` (numpy's global generator) and a ``RandomState`` give a seed drawn
    from them, as scikit-learn estimators consume them.
    """
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        check_random_state(random_state)  # refuses seeds outside [0, 2**32 - 1]
        return int(random_state)
    generator = check_random_state(random_state)
    return int(generator.randint(np.iinfo(np.int32).max))


def _sparse_residual(x: Any, mean: np.ndarray, scale: np.ndarray | None, scores: np.ndarray, components: np.ndarray) -> float:
    r""":math:`\|A - S L^\top\|_F^2` for the centred (scaled) rows :math:`A = (X - \mathbf 1\mu^\top)D^{-1}` of a
    sparse ``x``, without forming :math:`A`.

    :math:`SL^\top = AP` is the orthogonal projection of :math:`A` onto the loadings' span (see
    :class:`SparsePCA`'s Notes), so the squared residual is :math:`\|A\|_F^2 - \|SL^\top\|_F^2`, with
    :math:`\|SL^\top\|_F^2 = \operatorname{tr}(S\,L^\top L\,S^\top)` (``n x r``) and :math:`\|A\|_F^2` the
    centred column sums of squares over the stored entries and the implicit zeros, as the sparse problem
    computes them (:mod:`spcakit.inputs.sparse`).
    """
    from spcakit.inputs.sparse import centred_sum_of_squares  # noqa: PLC0415 - sparse input only
    from spcakit.numerics.operators import canonical_csr

    x = canonical_csr(x)  # duplicates summed in a copy, never in the caller's matrix
    total = float(centred_sum_of_squares(x, mean, stored_per_column(x), scale).sum())
    kept = float(np.einsum("ij,ij->", scores @ (components @ components.T), scores))
    return max(total - kept, 0.0)


def _centred_row_blocks(x: Any, mean: np.ndarray, scale: np.ndarray | None) -> Iterator[np.ndarray]:
    """The rows of ``x`` centred by ``mean`` (and divided by ``scale``) as dense blocks of at most
    :data:`~spcakit.numerics.operators.ROW_BLOCK_BYTES` each: a sparse ``x`` is densified one block of rows at a time."""
    n, p = x.shape
    height = max(1, ROW_BLOCK_BYTES // (8 * max(p, 1)))
    for start in range(0, n, height):
        block = x[start : start + height]
        block = block.toarray().astype(np.float64, copy=False) if sp.issparse(block) else np.array(block, dtype=np.float64)
        block -= mean
        if scale is not None:
            block /= scale
        yield block


def _sparse_frame(X: Any) -> bool:
    """Whether ``X`` is a pandas DataFrame whose columns are all sparse (``pd.arrays.SparseArray``) with fill
    value 0: such a frame is read as a CSR matrix (``X.sparse.to_coo().tocsr()``), never densified."""
    if type(X).__name__ != "DataFrame" or not hasattr(X, "sparse") or X.shape[1] == 0:
        return False
    try:
        from pandas import SparseDtype  # pandas is there: X is a DataFrame
    except ImportError:  # pragma: no cover - a DataFrame without pandas
        return False
    return all(isinstance(dtype, SparseDtype) and dtype.fill_value == 0 for dtype in X.dtypes)


def _validate(estimator: Any, X: Any, *, reset: bool, **kwargs: Any) -> Any:
    """scikit-learn's ``validate_data`` (float32 and float64 kept, scipy.sparse accepted), except that a
    DataFrame of sparse columns (:func:`_sparse_frame`) becomes a CSR matrix without a dense copy: its column
    names are checked and recorded (``feature_names_in_``) as scikit-learn does for a dense frame, and the
    CSR matrix is validated instead (scikit-learn would convert such a frame to float64 CSR itself, losing
    float32, and densifies, with a warning, a frame that mixes sparse and dense columns). An AnnData is refused
    first, pointing to :func:`spcakit.anndata.sparse_pca` (scikit-learn would try to convert it for seconds)."""
    from spcakit.inputs import refuse_anndata  # noqa: PLC0415 - a check on the class alone, anndata not imported

    refuse_anndata(X, "SparsePCA")
    X = _with_unique_columns(X, warn=reset)
    if not _sparse_frame(X):
        return validate_data(estimator, X, accept_sparse=SPARSE_FORMATS, dtype=list(PRESERVED_DTYPES), reset=reset,
                             **kwargs)  # fmt: skip
    _check_feature_names(estimator, X, reset=reset)
    x = check_array(X.sparse.to_coo().tocsr(), accept_sparse=SPARSE_FORMATS, dtype=list(PRESERVED_DTYPES), **kwargs)
    _check_n_features(estimator, x, reset=reset)
    return x


def _with_unique_columns(X: Any, *, warn: bool) -> Any:
    """``X`` itself, or a DataFrame whose repeated column names are made unique as :func:`spcakit.fit` makes them
    (:func:`~spcakit.inputs.names.unique_names`: ``NAME-1``, ... with a :class:`~spcakit.DuplicateNamesWarning` when
    fitting, ``warn``), so that scikit-learn's name checks accept it and ``transform`` matches the same names (the
    frame is not copied: a view with other column labels)."""
    columns = getattr(X, "columns", None)
    if columns is None or pandas_class(X) != "DataFrame" or columns.is_unique:
        return X
    labels = [label_text(label) for label in columns]
    if warn:
        renamed = unique_names(labels)
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DuplicateNamesWarning)
            renamed = unique_names(labels)
    return X.set_axis(list(renamed), axis=1, copy=False)


def _has_nan(x: Any) -> bool:
    """Whether the validated ``x`` (dense, or sparse with stored values) holds a NaN."""
    values = x.data if sp.issparse(x) else x
    # NaN propagates through the maximum: one pass and no boolean copy the size of the data (100 MB on 200 000 x 500)
    return values.size > 0 and bool(np.isnan(np.max(values)))


def _rows_with_nan(x: Any) -> np.ndarray:
    """The indices of the validated ``x``'s rows with a NaN entry (a stored one, for sparse ``x``)."""
    if sp.issparse(x):
        csr = x.tocsr()
        bad = np.isnan(csr.data)
        return np.unique(np.searchsorted(csr.indptr, np.flatnonzero(bad), side="right") - 1)  # type: ignore[no-any-return]
    return np.flatnonzero(np.isnan(x).any(axis=1))


def _complete(estimator: Any, X: Any, method: str) -> Any:
    """``X`` validated for a method that needs complete rows: NaN refused with a message saying so."""
    x = _validate(estimator, X, reset=False, ensure_all_finite="allow-nan")
    if _has_nan(x):
        raise InvalidDataError(
            f"{method} needs complete rows, but X has missing values (NaN): it predicts every entry of a row, "
            "which a missing entry cannot be compared with; score complete rows only (e.g. X[~np.isnan(X).any(axis=1)]), "
            "or use transform, which scores incomplete rows from their observed entries"
        )
    return x


def _output_dtype(x: Any) -> np.dtype:
    """The dtype of what the estimator returns for the validated ``x``: float32 for float32, else float64."""
    return np.dtype(np.float32) if x.dtype == np.float32 else np.dtype(np.float64)


# -- the estimator -----------------------------------------------------------------------------------------
class SparsePCA(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    r"""Sparse PCA by any spcakit method, as a scikit-learn transformer.

    Parameters
    ----------
    n_components : int, default=2
        Number of sparse components :math:`r`; at most
        ``min(n_features, n_samples - 1)`` (``n_samples`` when ``center=False``),
        the rank bound of the data. A larger value raises ``ValueError``, as
        :class:`sklearn.decomposition.PCA` does above ``min(n_samples, n_features)``;
        the bound is one lower when centring because centred data have rank at
        most ``n_samples - 1`` (spcakit refuses components beyond the rank).
    method : str or MethodSpec, default="auto"
        A registered method (``spcakit methods``) or a spec from
        :func:`spcakit.compose`. The default, ``auto``, runs TPower (plain and restarted), greedy
        selection and SPCArt at the same ``k``, refines each by support swaps
        and keeps the loadings that explain the most variance
        (:mod:`spcakit_deflation.portfolio`; the quality benchmark in
        ``docs/benchmarks.md``). Name a paper's method for its own behaviour.
    k : int or list of int, optional
        Number of nonzero variables per component: spcakit's one sparsity
        knob, which each method translates to its own parameter (SPCArt,
        rSVD-GP, TPower: truncation by sparsity with λ = p - k; greedy and
        exhaustive: their cardinality; FSPCA: the k variables all components
        share; the encoders: their sparsity, one value per component allowed).
        GPower's penalties and PCA refuse it, naming the methods that take it.
        Without ``k``, ``lam`` or ``target_cpev``, SPCArt, rSVD-GP(B), ST and
        SPCA-SP keep their paper's default (hard thresholding at
        :math:`1/\sqrt p`) and the other methods use
        :math:`\lceil\sqrt p\rceil` nonzeros, at least ``n_components``
        (:func:`spcakit.workflows.configure.default_k`), recorded as ``k_``.
    lam : float or int, optional
        The λ of the method's truncation, in the paper's form (a threshold,
        a number of zeros, a fraction of energy, ...); see ``spcakit parts``.
    truncator, deflator : str, optional
        Replace the method's truncation (e.g. ``"sparsity"``) or deflation.
    refiner : str, optional
        Refine the finished loadings with this part (``spcakit parts --role
        refiner``; e.g. ``"swap"``), or ``"none"`` to skip the method's own
        refiner; default: the method's.
    target_cpev : float, optional
        Instead of ``k``: the sparsest solution whose CPEV is at least this
        fraction :math:`F \in (0, 1]` of PCA's for the same ``n_components``,
        the smallest ``k`` found by :func:`spcakit.target_k` (each level a
        cold fit; see there for the search and its tolerance). The chosen
        level is ``k_``. Only for the methods that take ``k``; not with ``k``
        or ``lam``.
    bound : {"fast", "threshold"}, default="fast"
        The relaxation of ``bound_`` and ``gap_`` (:func:`spcakit.fit`'s ``bound``): ``"fast"``, the
        eigenvalue, diagonal and Gershgorin bounds (milliseconds), or ``"threshold"``, those and the
        threshold bound of each deflated covariance, the least kept: far tighter on many weakly correlated
        variables (gene expression), a fraction of a second to seconds per component at 1000 features, and
        refused above :data:`spcakit.analysis.bounds.THRESHOLD_LIMIT` features.
    nonnegative : bool, default=False
        Keep every component non-negative (``components_ >= 0``), as R's nsprcomp with ``nneg = TRUE``:
        :func:`spcakit.fit`'s ``nonnegative``. The default method ``auto`` and every method that truncates
        take it; the others refuse it when fitted, naming the methods that take it.
    constraint : {"orthogonal", "uncorrelated"} or None, default=None
        Non-redundant components (:func:`spcakit.fit`'s ``constraint``): orthogonal ``components_``
        (``components_ @ components_.T`` is the identity to rounding) or uncorrelated scores (``score_correlations_``
        is the identity), at the same ``k``. ``orthogonality_violation_`` and ``score_correlations_`` say how
        redundant any fit is.
    standardize : bool, default=False
        Work on the correlation scale: divide each column by its standard
        deviation (``ddof=1``, as spcakit's covariance :math:`A^\top A/(n-1)`),
        so that the result equals the method's result on the correlation
        matrix. Use it when the variables have different units or scales;
        otherwise the components mostly pick the variables with the largest
        variance. A constant column (zero variance) is divided by 1, not by
        zero, as scikit-learn's ``StandardScaler`` does: its ``scale_`` is
        1.0 and it stays at zero (it gets zero loadings in any case: see
        ``fit``).
    center : bool, default=True
        Subtract the column means (``mean_``). With ``center=False`` the
        covariance is :math:`A^\top A/n`, ``mean_`` is zero and standardising
        divides by each column's root mean square.
    random_state : int, RandomState or None, default=0
        Seed of the random parts (random starts, sampling). An int is the seed
        passed to :func:`spcakit.fit` (results are reproducible by default);
        ``None`` or a ``RandomState`` give a seed drawn from them, recorded
        as ``seed_``.
    missing : {"auto", "em", "error"}, default="auto"
        Missing values (NaN, or stored NaN of a sparse ``X``): ``"auto"`` imputes them by EM on the sparse
        low-rank model with a :class:`~spcakit.core.errors.MissingValueWarning`, ``"em"`` without it, ``"error"``
        refuses them (:func:`spcakit.fit`'s ``missing``; :mod:`spcakit.workflows.imputation`). Data without NaN are
        fitted exactly as without it. ``transform`` scores a row with missing entries from its observed
        entries alone (see Notes); ``score`` and ``reconstruction_error`` refuse NaN.
    params : dict, optional
        Further part parameters, as :func:`spcakit.fit` takes them
        (``{"stopper.tol": 1e-4}``, ``{"epsilon": 0.2}``), and replacements of
        the stopping rule (``{"stopper": {"name": "max-iterations", "n": 50}}``).

    Attributes
    ----------
    components_ : ndarray of shape (n_components, n_features)
        The sparse loadings, one unit-length row per component (scikit-learn's
        orientation: ``result_.loadings.T``).
    mean_ : ndarray of shape (n_features,)
        Column means of the training data (zeros when ``center=False``).
    scale_ : ndarray of shape (n_features,) or None
        Column standard deviations when ``standardize=True`` (1.0 for a
        constant column), else ``None``.
    n_components_ : int
        Number of components.
    k_ : int, list of int or None
        Nonzero variables per component as fitted: ``k``, the level that
        ``target_cpev`` chose, or the default cardinality
        :func:`spcakit.workflows.configure.default_k` that a method needing one got without
        ``k`` (``None`` when the sparsity was set by ``lam``, a part parameter
        or the method's own default, such as SPCArt's threshold).
    n_features_in_ : int
        Number of features seen in ``fit``.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Column names, when ``fit`` was given a DataFrame with string column names.
    explained_variance_ : ndarray of shape (n_components,)
        The *adjusted* variance of each component: the variance it adds to the
        earlier ones (see Notes), on the scale the method ran on (correlation
        scale when standardising).
    explained_variance_ratio_ : ndarray of shape (n_components,)
        ``explained_variance_`` over the total variance :math:`\operatorname{tr}C`
        of the covariance used; its sum is the cumulative proportion of
        explained variance of the loadings' span (``result_.metrics["cpev"]``).
    bound_ : ndarray of shape (n_components,)
        Per ``t``, an upper bound on the variance that any ``t`` loadings with the cardinalities of the first ``t``
        explain together (:func:`spcakit.analysis.certificate.cumulative_bounds`; the first: the best loading of its
        cardinality), on the scale the method ran on.
    gap_ : ndarray of shape (n_components,)
        ``(bound_ - cumsum(explained_variance_)) / bound_``: the first ``t`` components are at most this share below
        the best ``t`` as sparse (0: optimal). A large gap may be the bound's looseness (``bound="certify"`` runs the
        search to the end for the first; ``bound="threshold"`` tightens the others on many weakly linked variables).
    orthogonality_violation_ : float
        :math:`\sum_{s<t} |u_t^\top u_s|` over the pairs of components (0: orthogonal, as PCA's; msPCA's measure).
    score_correlations_ : ndarray of shape (n_components, n_components)
        The correlations of the components' scores on the training data (the identity: uncorrelated, as PCA's).
    n_iter_ : int
        Update + truncation steps over all components (``result_.iterations``).
    seed_ : int
        The seed passed to :func:`spcakit.fit`.
    result_ : spcakit.Result
        The full result: spec as run, metrics, stopping reason, warnings.

    Notes
    -----
    **Scores.** Sparse loadings :math:`X` (``p x r``) are generally not
    orthogonal, so the projection :math:`AX` would mix components. ``transform``
    regresses each centred (and scaled) row on the loadings instead:

    .. math:: S = A X (X^\top X)^{-1} = A (X^+)^\top,

    the least-squares solution of :math:`\min_S \|A - S X^\top\|_F`. Then
    :math:`S X^\top` is the orthogonal projection of :math:`A` onto
    :math:`\operatorname{span}(X)`, the best reconstruction from these loadings,
    which ``inverse_transform`` returns (``S X^T * scale_ + mean_``). For
    orthonormal loadings (PCA) it is the usual projection :math:`AX`. When the
    loadings are linearly dependent (rank below ``n_components``), ``fit`` warns
    and the pseudo-inverse gives the minimum-norm scores; the reconstruction is
    still the projection onto their span.

    **Missing values.** With ``missing="auto"`` or ``"em"``, ``fit`` imputes NaN entries by EM
    (:func:`spcakit.workflows.imputation.impute_and_fit`): ``mean_``, ``scale_`` and ``explained_variance_`` are those of the
    completed data, and ``result_.input.missing`` records the fraction missing, the EM iterations and whether they
    converged. ``transform`` scores a row :math:`a` with missing entries from its observed entries :math:`o`
    alone, :math:`t = \arg\min_t \|(a_o - \mu_o)/s_o - X_o t\|` (least squares, minimum-norm when
    :math:`X_o` is rank-deficient; :func:`spcakit.workflows.imputation.observed_scores`), which for a complete row is the
    regression score above; a row with no observed entry gets scores 0 (the mean).

    **Adjusted variance.** Let :math:`X = QR` be the thin QR decomposition of the
    loadings (Gram-Schmidt in component order) and :math:`C` the covariance used.
    Component :math:`j` adds the direction

    .. math:: q_j = \frac{(I - P_{j-1}) x_j}{\|(I - P_{j-1}) x_j\|} = Q e_j,
       \qquad |R_{jj}| = \|(I - P_{j-1}) x_j\|,

    with :math:`P_{j-1}` the orthogonal projection onto
    :math:`\operatorname{span}(x_1, \dots, x_{j-1})`, and its adjusted variance
    is the variance of the data along that new direction,

    .. math:: v_j = q_j^\top C q_j = \frac{\|A q_j\|^2}{n - 1}

    (:math:`v_j = 0` when :math:`R_{jj} = 0`: :math:`x_j` adds no direction).
    Because the :math:`q_j` are orthonormal and span :math:`\operatorname{span}(X)`,
    :math:`\sum_j v_j = \operatorname{tr}(Q^\top C Q)`, the variance of the
    data's projection onto the span: nothing is counted twice, and
    :math:`\sum_j v_j / \operatorname{tr} C` is spcakit's CPEV. This is Mackey's
    *additional variance* (``result_.metrics["additional_variance"]``). Zou,
    Hastie & Tibshirani's adjusted variance takes the QR decomposition of the
    scores :math:`AX = \tilde Q \tilde R` instead and reports
    :math:`\tilde R_{jj}^2/(n-1)`, the variance of score :math:`j` not explained
    by the earlier scores; both agree for PCA, but only the form used here sums
    to the variance that ``inverse_transform`` reconstructs.

    **dtypes.** float32 ``X`` gives float32 ``components_`` and float32 results from ``transform``,
    ``fit_transform`` and ``inverse_transform`` (float32 scores), as scikit-learn's ``PCA`` does
    (``preserves_dtype``); float64 stays float64 and other dtypes are read as float64. The fit computes in
    float64 (the covariance or Gram matrix, means, scales and iterations: the data operator holds a float64
    copy of float32 data), the scores and reconstructions are computed in float64 and rounded when
    returned; ``mean_``, ``scale_``, ``explained_variance_`` and ``result_`` stay float64.

    **Score.** ``score(X)`` is the negative held-out error of
    :func:`spcakit.cross_validate` on the rows of ``X``, so that
    ``GridSearchCV(SparsePCA(...), {"k": range(1, p + 1)})`` chooses ``k`` by
    the same criterion as ``spcakit cv``: each centred (and, when
    ``standardize=True``, scaled) row :math:`a` has every entry :math:`a_j`
    predicted from its *other* entries through the loadings,
    :math:`\hat a_j = x_j^\top t_{(j)}` with
    :math:`t_{(j)} = \arg\min_t \|a_{-j} - X_{-j} t\|` (the ``ekf`` scheme
    of Bro et al. 2008; :func:`spcakit.workflows.cv.held_out_error`), and

    .. math:: \operatorname{score}(X) = -\frac{\sum_i \sum_j (a_{ij} - \hat a_{ij})^2}{\sum_i \sum_j a_{ij}^2},

    a fraction of the rows' variance about the training means: at most 0,
    higher is better, ``-1`` when every loading has one nonzero. Scored on
    the held-out fold with the fold's training ``mean_`` and ``scale_``, this is
    the fold error of :func:`spcakit.cross_validate` (negated; equal up to
    rounding), so
    ``GridSearchCV``'s ``mean_test_score`` is minus its ``mean_error`` on the
    same folds; ``GridSearchCV`` then takes the best mean (the ``"min"`` rule),
    while ``spcakit.cross_validate`` defaults to the one-standard-error rule,
    which overshoots a planted support less often (see :mod:`spcakit.workflows.cv`).
    Leaving the variable out keeps each entry from predicting itself, as it
    does through the scores in the reconstruction error, which on the rows a
    model was fitted to only falls as the loadings grow denser (on held-out
    rows the noise that dense loadings fit costs it too, and the two often
    choose the same ``k``). The reconstruction error remains available as
    :meth:`reconstruction_error` (the mean squared error per sample, on the
    method's scale; ``score`` returned its negation before), with
    ``reconstruction_error(X_train) = (n-1)/n * tr(C) * (1 - explained_variance_ratio_.sum())``
    on the training data. A sparse ``X`` is densified one block of rows at a
    time.
    """

    def __init__(
        self,
        n_components: int = 2,
        method: str | MethodSpec = "auto",
        k: int | None = None,
        lam: float | None = None,
        truncator: str | None = None,
        deflator: str | None = None,
        standardize: bool = False,
        center: bool = True,
        random_state: Any = 0,
        params: Mapping[str, Any] | None = None,
        refiner: str | None = None,
        target_cpev: float | None = None,
        bound: str = "fast",
        nonnegative: bool = False,
        missing: str = "auto",
        constraint: str | None = None,
    ) -> None:
        self.n_components = n_components
        self.method = method
        self.k = k
        self.lam = lam
        self.truncator = truncator
        self.deflator = deflator
        self.standardize = standardize
        self.center = center
        self.random_state = random_state
        self.params = params
        self.refiner = refiner
        self.target_cpev = target_cpev
        self.bound = bound
        self.nonnegative = nonnegative
        self.missing = missing
        self.constraint = constraint

    # -- fitting ---------------------------------------------------------------------------------------------
    def fit(self, X: Any, y: Any = None, sample_weight: Any = None) -> SparsePCA:
        """Fit the sparse components to ``X`` (``n_samples x n_features``; ``y`` is ignored).

        ``sample_weight`` (one non-negative number per sample, dense ``X`` only) are
        frequency weights, as in :func:`spcakit.fit`: integer weights give exactly the
        fit to ``X`` with each row repeated that many times; ``mean_`` (what
        :meth:`transform` subtracts) is then the weighted mean and ``scale_`` the
        weighted standard deviations.

        Constant columns (zero variance) are welcome, as in scikit-learn's PCA:
        they get zero loadings in every component (the method runs on the
        other columns) and a :class:`~spcakit.core.errors.ConstantColumnWarning`
        names them; ``k`` above the number of columns that vary is lowered to
        it. ``n_components`` must be at most that number.
        """
        self._fit(X, sample_weight)
        return self

    def fit_transform(self, X: Any, y: Any = None, sample_weight: Any = None) -> np.ndarray:
        """Fit to ``X`` and return its scores (as ``fit(X, sample_weight=...).transform(X)``, validating ``X`` once;
        rows with missing entries scored from their observed entries, as :meth:`transform` scores them)."""
        return self._scores_of_rows(self._fit(X, sample_weight))

    def _fit(self, X: Any, sample_weight: Any = None) -> np.ndarray:
        """Fit and return the validated ``X`` as a float array."""
        center = _check_flag(self.center, "center")
        standardize = _check_flag(self.standardize, "standardize")
        check_arguments(params=self.params)
        check_frame_columns(X, "X")  # a DataFrame's text, category or date columns named, before scikit-learn converts it
        missing = check_missing(self.missing)
        x = _validate(self, X, reset=True, ensure_min_samples=2 if center else 1, ensure_all_finite="allow-nan")
        if missing == "error" and _has_nan(x):
            count = int(np.isnan(x.data if sp.issparse(x) else x).sum())
            raise MissingValuesError(error_text(f"X has {count} missing value(s) (NaN) and missing='error' refuses them",
                                                "SparsePCA(missing='auto') (the default, with a warning) or missing='em'"))
        n_samples, n_features = x.shape
        r = _check_n_components(self.n_components, n_samples, n_features, center)
        k = check_k(self.k, p=n_features)
        registry = get_registry()
        spec = _resolve_method(self.method, self.truncator, self.deflator, registry)
        kwargs = _sparsity_params(k, self.lam, self.params)
        target = _check_target_cpev(self.target_cpev, k, self.lam)
        if self.refiner is not None:
            kwargs["refiner"] = self.refiner
        kwargs["bound"] = self.bound
        if self.nonnegative is not False:  # fit checks the value
            kwargs["nonnegative"] = self.nonnegative
        if self.constraint is not None:  # fit checks the value
            kwargs["constraint"] = self.constraint
        seed = _seed(self.random_state)
        names = None if not hasattr(self, "feature_names_in_") else tuple(self.feature_names_in_)

        # one pass over the data: centred, scaled (when standardising) and recorded by spcakit itself
        fitted: dict[str, Any] = {}

        def fit_problem(matrix: Any) -> Any:
            inputs = InputOptions(center=center, standardize=standardize, feature_names=names, sample_weight=sample_weight,
                                  missing="error")  # NaN were refused or imputed before
            problem = open_input(matrix, inputs).problem
            if target is None:
                result = fit(problem, spec, r, seed=seed, metrics=ESTIMATOR_METRICS, registry=registry, **kwargs)
                fitted["k"] = kwargs.get("k", (result.spec.get("default_k") or {}).get("k"))  # given, or the default
            else:
                from spcakit.workflows.paths import target_k  # noqa: PLC0415 - only for target_cpev

                fitted["k"], result = target_k(problem, spec, r, cpev=target, seed=seed, metrics=ESTIMATOR_METRICS,
                                               registry=registry, **kwargs)  # fmt: skip
            fitted["problem"] = problem
            return result

        if missing != "error" and _has_nan(x):
            from spcakit.workflows.imputation import impute_and_fit  # noqa: PLC0415 - only for data with missing values
            from spcakit.inputs import read_missing  # noqa: PLC0415
            from spcakit.inputs.weights import check_weights  # noqa: PLC0415

            incomplete = read_missing(x, names)
            if sample_weight is not None:  # refused before the EM's warnings, as spcakit.fit refuses them
                sample_weight = check_weights(sample_weight, incomplete.matrix.shape[0], center=center)
            result = impute_and_fit(incomplete, fit_problem, weights=sample_weight,
                                    announce=missing == "auto", stacklevel=4).result  # fmt: skip
        else:
            result = fit_problem(x)
        problem, fitted_k = fitted["problem"], fitted["k"]
        mean = problem.input.mean if center else np.zeros(n_features)
        scale = problem.input.scale if standardize else None
        for message in result.warnings:
            if not isinstance(message, IssuedWarning):  # spcakit.fit issued those itself (constant columns)
                warnings.warn(f"{spec.name}: {message}", ConvergenceWarning, stacklevel=3)

        loadings = result.loadings
        regression, rank = regression_map(loadings)
        if rank < r:
            warnings.warn(
                f"the {r} loadings of {spec.name!r} span only {rank} dimension(s) (some are linearly dependent); "
                "transform gives minimum-norm least-squares scores, which are not unique",
                UserWarning, stacklevel=3,
            )
        total_variance = problem.covariance.trace()
        adjusted = np.asarray(result.metrics["additional_variance"], dtype=float)

        self.components_ = np.ascontiguousarray(loadings.T, dtype=_output_dtype(x))  # float32 data: float32 out
        self.mean_ = mean
        self.scale_ = scale
        self.n_components_ = r
        self.k_ = fitted_k
        self.explained_variance_ = adjusted
        self.explained_variance_ratio_ = adjusted / total_variance
        self.bound_ = np.asarray(result.metrics["bound"], dtype=float)
        self.gap_ = np.asarray(result.metrics["gap"], dtype=float)
        self.orthogonality_violation_ = float(result.metrics["orthogonality_violation"])
        self.score_correlations_ = score_correlations(loading_products(loadings, problem.covariance))
        self.n_iter_ = int(result.iterations)
        self.seed_ = seed
        self._training_rows = n_samples
        self.result_ = result
        self._n_features_out = r
        self._regression = regression if scale is None else regression / scale[:, None]
        return x

    # -- transforming ----------------------------------------------------------------------------------------
    def _scores64(self, x: Any) -> np.ndarray:
        """The scores of the validated ``x`` in float64 (the mean and the regression map are float64)."""
        if sp.issparse(x):  # (X - 1 mu^T) R without densifying X
            return np.asarray(x @ self._regression, dtype=np.float64) - self.mean_ @ self._regression
        return (x - self.mean_) @ self._regression  # type: ignore[no-any-return]

    def _scores(self, x: Any) -> np.ndarray:
        """The scores of the validated ``x``, computed in float64, in ``x``'s dtype (float32 for float32 data)."""
        return self._scores64(x).astype(_output_dtype(x), copy=False)

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.input_tags.allow_nan = self.missing != "error"  # NaN imputed by EM (fit), scored from the rest (transform)
        tags.transformer_tags.preserves_dtype = [np.dtype(d).name for d in PRESERVED_DTYPES]
        return tags

    def get_feature_names_out(self, input_features: Any = None) -> np.ndarray:
        """The names of the scores' columns: ``PC1``, ``PC2``, ..., those of the loadings
        (:attr:`~spcakit.workflows.results.Result.component_names`).

        ``input_features`` are checked against ``feature_names_in_`` as scikit-learn
        checks them, and otherwise not used (each score mixes its component's variables).
        """
        check_is_fitted(self, "_n_features_out")
        _check_feature_names_in(self, input_features, generate_names=False)
        return np.asarray([f"{OUTPUT_PREFIX}{i + 1}" for i in range(self._n_features_out)], dtype=object)

    def transform(self, X: Any) -> np.ndarray:
        """Scores of ``X``: least-squares regression of the centred (scaled) rows on the loadings (see Notes); a
        row with missing entries (NaN, unless ``missing="error"``) is scored from its observed entries alone."""
        check_is_fitted(self)
        check_frame_columns(X, "X")
        missing = check_missing(self.missing)
        x = _validate(self, X, reset=False, **({} if missing == "error" else {"ensure_all_finite": "allow-nan"}))
        return self._scores_of_rows(x)

    def _scores_of_rows(self, x: Any) -> np.ndarray:
        """The scores of validated rows ``x``: :meth:`_scores` where complete, from the observed entries where not."""
        if check_missing(self.missing) == "error" or not _has_nan(x):
            return self._scores(x)
        from spcakit.workflows.imputation import observed_scores  # noqa: PLC0415 - only for data with missing values

        incomplete = _rows_with_nan(x)
        complete = index_sets.difference(np.arange(x.shape[0]), incomplete)
        scores = np.empty((x.shape[0], self.n_components_))
        if complete.size:
            scores[complete] = self._scores64(x[complete])
        rows = x[incomplete]
        rows = np.asarray(rows.toarray() if sp.issparse(rows) else rows, dtype=np.float64)  # the incomplete rows only
        scores[incomplete] = observed_scores(rows, self.result_.loadings, self.mean_, self.scale_)
        return scores.astype(_output_dtype(x), copy=False)

    def inverse_transform(self, X: Any) -> np.ndarray:
        """Rows reconstructed from scores: ``X @ components_`` (times ``scale_``) plus ``mean_``, computed in
        float64 and returned in the scores' dtype (float32 scores give float32 rows)."""
        check_is_fitted(self)
        scores = check_array(X, dtype=list(PRESERVED_DTYPES))
        if scores.shape[1] != self.n_components_:
            raise InvalidDataError(
                f"inverse_transform takes scores with {self.n_components_} columns (one per component); "
                f"got {scores.shape[1]}"
            )
        reconstruction = scores.astype(np.float64, copy=False) @ self.result_.loadings.T  # float64 loadings
        if self.scale_ is not None:
            reconstruction *= self.scale_
        reconstruction += self.mean_
        return reconstruction.astype(_output_dtype(scores), copy=False)

    def score(self, X: Any, y: Any = None) -> float:
        """The negative held-out error of ``X``: each entry predicted from its row's other variables, the squared
        residuals summed over ``X``'s total sum of squares (on the method's scale; see Notes). Higher is better,
        at most 0; comparable with :func:`spcakit.cross_validate`'s errors. ``y`` is ignored.

        On wide data (more variables than training rows) this error tends to keep falling as variables are added,
        so a grid search over ``k`` by it favours dense loadings; a :class:`UserWarning` says so and points to the
        stability choice (:func:`spcakit.stable_k`)."""
        check_is_fitted(self)
        check_frame_columns(X, "X")
        x = _complete(self, X, "score")
        rows = getattr(self, "_training_rows", None)
        if rows is not None and self.n_features_in_ > rows:
            warnings.warn(WIDE_DATA_SCORE, UserWarning, stacklevel=2)
        return -held_out_error(_centred_row_blocks(x, self.mean_, self.scale_), self.result_.loadings)

    def stability(
        self, X: Any, n_resamples: int = 100, *, scheme: str = "subsample", threshold: float = 0.8,
        level: float = 0.95, workers: int | None = 1, client: Any = None,
    ) -> Any:
        """How stable the fitted supports are: the same configuration (method, ``n_components``, the fitted ``k``,
        centring, scaling, parameters, seed) fitted again on ``n_resamples`` resamples of ``X``'s rows
        (:func:`spcakit.stability`, which also says what the record holds and what its error bound assumes).

        ``X`` is the training data, or other complete data of the same columns; their fit on all rows is the
        record's ``result`` (the supports judged). Returns a :class:`~spcakit.workflows.stability.Stability`.
        """
        from spcakit.workflows.stability import stability  # noqa: PLC0415 - only when asked

        check_is_fitted(self)
        check_frame_columns(X, "X")
        x = _validate(self, X, reset=False, ensure_all_finite=True)
        registry = get_registry()
        spec = _resolve_method(self.method, self.truncator, self.deflator, registry)
        kwargs = _sparsity_params(self.k_, self.lam, self.params)
        for name in ("refiner", "constraint"):
            if getattr(self, name) is not None:
                kwargs[name] = getattr(self, name)
        if self.nonnegative is not False:
            kwargs["nonnegative"] = self.nonnegative
        names = None if not hasattr(self, "feature_names_in_") else list(self.feature_names_in_)
        return stability(x, spec, self.n_components_, n_resamples=n_resamples, scheme=scheme, threshold=threshold,
                         level=level, seed=self.seed_, workers=workers, client=client, center=self.center,
                         standardize=self.standardize, feature_names=names, registry=registry, **kwargs)  # fmt: skip

    def reconstruction_error(self, X: Any) -> float:
        r"""The mean squared reconstruction error per sample of ``X``, :math:`\frac1n \sum_i \|a_i - \hat a_i\|^2`
        with :math:`\hat a_i` the projection of the centred (scaled) row onto the loadings' span (see Notes).
        ``-reconstruction_error(X)`` is what ``score`` returned before it became the held-out error; it always
        prefers denser loadings, so it cannot choose ``k``."""
        check_is_fitted(self)
        check_frame_columns(X, "X")
        x = _complete(self, X, "reconstruction_error")
        if sp.issparse(x):
            x = x.astype(np.float64, copy=False)  # float32: the stored entries only, to sum squares in float64
            return _sparse_residual(x, self.mean_, self.scale_, self._scores64(x), self.result_.loadings.T) / x.shape[0]
        rows = x - self.mean_
        scores = rows @ self._regression
        if self.scale_ is not None:
            rows /= self.scale_
        residual = rows - scores @ self.result_.loadings.T  # the float64 loadings (components_ may be float32)
        return float(np.einsum("ij,ij->", residual, residual)) / x.shape[0]
