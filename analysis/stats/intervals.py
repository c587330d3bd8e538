"""Interval methods by name: every interval in comparisons.csv comes from one function in a registry.

:data:`SEED_METHODS` are the intervals over seeds that ``analysis.ci_methods``
names; :data:`CROSSED_METHODS` the intervals over new seeds and new items that
``analysis.crossed_methods`` names (rows ``crossed_<name>``). Config parsing
refuses other names, and so does the compute path (:func:`lookup`): there is
no fallback to another method.

A seed method is a function of a :class:`Block` (K rows of n paired
differences and the options it was built with) returning ``(ci (K, 2), note (K,))``; a
non-empty note says which interval was shown in place of the method's. What
several methods share (the sign-flip enumeration, the bootstrap resamples and
their one quantile pass) is computed once per block, on first use. A crossed
method is a function of a :class:`Crossed` returning ``ci (K, 2)``.

The blocks take their options as keyword arguments (:meth:`armlab.analysis.settings.Settings.interval_options`
gives a configured analysis's), never the analysis settings: this module knows nothing of the config.

Adding a method: one function here, one entry in its registry, one test.
Blocks with the same number of seeds draw from
``numpy.random.default_rng([bootstrap_seed, n_seeds, purpose])``, so results
do not depend on which other comparisons are in the config.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from functools import cached_property
from typing import TypedDict, cast

import numpy as np

from armlab.analysis.errors import AnalysisInputError
from armlab.analysis.stats import normal_theory, resampling
from armlab.registry import Registry

FIRST_METHOD = "sign_flip"  # the interval of the test that decides, always the first row
UNPAIRED_METHOD = "permutation"  # its place for independent runs (analysis.pairing: unpaired)
BCA_FALLBACK = "BCa undefined (no spread in the bootstrap); percentile interval shown"
_SEEDS, _SIGN_FLIP, _CROSSED, _PERMUTATION = 0, 1, 2, 3  # purposes in the generator seed


def first_method(pairing: str) -> str:
    """The ``ci_method`` of the interval of the test that decides, for ``analysis.pairing``."""
    return UNPAIRED_METHOD if pairing == "unpaired" else FIRST_METHOD


class ExactTestOptions(TypedDict):
    """The keyword arguments of the exact tests."""

    confidence: float
    alpha: float
    margin: float
    max_exact: int
    resamples: int


@dataclass(frozen=True)
class ExactTest:
    """The options of the exact tests (:func:`armlab.analysis.stats.resampling.sign_flip`, ``permutation``): interval
    ``confidence``, TOST ``alpha`` and equivalence ``margin``, enumeration up to ``max_exact`` seeds (runs),
    ``resamples`` drawn sign patterns (splits) beyond."""

    confidence: float
    alpha: float
    margin: float
    max_exact: int
    resamples: int

    def options(self) -> ExactTestOptions:
        """The keyword arguments of the tests: the fields, named as the tests name them."""
        return cast(ExactTestOptions, asdict(self))


class Block:
    """K rows of n paired differences, their options, and the work the interval methods share."""

    def __init__(
        self, d: np.ndarray, *, exact: ExactTest, resamples: int, seed: int, methods: Iterable[str] = ()
    ) -> None:
        """``exact``: the sign-flip test's options (its ``confidence`` is every interval's); ``resamples``: the
        bootstrap's; ``seed``: of every generator (``analysis.bootstrap_seed``); ``methods``: the seed methods
        that will be asked for besides the sign-flip interval."""
        self.d = np.atleast_2d(np.asarray(d, dtype=float))
        self.n = self.d.shape[1]
        self.exact, self.confidence = exact, exact.confidence
        self.resamples, self.seed = resamples, seed
        self.methods = tuple(methods)

    def rng(self, purpose: int) -> np.random.Generator:
        """The generator of this block's seed count for one purpose (seeds bootstrap, sign flips, crossed)."""
        return np.random.default_rng([self.seed, self.n, purpose])

    @cached_property
    def sign_flip(self) -> dict[str, np.ndarray]:
        """:func:`armlab.analysis.stats.resampling.sign_flip` of every row: p-value, inverted interval and TOST."""
        return resampling.sign_flip(self.d, rng=self.rng(_SIGN_FLIP), **self.exact.options())

    @property
    def test(self) -> dict[str, np.ndarray]:
        """The test that decides: :attr:`sign_flip`."""
        return self.sign_flip

    @property
    def mean(self) -> np.ndarray:
        return self.d.mean(axis=1)

    @property
    def spread(self) -> np.ndarray:
        """The sd of the paired differences, which scales the test's power."""
        return normal_theory.spread(self.d)

    @cached_property
    def t(self) -> np.ndarray:
        """The paired t interval of every row."""
        return normal_theory.t_interval(self.d, self.confidence)

    @cached_property
    def bootstrap(self) -> tuple[dict[str, np.ndarray], np.ndarray]:
        """``({method: (K, 2)}, defined (K,))`` for the bootstrap methods of :attr:`methods`, one quantile pass."""
        counts = resampling.resample_counts(self.rng(_SEEDS), self.n, self.resamples)
        boot = resampling.bootstrap_means(self.d, counts)
        wanted = [m for m in self.methods if m in resampling.BOOTSTRAP]
        found, defined = resampling.bootstrap_intervals(boot, self.d, wanted, (self.confidence,))
        return {m: ci[:, 0] for m, ci in found.items()}, defined

    def no_note(self) -> np.ndarray:
        return np.full(len(self.d), "", dtype=object)


class UnpairedBlock:
    """K rows of independent runs: the arm's n and the reference's n_reference (``analysis.pairing: unpaired``)."""

    methods = ()  # the other intervals are of paired differences

    def __init__(self, x: np.ndarray, y: np.ndarray, *, exact: ExactTest, seed: int) -> None:
        """``exact``: the permutation test's options; ``seed``: of its generator (``analysis.bootstrap_seed``)."""
        self.x, self.y = np.atleast_2d(np.asarray(x, dtype=float)), np.atleast_2d(np.asarray(y, dtype=float))
        self.n, self.n_reference = self.x.shape[1], self.y.shape[1]
        self.exact, self.confidence, self.seed = exact, exact.confidence, seed

    @cached_property
    def test(self) -> dict[str, np.ndarray]:
        """:func:`armlab.analysis.stats.resampling.permutation` of every row: p-value, inverted interval and TOST."""
        rng = np.random.default_rng([self.seed, self.n, self.n_reference, _PERMUTATION])
        return resampling.permutation(self.x, self.y, rng=rng, **self.exact.options())

    @property
    def mean(self) -> np.ndarray:
        return self.x.mean(axis=1) - self.y.mean(axis=1)

    @property
    def spread(self) -> np.ndarray:
        """The pooled sd of runs within an arm, which scales the test's power."""
        squares = ((self.x - self.x.mean(axis=1, keepdims=True)) ** 2).sum(axis=1)
        squares += ((self.y - self.y.mean(axis=1, keepdims=True)) ** 2).sum(axis=1)
        return np.sqrt(squares / (self.n + self.n_reference - 2))


def sign_flip_interval(block: Block) -> tuple[np.ndarray, np.ndarray]:
    """The shifts the exact sign-flip test does not reject (Hartigan 1969); (-inf, inf) with a note where unbounded."""
    unbounded = ~np.isfinite(block.sign_flip["ci"]).all(axis=1)
    note = np.where(unbounded, unbounded_note(block.n, block.confidence), "")
    return block.sign_flip["ci"], note.astype(object)


def unbounded_note(n: int, confidence: float, n_reference: int | None = None) -> str:
    """Why an exact test's interval is unbounded: with n seeds (or n and n_reference runs) no data can make the
    test reject at 1 - confidence."""
    sizes = f"{n} seeds" if n_reference is None else f"{n} and {n_reference} unpaired runs"
    return f"unbounded: with {sizes} the exact test cannot reject at {1 - confidence:.3g}"


def permutation_interval(block: UnpairedBlock) -> tuple[np.ndarray, np.ndarray]:
    """The shifts the exact two-sample permutation test does not reject (Pitman 1937); (-inf, inf) where unbounded."""
    ci = block.test["ci"]
    unbounded = ~np.isfinite(ci).all(axis=1)
    note = np.where(unbounded, unbounded_note(block.n, block.confidence, block.n_reference), "")
    return ci, note.astype(object)


def t_interval(block: Block) -> tuple[np.ndarray, np.ndarray]:
    """The paired t interval (Student 1908)."""
    return block.t, block.no_note()


def percentile_interval(block: Block) -> tuple[np.ndarray, np.ndarray]:
    """The percentile bootstrap interval over seeds (Efron & Tibshirani 1993, ch. 13)."""
    return block.bootstrap[0]["percentile"], block.no_note()


def bca_interval(block: Block) -> tuple[np.ndarray, np.ndarray]:
    """The BCa bootstrap interval over seeds (Efron 1987); the percentile one, with a note, where BCa is undefined."""
    found, defined = block.bootstrap
    return found["bca"], np.where(defined, "", BCA_FALLBACK).astype(object)


SEED_METHODS = Registry(
    "interval method",
    {
        "sign_flip": sign_flip_interval,
        "t": t_interval,
        "percentile": percentile_interval,
        "bca": bca_interval,
    },
)


@dataclass(frozen=True)
class Crossed:
    """Item-level differences of P comparisons on M weighted measures (see :func:`crossed_intervals`)."""

    item_diffs: list  # per benchmark, (P, n, m_b): comparisons x matched seeds x items
    weights: np.ndarray  # (M, B): each measure a weighted mean of benchmark means
    confidence: float
    resamples: int  # of the pigeonhole bootstrap
    seed: int  # of its generator (analysis.bootstrap_seed)

    @property
    def n(self) -> int:
        return self.item_diffs[0].shape[1]


def components_interval(crossed: Crossed) -> np.ndarray:
    """Mean +- t se, variance components, Satterthwaite df (:func:`.normal_theory.crossed_interval`)."""
    return normal_theory.crossed_interval(crossed.item_diffs, crossed.weights, crossed.confidence)


def pigeonhole_interval(crossed: Crossed) -> np.ndarray:
    """Percentile interval of the pigeonhole bootstrap over seeds and items (Owen 2007), conservative."""
    rng = np.random.default_rng([crossed.seed, crossed.n, _CROSSED])
    per_benchmark = resampling.crossed_bootstrap_means(crossed.item_diffs, rng, crossed.resamples)  # (P, R, B)
    boot = (per_benchmark @ crossed.weights.T).transpose(0, 2, 1).reshape(-1, crossed.resamples)
    return resampling.bootstrap_intervals(boot, None, ["percentile"], (crossed.confidence,))[0]["percentile"][:, 0]


CROSSED_METHODS = Registry("interval method", {"components": components_interval, "percentile": pigeonhole_interval})


def seed_intervals(block: Block | UnpairedBlock) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """``{method: (ci, note)}``: the first interval, then each of ``block.methods`` in order."""
    if isinstance(block, UnpairedBlock):
        return {UNPAIRED_METHOD: permutation_interval(block)}
    names = [FIRST_METHOD, *(m for m in block.methods if m != FIRST_METHOD)]
    return {name: SEED_METHODS.entry(name, "analysis.ci_methods", AnalysisInputError)(block) for name in names}


def crossed_intervals(crossed: Crossed, methods: Iterable[str]) -> dict[str, np.ndarray]:
    """``{"crossed_<method>": ci (P * M, 2)}``, rows comparison-major and measure-minor."""
    return {
        f"crossed_{m}": CROSSED_METHODS.entry(m, "analysis.crossed_methods", AnalysisInputError)(crossed)
        for m in methods
    }
