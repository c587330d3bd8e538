"""Group-sequential paired comparisons: decide after each wave of seeds whether an arm differs, is equivalent, or
needs more seeds, with the family-wise error of its difference claims over all looks and arms at most alpha
(equivalence is claimed per arm at alpha, like the fixed design's TOST).

The statistic of an arm at a look with n seeds is S = sum of its paired differences d_1..d_n (seeds in the fixed
design order). Under H0 (each d_i symmetric about 0) every sign pattern of the d_i is equally likely given their
absolute values (Fisher 1935), and the signs of later seeds are independent of earlier ones, so the joint law of
(S_1, S_2, ...) over the looks is the law of the partial sums over the 2^n sign patterns (paths). At look j the
boundary is the smallest value that the paths still below every earlier boundary exceed with probability at most
the spending function's increment alpha*(t_j) - (probability already spent), t_j = n_j / max (error spending,
Lan & DeMets 1983, Biometrika 70; permutation version as in AdaStop, Mathieu et al. 2023). Given the absolute
values the probability that the observed path ever crosses is at most alpha*(1) = alpha, whatever the data, so
the test is exact at any number of seeds. When the design's ``max`` is at most ``max_exact`` the paths are
enumerated; beyond, every look uses the observed path and the same ``resamples`` random ones, whose
exchangeability with it keeps the test's error at most alpha on average over the draws (a randomization test).

Across the arms of a family: a step-down (Holm) group-sequential procedure. At each look, every open arm is
tested at level alpha / (arms not yet rejected); a rejection raises the others' level at once (Ye, Li, Liu & Sun
2013, Stat. Med. 32; Maurer & Bretz 2013, Stat. Biopharm. Res. 5). With discrete permutation laws a boundary need
not fall as the level rises, so the boundary used at level a is the largest of the boundaries at the levels
alpha/m, ..., alpha/1 that are >= a: then the first false rejection, which happens at a level <= alpha/m0 (m0
true nulls), implies a crossing of that true null's own level-alpha/m0 boundary, and the union bound gives
FWER <= alpha (docs/statistics.md).

Equivalence within +-margin: the two one-sided tests of mean <= -margin and mean >= margin, each a one-sided
sequential sign-flip test at alpha with the same spending; the arm is equivalent once both have rejected
(an intersection-union test). Stopping for equivalence never raises the efficacy error (it only removes looks).

Intervals valid after stopping: the repeated confidence interval at a look is the set of shifts theta the
level-(1 - confidence) sequential test of mean = theta does not reject there (Jennison & Turnbull 1989, JRSS B
51); the probability that any look's interval misses the true mean is at most 1 - confidence.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import overload

import numpy as np
from scipy.special import ndtr, ndtri

from armlab.analysis.errors import AnalysisInputError
from armlab.analysis.stats.resampling import kth_from_end
from armlab.configfile import SEQUENTIAL_DEFAULTS
from armlab.registry import Registry
from armlab.spec import DEFAULT_ANALYSIS, ArmLook

DIFFERS, EQUIVALENT, INCONCLUSIVE, CONTINUE = "differs", "equivalent", "inconclusive", "continue"


def obrien_fleming(t: np.ndarray | float, alpha: float) -> np.ndarray:
    """O'Brien-Fleming-type spending 2 - 2 Phi(z_{1-alpha/2} / sqrt(t)) (Lan & DeMets 1983, Biometrika 70)."""
    t = np.asarray(t, dtype=float)
    with np.errstate(divide="ignore"):
        return np.where(t > 0, 2 - 2 * ndtr(ndtri(1 - alpha / 2) / np.sqrt(np.maximum(t, 1e-300))), 0.0)


def pocock(t: np.ndarray | float, alpha: float) -> np.ndarray:
    """Pocock-type spending alpha ln(1 + (e - 1) t) (Lan & DeMets 1983, Biometrika 70)."""
    return alpha * np.log1p((math.e - 1) * np.asarray(t, dtype=float))


@dataclass(frozen=True)
class SpendingRule:
    """A Lan-DeMets error-spending function and the name the report gives it."""

    spent: Callable[[np.ndarray | float, float], np.ndarray]  # cumulative error allowed by information fraction t
    label: str  # the report's name of the rule ("Error spending: <label> spending of α = ...")


SPENDING: Registry[SpendingRule] = Registry(
    "spending rule",
    {
        "obrien_fleming": SpendingRule(obrien_fleming, "O'Brien–Fleming-type"),
        "pocock": SpendingRule(pocock, "Pocock-type"),
    },
)


@dataclass(frozen=True)
class Design:
    """A group-sequential seed design: ``initial`` seeds, then ``wave`` more per look, at most ``max``."""

    initial: int
    wave: int
    max: int
    # SEQUENTIAL_DEFAULTS mixes value types, so its entries type as object
    spending: str = SEQUENTIAL_DEFAULTS["spending"]
    start: int = SEQUENTIAL_DEFAULTS["start"]  # the first seed; seeds run in increasing order
    # the test's settings: by default those of a configured analysis (analysis.alpha, .equivalence_margin, ...)
    alpha: float = DEFAULT_ANALYSIS.alpha
    margin: float = DEFAULT_ANALYSIS.equivalence_margin
    confidence: float = DEFAULT_ANALYSIS.confidence
    max_exact: int = DEFAULT_ANALYSIS.exact_max_seeds
    resamples: int = DEFAULT_ANALYSIS.sign_flip_resamples
    seed: int = DEFAULT_ANALYSIS.bootstrap_seed

    def __post_init__(self) -> None:
        SPENDING.entry(self.spending, "seeds.spending", AnalysisInputError)
        if not 1 <= self.initial <= self.max or self.wave < 1:
            raise AnalysisInputError(
                f"seeds: expected 1 <= initial <= max and wave >= 1; got initial {self.initial}, wave {self.wave}, "
                f"max {self.max}"
            )

    @property
    def looks(self) -> tuple[int, ...]:
        """The number of seeds at each planned look: initial, initial + wave, ..., max (the last wave may be short)."""
        return (*range(self.initial, self.max, self.wave), self.max)

    @overload
    def spent(self, n: int, level: float) -> float: ...
    @overload
    def spent(self, n: Sequence[int], level: float) -> np.ndarray: ...
    def spent(self, n: int | Sequence[int], level: float) -> float | np.ndarray:
        """Cumulative error the rule allows by a look with n seeds (or by each of several looks), at ``level``."""
        allowed = SPENDING[self.spending].spent(np.asarray(n) / self.max, level)
        return float(allowed) if np.ndim(n) == 0 else allowed


def _paths(x: np.ndarray, looks: Sequence[int], design: Design) -> list[np.ndarray]:
    """Partial sums S_j of s_i x_i at each look's seed count over its sign paths; the observed path is index 0.

    Enumerated: the 2^n_j sign patterns of look j's seeds, built by doubling, so that the first n_i signs of a
    look-j path are the low n_i bits of its index: the look-j paths extending look-i path p are p + k 2^n_i.
    Drawn (at every look of a design whose ``max`` is above ``design.max_exact``): the observed path and
    ``design.resamples`` random ones, the same rows at every look (the draws depend only on the design), so a
    later look extends the earlier looks' paths.
    """
    if design.max <= design.max_exact:  # by the design, not this look: every look of a design counts alike
        # doubled in place in one buffer (half the memory traffic of concatenating): paths [0, k) get +value,
        # their copies [k, 2k) get -value
        sums, width, out = np.zeros(2 ** looks[-1]), 1, []
        for j, stop in enumerate(looks):
            for value in x[(looks[j - 1] if j else 0) : stop]:
                np.subtract(sums[:width], value, out=sums[width : 2 * width])
                sums[:width] += value
                width *= 2
            out.append(sums[:width].copy())
        return out
    rng = np.random.default_rng([design.seed, 14, design.max])
    signs = np.where(rng.random((design.resamples + 1, design.max)) < 0.5, -1.0, 1.0)[:, : looks[-1]]
    signs[0] = 1.0
    cumulative = np.cumsum(signs * x[None, : looks[-1]], axis=1)
    return [cumulative[:, stop - 1] for stop in looks]


def boundaries(stats: Sequence[np.ndarray], allowed: Sequence[float] | np.ndarray, tol: float) -> np.ndarray:
    """The boundary at each look: first crossings (statistic > boundary + tol) have at most ``allowed`` mass.

    ``stats[j]``: the statistic of every path of look j (equally likely; a look with k times as many paths as
    the one before extends each earlier path k ways, see :func:`_paths`); ``allowed[j]``: the cumulative share
    of paths the rule lets cross by look j. A path crosses at j when it is above the boundary there and below
    every earlier one. The boundary is the (c + 1)-th largest statistic of the paths still below, c the number
    of paths still allowed; ties with it do not cross, so the crossing share never exceeds the allowance. Each
    look is computed on its own paths, so a boundary does not depend on how many looks follow.
    """
    alive, crossed, out = np.ones(1, dtype=bool), 0, np.empty(len(stats))
    for j, stat in enumerate(stats):
        extend = len(stat) // len(alive)
        # path p of the last look extends to p + k len(alive) (see _paths): the alive flags repeat, k = 0..extend-1
        alive, crossed = np.broadcast_to(alive, (extend, len(alive))).flatten(), crossed * extend
        budget = int(math.floor(allowed[j] * len(stat) * (1 + 1e-12))) - crossed
        live = stat[alive]
        if budget <= 0 or live.size == 0:
            out[j] = np.inf
            continue
        if budget >= live.size:
            out[j] = -np.inf
        elif live.size >= 1 << 14:  # where a sampled bound beats a partition (resampling.kth_from_end)
            out[j] = kth_from_end(live[None, :], budget + 1, largest=True)[0]
        else:
            live.partition(live.size - budget - 1)  # in place: live is already a copy of the paths still below
            out[j] = live[live.size - budget - 1]
        over = alive & (stat > out[j] + tol)
        crossed += int(over.sum())
        alive &= ~over
    return out


def _tolerance(x: np.ndarray) -> float:
    """Sums within this of a boundary are ties (rounding of equal sums), which never cross."""
    return 1e-10 * (float(np.abs(x).sum()) + 1e-300)


def crossing(
    x: np.ndarray,
    design: Design,
    levels: Sequence[float] | np.ndarray,
    side: str = "two-sided",
    n_looks: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """``(observed statistic (looks,), boundary (looks, levels))`` of the tests at ``levels``, first ``n_looks`` looks.

    ``side``: ``two-sided`` (|S|), ``greater`` (S) or ``less`` (-S); ``x`` holds at least the seeds of those looks.
    """
    looks = design.looks[: n_looks or len(design.looks)]
    x = np.asarray(x, dtype=float)
    if len(x) < looks[-1]:
        raise AnalysisInputError(f"sequential test: {len(x)} differences, but look {len(looks)} needs {looks[-1]}")
    sign = {"two-sided": None, "greater": 1.0, "less": -1.0}[side]
    stats = [np.abs(s) if sign is None else sign * s for s in _paths(x, looks, design)]
    tol = _tolerance(x[: looks[-1]])
    bounds = [boundaries(stats, design.spent(looks, level), tol) for level in levels]
    return np.array([s[0] for s in stats]), np.stack(bounds, axis=1)


def levels_of(alpha: float, m: int) -> np.ndarray:
    """The step-down levels of a family of m arms: alpha/m, alpha/(m-1), ..., alpha."""
    return alpha / np.arange(m, 0, -1)


def efficacy_boundaries(x: np.ndarray, design: Design, m: int, n_looks: int) -> np.ndarray:
    """Two-sided boundaries (looks x levels) at the step-down levels, made non-increasing in the level.

    Column i is the boundary at level alpha/(m - i); each is replaced by the largest boundary among the levels
    at or above it, which makes the step-down valid despite discrete laws (module docstring).
    """
    raw = crossing(x, design, levels_of(design.alpha, m), n_looks=n_looks)[1]
    return np.maximum.accumulate(raw[:, ::-1], axis=1)[:, ::-1]


@dataclass(frozen=True)
class ArmPath:
    """What one arm's decisions need at each look its seeds cover (see :func:`arm_path`)."""

    x: np.ndarray  # paired differences in seed order
    statistic: np.ndarray  # |S| at each look
    efficacy: np.ndarray  # (looks, m) boundaries of |S| at the step-down levels
    lower: np.ndarray  # mean <= -margin rejected by each look (cumulative)
    upper: np.ndarray  # mean >= margin rejected by each look (cumulative)
    tol: float


def arm_path(x: np.ndarray, design: Design, m: int) -> ArmPath:
    """Statistics and boundaries of an arm in a family of m arms, at every look its differences ``x`` cover."""
    x = np.asarray(x, dtype=float)
    n_looks = sum(n <= len(x) for n in design.looks)
    if n_looks == 0:
        raise AnalysisInputError(f"sequential test: {len(x)} seed(s), fewer than the first look's {design.initial}")
    x = x[: design.looks[n_looks - 1]]
    found = []
    for shift, side in ((-design.margin, "greater"), (design.margin, "less")):
        stat, bound = crossing(x - shift, design, [design.alpha], side, n_looks)
        found.append(np.logical_or.accumulate(stat > bound[:, 0] + _tolerance(x - shift)))
    stat = np.abs(np.cumsum(x)[np.asarray(design.looks[:n_looks]) - 1])
    return ArmPath(x, stat, efficacy_boundaries(x, design, m, n_looks), found[0], found[1], _tolerance(x))


def family_look(
    paths: Mapping[str, ArmPath],
    open_arms: Sequence[str],
    rejected: Sequence[str],
    design: Design,
    look: int,
    family: str = "",
    reference: str = "",
) -> list[ArmLook]:
    """Decide every open arm of a family at ``look`` (1-based), given the arms rejected at earlier looks.

    ``paths``: arm -> :func:`arm_path`, for every arm of the family (open ones cover the look); the family size m
    counts all of them, open or stopped. The step-down tests the open arms at alpha / (m - rejections),
    repeating within the look while rejections raise the level.
    """
    m, n, j = len(paths), design.looks[look - 1], look - 1
    done, level_at = set(rejected), {}
    while True:
        index = len(done)  # column of level alpha / (m - |done|)
        for arm in open_arms:
            if arm not in done:
                level_at[arm] = index
        new = [
            a for a in open_arms if a not in done and paths[a].statistic[j] > paths[a].efficacy[j, index] + paths[a].tol
        ]
        if not new:
            break
        done.update(new)
    out = []
    for arm in open_arms:
        path = paths[arm]
        x, index = path.x[:n], level_at[arm]
        low, high = bool(path.lower[j]), bool(path.upper[j])
        last = look == len(design.looks)
        decision = DIFFERS if arm in done else EQUIVALENT if (low and high) else INCONCLUSIVE if last else CONTINUE
        scale = math.sqrt(float(np.sum(x**2))) or 1.0
        out.append(
            ArmLook(
                family,
                arm,
                reference,
                look,
                n,
                float(x.mean()),
                float(x.sum()) / scale,
                float(path.efficacy[j, index]) / scale,
                float(levels_of(design.alpha, m)[index]),
                decision,
                low,
                high,
            )
        )
    return out


def run_family(
    diffs: Mapping[str, np.ndarray], design: Design, family: str = "", reference: str = "", upto: int | None = None
) -> list[ArmLook]:
    """Every look of a family from the start, up to ``upto`` (default: until every arm has stopped).

    ``diffs``: arm -> paired differences in seed order; an arm that stopped needs only the seeds up to its stop.
    The decisions at a look use only the seeds of that look, so replaying the looks gives the recorded ones.
    """
    if upto is not None and not 1 <= upto <= len(design.looks):
        raise AnalysisInputError(f"family {family}: look {upto} is not one of the design's {len(design.looks)} looks")
    m = len(diffs)
    paths = {arm: arm_path(x, design, m) for arm, x in diffs.items()}
    open_arms, records = list(diffs), []
    rejected: list[str] = []
    for look in range(1, (upto or len(design.looks)) + 1):
        short = [a for a in open_arms if len(paths[a].statistic) < look]
        if short:
            raise AnalysisInputError(
                f"family {family}: look {look} needs {design.looks[look - 1]} seeds of arm(s) {short}; "
                f"they have {[len(diffs[a]) for a in short]}"
            )
        rows = family_look(paths, open_arms, rejected, design, look, family, reference)
        records += rows
        rejected += [r.arm for r in rows if r.decision == DIFFERS]
        open_arms = [r.arm for r in rows if r.decision == CONTINUE]
        if not open_arms:
            break
    return records


def repeated_interval(x: np.ndarray, design: Design, n_looks: int) -> tuple[float, float]:
    """The repeated confidence interval at look ``n_looks`` (Jennison & Turnbull 1989): theta not rejected there.

    Found by bisection on each side of the mean; infinite where no shift is rejected (too few seeds).
    """
    x = np.asarray(x, dtype=float)[: design.looks[n_looks - 1]]
    level = 1 - design.confidence

    def rejects(theta: float) -> bool:
        stat, bound = crossing(x - theta, design, [level], n_looks=n_looks)
        return bool(stat[-1] > bound[-1, 0] + _tolerance(x - theta))

    mean, width = float(x.mean()), 10 * (float(np.abs(x - x.mean()).max()) + abs(float(x.mean())) + 1e-12)
    ends = []
    for direction in (-1.0, 1.0):
        far = mean + direction * width
        if not rejects(far):
            ends.append(direction * np.inf)
            continue
        inside, outside = mean, far
        for _ in range(60):
            if abs(outside - inside) <= 1e-9 * width:
                break
            middle = (inside + outside) / 2
            inside, outside = (inside, middle) if rejects(middle) else (middle, outside)
        ends.append(inside)
    return ends[0], ends[1]
