"""Human-readable tables: the comparisons as Markdown and LaTeX, and the Markdown report.

Markdown (and the HTML report) render the display frame of
:func:`comparison_display`, one column per interval method; LaTeX is laid out
as a paper table (:func:`latex_table`). All are in points (score x 100), and
all state the same :func:`verdicts`.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from armlab.analysis.outputs import AnalysisResult

FALLBACK_MARK = "†"
# a comparison: a row of the table as a pd.Series or an itertuples() namedtuple, its columns read as attributes
Row = Any


def points(x: float) -> str:
    """A difference in score units as signed points (score x 100), two decimals."""
    return f"{round(100 * x, 2) + 0.0:+.2f}"  # + 0.0: no "-0.00"


def is_unpaired(table: pd.DataFrame) -> bool:
    """Whether the comparisons are of independent runs (``analysis.pairing: unpaired``)."""
    return bool((table["pairing"] == "unpaired").any())


def test_name(table: pd.DataFrame) -> str:
    """The test that decides, in words."""
    return "exact permutation test of independent runs (unpaired)" if is_unpaired(table) else "exact sign-flip test"


def sizes_text(row: Row) -> str:
    """What a comparison rests on: "n seeds", or "n vs m unpaired runs"."""
    if getattr(row, "pairing", "paired") == "unpaired":
        return f"{row.n_seeds} vs {row.n_reference_seeds} unpaired runs"
    return f"{row.n_seeds} seeds"


def _p(x: float) -> str:
    return f"{x:.3g}"


def _mde(x: float) -> str:
    return "∞" if np.isinf(x) else ("—" if np.isnan(x) else f"{100 * x:.2f}")


def _mde_range(row: pd.Series) -> str:
    """``"MDE (low–high)"`` in points."""
    shown = _mde(row["mde"])
    if not np.isfinite(row["mde"]):
        return shown
    return f"{shown} ({_mde(row['mde_low'])}–{_mde(row['mde_high'])})"


def equivalence_shown(table: pd.DataFrame) -> pd.Series:
    """The equivalence column in words: yes, no, "not attainable with n seeds" (no data could say yes at the level of
    its Holm step) or "not tested (gate closed)" (a secondary cell whose equivalence gate stayed closed)."""
    said = np.where(table["equivalent"].astype(bool), "yes", "no")
    shown = [
        "not tested (gate closed)"
        if np.isnan(row.eq_decision_level)
        else f"not attainable with {sizes_text(row)}"
        if np.isinf(row.eq_decision_low)
        else yes
        for row, yes in zip(table.itertuples(), said)
    ]
    return pd.Series(shown, index=table.index)


def higher_is_better(table: pd.DataFrame) -> pd.Series:
    """Whether higher is better on each row."""
    return table["higher_is_better"].astype(bool)


NOT_TESTED = "not tested"
VERDICTS = ("better", "worse", "equivalent", "inconclusive", NOT_TESTED)


def verdict(row: Row) -> str:
    """Plain-word verdict of one comparison row (one of :data:`VERDICTS`).

    ``better`` / ``worse``: significant under the family's gatekept Holm with
    a mean difference in the better / worse direction (positive, or negative
    for a measure where lower is better, such as ``optimality_gap``);
    ``equivalent``: not significant and the equivalence TOST, under the same
    gatekept Holm, rejects |difference| >= δ; ``not tested``: a secondary cell
    both of whose gates stayed closed; ``inconclusive``: none of these
    (including a test that no data could make reject, see :func:`verdict_evidence`).
    """
    gain = row.mean_diff if bool(row.higher_is_better) else -row.mean_diff
    if bool(row.reject) and gain != 0:
        return "better" if gain > 0 else "worse"
    if bool(row.equivalent):
        return "equivalent"
    if np.isnan(row.decision_level) and np.isnan(row.eq_decision_level):
        return NOT_TESTED
    return "inconclusive"


def verdicts(table: pd.DataFrame) -> np.ndarray:
    """:func:`verdict` of each comparison row."""
    return np.array([verdict(row) for row in table.itertuples()], dtype=object)


def margin_text(margin: float) -> str:
    """The equivalence margin in points: "±1 point", "±0.5 points"."""
    shown = f"{100 * margin:g}"
    return f"±{shown} point{'' if shown == '1' else 's'}"


def _at_level(level: float) -> str:
    return f"({100 * level:.3g}%)"


def difference_evidence(row: Row, fmt: Callable[[float], str] = points) -> str:
    """The difference test beside a verdict: its interval at Holm's level and Holm p; "cannot be significant with n
    seeds" where no data could make it reject at that level; "difference not tested (gate closed)"."""
    if np.isnan(row.decision_level):
        return "difference not tested (gate closed)"
    if np.isinf(row.decision_low) and np.isinf(row.decision_high):
        return f"cannot be significant with {sizes_text(row)} at Holm's level {_at_level(row.decision_level)}"
    shown = interval_text(row.decision_low, row.decision_high, fmt)
    return f"interval at Holm's level {shown} {_at_level(row.decision_level)}, Holm p {_p(row.p_holm)}"


def equivalence_evidence(row: Row, fmt: Callable[[float], str] = points) -> str:
    """The equivalence TOST beside a verdict: its interval at Holm's level against the margin and its Holm p;
    "cannot be equivalent within ±δ with n seeds" where no data could pass it at that level; "equivalence not
    tested (gate closed)"."""
    margin = margin_text(row.equivalence_margin)
    if np.isnan(row.eq_decision_level):
        return "equivalence not tested (gate closed)"
    if np.isinf(row.eq_decision_low) or np.isinf(row.eq_decision_high):
        return f"cannot be equivalent within {margin} with {sizes_text(row)} at Holm's level"
    shown = interval_text(row.eq_decision_low, row.eq_decision_high, fmt)
    inside = "inside" if bool(row.equivalent) else "not inside"
    return (
        f"TOST interval at Holm's level {shown} {_at_level(row.eq_decision_level)} {inside} {margin}, "
        f"TOST Holm p {_p(row.p_equivalence_holm)}"
    )


def verdict_evidence(row: Row, fmt: Callable[[float], str] = points) -> str:
    """What is shown beside a row's verdict, so that it supports the word: better/worse, the difference's interval
    at Holm's level (it excludes 0); equivalent, the TOST's interval at Holm's level (inside ±δ); inconclusive, both
    (or why one could not decide); not tested, that the gates stayed closed."""
    said = verdict(row)
    if said in ("better", "worse"):
        return difference_evidence(row, fmt)
    if said == "equivalent":
        return equivalence_evidence(row, fmt)
    if said == NOT_TESTED:
        return "gate closed: the primary comparisons did not all decide"
    return f"{difference_evidence(row, fmt)}; {equivalence_evidence(row, fmt)}"


def verdict_line(row: Row) -> str:
    """The console's line for one comparison row (``armlab analyze``, ``armlab summary``, the workflow's last lines,
    :func:`armlab.analysis.api.verdicts`): ``family: arm vs reference on measure: verdict, Δ d points, evidence
    (n seeds)``, the evidence that of :func:`verdict_evidence`; the seed count is not repeated where the evidence
    names it."""
    evidence, sizes = verdict_evidence(row), sizes_text(row)
    tail = "" if sizes in evidence else f" ({sizes})"
    return (
        f"{row.family}: {row.arm} vs {row.reference} on {row.measure}: {verdict(row)}, "
        f"Δ {points(row.mean_diff)} points, {evidence}{tail}{numerics_flag(row)}"
    )


NOT_ROBUST = "not robust to numerics"


def not_robust(table: pd.DataFrame) -> np.ndarray:
    """Whether each row's verdict lies within its measure's numerics spread (armlab.analysis.screens.numerics_noise);
    False for tables without the column."""
    if "not_robust_to_numerics" not in table:
        return np.zeros(len(table), dtype=bool)
    return np.asarray(table["not_robust_to_numerics"].fillna(False), dtype=bool)


def shown_verdicts(table: pd.DataFrame) -> np.ndarray:
    """:func:`verdicts` as the tables show them: "(not robust to numerics)" after each one :func:`not_robust` flags."""
    plain = verdicts(table)
    return np.where(not_robust(table), np.char.add(plain.astype(str), f" ({NOT_ROBUST})"), plain)


def numerics_flag(row: Row) -> str:
    """After a verdict line: "; not robust to numerics: ..." when the row's verdict lies within its measure's
    numerics spread (the room its difference has before the verdict changes, and the spread); else nothing."""
    if not bool(getattr(row, "not_robust_to_numerics", False)):
        return ""
    return (
        f"; {NOT_ROBUST}: {100 * row.numerics_room:.2f} points from another verdict, within the "
        f"{100 * row.numerics_spread:.2f} points numerics alone moved a difference"
    )


def interval_text(low: float, high: float, fmt: Callable[[float], str]) -> str:
    """An interval as ``[low, high]``; "unbounded" where no data could bound it; "—" where it is not defined."""
    if np.isnan(low) or np.isnan(high):
        return "—"
    if np.isinf(low) and np.isinf(high):
        return "unbounded"
    return f"[{_bound(low) if np.isinf(low) else fmt(low)}, {_bound(high) if np.isinf(high) else fmt(high)}]"


def interval_columns(table: pd.DataFrame, fmt: Callable[[float], str]) -> dict[str, list[str]]:
    """``{"<level> CI <method>": strings}``, one column per interval method in table order, rows of the first.

    A bounded interval shown in place of the method's (a non-empty note) is
    marked with a dagger; an unbounded one reads "unbounded"; an interval the
    method does not define (empty) is "—".
    """
    level = f"{100 * table['ci_level'].iloc[0]:g}%"
    columns = {}
    for method in dict.fromkeys(table["ci_method"]):
        rows = table[table["ci_method"] == method]
        columns[f"{level} CI {method}"] = [
            interval_text(lo, hi, fmt) + (FALLBACK_MARK if note and np.isfinite([lo, hi]).all() else "")
            for lo, hi, note in zip(rows["ci_low"], rows["ci_high"], rows["note"])
        ]
    return columns


DECISION_COLUMN = "interval at Holm's level"
EQUIVALENCE_COLUMN = "TOST interval at Holm's level"


def decision_text(row: Row, fmt: Callable[[float], str] = points, kind: str = "decision") -> str:
    """The test's interval at the level where it agrees with the verdict, with that level; "not tested".

    ``kind``: ``decision`` (the difference test's interval, :data:`DECISION_COLUMN`) or ``eq_decision`` (the
    equivalence TOST's, :data:`EQUIVALENCE_COLUMN`).
    """
    level, low, high = (getattr(row, f"{kind}_{end}") for end in ("level", "low", "high"))
    if np.isnan(level):
        return "not tested (gate closed)"
    return f"{interval_text(low, high, fmt)} {_at_level(level)}"


def comparison_display(table: pd.DataFrame) -> pd.DataFrame:
    """Comparisons (one family and level) as strings, one row per (measure, arm).

    Interval columns are per method, the sign-flip test's first
    (:func:`interval_columns`); a measure where lower is better is marked
    "(lower is better)". Equivalence is the comparison's TOST.
    """
    first = table[table["ci_method"] == table["ci_method"].iloc[0]].reset_index(drop=True)
    margin = f"{100 * first['equivalence_margin'].iloc[0]:g}"
    out = pd.DataFrame(
        {
            "measure": first["measure"].where(higher_is_better(first), first["measure"] + " (lower is better)"),
            "arm": first["arm"],
            "n": first["n_seeds"].astype(str)
            + (" vs " + first["n_reference_seeds"].astype(str) if is_unpaired(first) else ""),
            "Δ (pts)": first["mean_diff"].map(points),
            **interval_columns(table, points),
        }
    )
    out["p"] = first["p_value"].map(_p)
    out["p Holm"] = first["p_holm"].map(_p)
    out[DECISION_COLUMN] = [decision_text(row) for row in first.itertuples()]
    out["reject"] = first["reject"].map({True: "yes", False: "no"})
    out[EQUIVALENCE_COLUMN] = [decision_text(row, kind="eq_decision") for row in first.itertuples()]
    out[f"equiv. ±{margin}"] = equivalence_shown(first)
    out["MDE (pts)"] = [_mde_range(row) for _, row in first.iterrows()]
    out["verdict"] = shown_verdicts(first)
    return out


_ONE_LINE = str.maketrans({"\n": " ", "\r": " "})
_ONE_CELL = str.maketrans({"\n": " ", "\r": " ", "|": "\\|"})


def markdown_text(value: object) -> str:
    """A value as one line of Markdown text, HTML-escaped as in the HTML report (``<script>`` shows, never runs)."""
    return html.escape(str(value), quote=False).translate(_ONE_LINE)


def markdown_cell(value: object) -> str:
    """:func:`markdown_text` that cannot end its table cell either (``|`` is escaped)."""
    return html.escape(str(value), quote=False).translate(_ONE_CELL)


def equivalence_test(table: pd.DataFrame) -> str:
    """The TOST that decided equivalence, in words."""
    method = table["equivalence_method"].iloc[0]
    if is_unpaired(table):
        return "the exact permutation TOST of independent runs"
    named: dict[str | None, str] = {"sign_flip": "the exact sign-flip TOST", "t": "the paired t-TOST"}
    return named.get(method, f"the (1 - 2α) {table['ci_method'].iloc[0]} interval")


def correlation(x: float) -> str:
    """A rank correlation as shown: signed, three decimals; "—" where it is undefined (NaN)."""
    return "—" if np.isnan(x) else f"{x:+.3f}"


def to_markdown(frame: pd.DataFrame) -> str:
    """A string frame as a GitHub Markdown table; headers and cells are escaped (:func:`markdown_cell`)."""
    lines = ["| " + " | ".join(map(markdown_cell, frame.columns)) + " |", "|" + "---|" * len(frame.columns)]
    lines += ["| " + " | ".join(map(markdown_cell, row)) + " |" for row in frame.itertuples(index=False)]
    return "\n".join(lines)


_LATEX = {
    "\\": r"\textbackslash{}",
    "_": r"\_",
    "%": r"\%",
    "&": r"\&",
    "#": r"\#",
    "$": r"\$",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "<": r"\textless{}",
    ">": r"\textgreater{}",
    "Δ": r"$\Delta$",
    "±": r"$\pm$",
    "∞": r"$\infty$",
    "—": "--",
    FALLBACK_MARK: r"$^\dagger$",
}


def _latex_escape(text: object) -> str:
    return "".join(_LATEX.get(c, c) for c in str(text))


def comparison_sections(table: pd.DataFrame) -> Iterator[tuple[str, pd.DataFrame]]:
    """``(title, display frame)`` per family and level, in table order."""
    for (family, level), group in table.groupby(["family", "level"], sort=False):
        reference = group["reference"].iloc[0]
        yield f"Family {family}: arms vs {reference}, per {level}", comparison_display(group)


def comparison_note(table: pd.DataFrame) -> str:
    """The footnote of the comparison tables, for the test that decided them (and the numerics flag, where set)."""
    flag = NUMERICS_NOTE if not_robust(table).any() else ""
    if not is_unpaired(table):
        return COMPARISON_NOTE + flag
    return (
        "Unpaired: the arms' runs are not matched by seed; Δ is the difference of their mean scores and n the runs "
        "of the arm vs its reference. "
        + COMPARISON_NOTE.replace("exact sign-flip test", test_name(table)).replace("sign_flip", "permutation")
        + flag
    )


COMPARISON_NOTE = (
    "p: exact sign-flip test, unadjusted; its interval (the first, sign_flip) excludes 0 exactly when "
    "p <= 1 - confidence, and is unbounded where no data could make the test reject. p Holm: Holm across the "
    "family's arms on the primary summary; secondary summaries and benchmarks: Holm over all of them, only once "
    "every primary comparison is significant (gatekept, so the chance of any false better/worse in a family is "
    f"at most α). {DECISION_COLUMN}: the same test's interval at the level where Holm's decisions and intervals "
    "agree, 1 − α/u with u the comparisons of that stage Holm did not reject (1 − α when it rejected all), "
    f"so it excludes 0 exactly when the verdict is better or worse; secondary cells whose gate stayed closed were "
    f"not tested. Equivalence is gatekept the same way, on its own: the equivalence TOST with Holm across the arms "
    f"on the primary summary, and over all secondary cells only once every arm is equivalent on it, so the chance "
    f"of any false 'equivalent' in a family is at most α too; {EQUIVALENCE_COLUMN}: the TOST's interval at "
    f"1 − 2α/u, u the TOSTs of that stage Holm did not pass, inside ±δ exactly when the verdict is equivalent. "
    f"{FALLBACK_MARK}: the percentile interval shown where BCa is undefined."
)

NUMERICS_NOTE = (
    f" {NOT_ROBUST}: the verdict's difference is nearer another verdict (a better/worse interval's bound nearest 0; "
    "an equivalence interval's distance from ±margin) than the largest difference a numerics control (its reference "
    "run again under other numerics only) showed on that measure."
)


def comparisons_markdown(table: pd.DataFrame) -> str:
    """All comparison tables as Markdown sections."""
    parts = [f"### {markdown_text(title)}\n\n{to_markdown(frame)}" for title, frame in comparison_sections(table)]
    footer = (
        f"\nDifferences in points (score x 100). {comparison_note(table)} "
        f"Equivalence: {equivalence_test(table)}, gatekept Holm. MDE: smallest effect the {test_name(table)} "
        f"detects at the power target, and its range over the uncertainty of the spread."
    )
    return "\n\n".join(parts) + "\n" + footer + "\n"


def _math(text: str, bold: bool = False) -> str:
    return rf"$\mathbf{{{text}}}$" if bold else f"${text}$"


def _best(shown: pd.Series, best: Callable[[pd.Series], float]) -> pd.Series:
    """Which displayed values (strings of numbers) are the best, unless they are all equal."""
    values = shown.astype(float)
    target = best(values)
    return (values == target) & (values != target).any()


def latex_table(table: pd.DataFrame) -> str:
    """One family and level (rows of ``comparisons.csv``) as a booktabs paper table.

    Arms are rows, grouped by measure; the columns are Δ, the sign-flip
    interval at Holm's level (it agrees with the verdict; for an equivalent arm the TOST's, marked), p, Holm p and
    the verdict. In a group of two or more
    arms the largest Δ and the smallest p and Holm p, as displayed, are
    bold (nothing is bold in a column where all arms tie).
    """
    method = table["ci_method"].iloc[0]
    rows = table[table["ci_method"] == method]
    family, reference, level = rows["family"].iloc[0], rows["reference"].iloc[0], rows["level"].iloc[0]
    sizes = "/".join(dict.fromkeys(sizes_text(row) for row in rows.itertuples()))
    procedure = (
        "Holm-adjusted over the family's arms"
        if level == "summary" and (rows["stage"] == "primary").all()
        else "Holm-adjusted over the family's arms on the primary summary, and over all secondary summaries and "
        "benchmarks once every primary comparison is significant"
    )

    def levels(column: str) -> str:
        return ", ".join(
            f"{100 * c:.3g}% ({stage})" if np.isfinite(c) else f"{stage}: not tested, gate closed"
            for stage, c in rows.groupby("stage", sort=False)[column].first().items()
        )

    caption = (
        f"Family {family}: arms vs {reference} ({sizes}), per {level}. Δ: "
        f"{'difference of mean scores' if is_unpaired(rows) else 'mean paired difference'} in "
        f"points; interval: the {test_name(rows)}'s at the level where it agrees with Holm's "
        f"decisions ({levels('decision_level')}), so it excludes 0 exactly when the verdict is better or worse; "
        f"for an equivalent arm (marked TOST) the interval of {equivalence_test(rows)} at the level where it agrees "
        f"with Holm's decisions over the TOSTs ({levels('eq_decision_level')}), inside "
        f"{margin_text(rows['equivalence_margin'].iloc[0])}; p: {test_name(rows)}, {procedure}. Verdict: better/worse "
        f"when significant, equivalent when the TOST, under the same gatekept Holm, puts it within "
        f"{margin_text(rows['equivalence_margin'].iloc[0])}; not tested where a secondary cell's gates stayed closed. "
        f"Smallest attainable Holm p: {rows['min_attainable_p'].min():.3g}. Bold: best value per {level}."
    )
    label = re.sub(r"[^A-Za-z0-9]+", "-", f"{family}-{level}").strip("-")
    lines = [
        r"\begin{table}[t]",
        r"\centering",
        rf"\caption{{{_latex_escape(caption)}}}",
        rf"\label{{tab:{label}}}",
        r"\begin{tabular}{lrcrrl}",
        r"\toprule",
        r"Arm & $\Delta$ (pts) & Interval & $p$ & $p_\mathrm{Holm}$ & Verdict \\",
        r"\midrule",
    ]
    for g, (measure, group) in enumerate(rows.groupby("measure", sort=False)):
        lines += [r"\addlinespace"] if g else []
        higher = higher_is_better(group).iloc[0]
        title = _latex_escape(measure if higher else f"{measure} (lower is better)")
        lines.append(rf"\multicolumn{{6}}{{l}}{{\textit{{{title}}}}} \\")
        shown = {"diff": group["mean_diff"].map(points), "p": group["p_value"].map(_p), "holm": group["p_holm"].map(_p)}
        best = {"diff": max if higher else min, "p": min, "holm": min}
        cell = {key: [_math(v, b) for v, b in zip(values, _best(values, best[key]))] for key, values in shown.items()}
        for i, (row, said, flagged) in enumerate(zip(group.itertuples(), verdicts(group), shown_verdicts(group))):
            kind = "eq_decision" if said == "equivalent" else "decision"
            text = interval_text(getattr(row, f"{kind}_low"), getattr(row, f"{kind}_high"), points)
            interval = _math(text) if text.startswith("[") else _latex_escape(text)
            interval += r"\textsuperscript{TOST}" if said == "equivalent" else ""
            cells = [_latex_escape(row.arm), cell["diff"][i], interval, cell["p"][i], cell["holm"][i], flagged]
            lines.append(" & ".join(cells) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}", r"\end{table}"]
    return "\n".join(lines)


def comparisons_latex(table: pd.DataFrame) -> str:
    """All comparison tables as LaTeX paper tables, one per family and level (needs booktabs)."""
    groups = table.groupby(["family", "level"], sort=False)
    return "\n\n".join(latex_table(group) for _, group in groups) + "\n"


SIGNIFICANT_MARK = "*"


def per_benchmark_sections(table: pd.DataFrame) -> Iterator[tuple[str, str, pd.DataFrame]]:
    """Per family and measure of ``per_benchmark.csv``: ``(family, measure, frame)``, the frame a paper's table of
    strings: one row per benchmark, one column per method (the reference first), each cell the mean over seeds ±
    the half-width of its interval in points, marked :data:`SIGNIFICANT_MARK` where the arm differs from the
    reference under the family's gatekept Holm."""
    for (family, measure), group in table.groupby(["family", "measure"], sort=False):
        reference = group["reference"].iloc[0]
        by_arm = {arm: rows.set_index("benchmark") for arm, rows in group.groupby("arm", sort=False)}
        benchmarks = list(dict.fromkeys(group["benchmark"]))
        first = next(iter(by_arm.values())).loc[benchmarks]

        def cells(rows: pd.DataFrame, side: str, marked: pd.Series | None = None) -> list[str]:
            mean, low, high = (rows[f"{side}_{end}"].to_numpy(dtype=float) for end in ("mean", "low", "high"))
            mark = [SIGNIFICANT_MARK if bool(m) else "" for m in marked] if marked is not None else [""] * len(mean)
            return [f"{100 * m:.2f} ± {50 * (h - lo):.2f}{x}" for m, lo, h, x in zip(mean, low, high, mark)]

        frame = pd.DataFrame({"benchmark": benchmarks, reference: cells(first, "reference")})
        for arm, rows in by_arm.items():
            rows = rows.loc[benchmarks]
            frame[arm] = cells(rows, "arm", rows["reject"])
        yield family, measure, frame


def per_benchmark_caption(table: pd.DataFrame, family: str, measure: str, alpha: float) -> str:
    """What one per-benchmark paper table shows (rows of ``per_benchmark.csv`` of that family and measure)."""
    rows = table[(table["family"] == family) & (table["measure"] == measure)]
    tested = rows["decision_level"].notna()
    gate = (
        "every difference was tested"
        if tested.all()
        else "no difference was tested: the gate stayed closed (not every primary comparison of the family is "
        "significant)"
        if not tested.any()
        else f"{int(tested.sum())} of {len(rows)} differences were tested"
    )
    if tested.any() and rows["min_attainable_p"].min() > alpha:
        gate += (
            f", but with {sizes_text(rows.iloc[0])} none can be significant: the smallest adjusted p is "
            f"{rows['min_attainable_p'].min():.3g} > α = {alpha:g}"
        )
    return (
        f"Family {family}, {measure} per benchmark ({sizes_text(rows.iloc[0])}): mean over seeds ± the half-width of "
        f"its {100 * rows['ci_level'].iloc[0]:g}% t interval, in points; {SIGNIFICANT_MARK}: differs from "
        f"{rows['reference'].iloc[0]} under the family's gatekept Holm at α (the benchmarks are secondary cells, "
        f"tested only once every primary comparison is significant; here {gate})."
    )


def per_benchmark_latex(table: pd.DataFrame, alpha: float) -> str:
    """``per_benchmark.csv`` as booktabs paper tables, one per family and measure (benchmarks × methods)."""
    parts = []
    for family, measure, frame in per_benchmark_sections(table):
        label = re.sub(r"[^A-Za-z0-9]+", "-", f"{family}-{measure}-per-benchmark").strip("-")

        def cell(text: str) -> str:
            value, marked, _ = text.partition(SIGNIFICANT_MARK)
            return _math(value.replace("±", r"\pm") + ("^{*}" if marked else ""))

        lines = [
            r"\begin{table}[t]",
            r"\centering",
            rf"\caption{{{_latex_escape(per_benchmark_caption(table, family, measure, alpha))}}}",
            rf"\label{{tab:{label}}}",
            rf"\begin{{tabular}}{{l{'c' * (len(frame.columns) - 1)}}}",
            r"\toprule",
            " & ".join(_latex_escape(c) for c in ["Benchmark", *frame.columns[1:]]) + r" \\",
            r"\midrule",
            *(
                " & ".join([_latex_escape(row[0]), *(cell(c) for c in row[1:])]) + r" \\"
                for row in frame.itertuples(index=False)
            ),
            r"\bottomrule",
            r"\end{tabular}",
            r"\end{table}",
        ]
        parts.append("\n".join(lines))
    return "\n\n".join(parts) + "\n" if parts else ""


IMPROVEMENT_NOTE = (
    "P: the share of matched (seed, benchmark) pairs where the arm's accuracy beats the reference's, "
    "ties counted 1/2 (rliable's probability of improvement, paired by seed). Intervals over seeds "
    "as in the comparisons; p: exact sign-flip test of P = 1/2, unadjusted. Descriptive: the "
    "family's verdicts are the comparisons'."
)


UNPAIRED_IMPROVEMENT_NOTE = (
    "P: per benchmark, the share of all (run of the arm, run of the reference) pairs where the arm's accuracy is "
    "higher, ties counted 1/2, averaged over benchmarks (rliable's unpaired probability of improvement). "
    "Descriptive, without an interval: the family's verdicts are the comparisons'."
)


def improvement_display(table: pd.DataFrame) -> pd.DataFrame:
    """The probability of improvement (rows of probability_of_improvement.csv) as strings, one row per arm."""
    first = table[table["ci_method"] == table["ci_method"].iloc[0]].reset_index(drop=True)
    share = "{:.3f}".format
    return pd.DataFrame(
        {
            "family": first["family"],
            "arm": first["arm"],
            "reference": first["reference"],
            "seeds × benchmarks": first["n_seeds"].astype(str) + " × " + first["n_benchmarks"].astype(str),
            "P(arm > reference)": first["probability"].map(share),
            **interval_columns(table, share),
            "p (P = 1/2)": first["p_value"].map(_p),
        }
    )


def ranking_note(unpaired: bool) -> str:
    """The ranking footnote, for runs paired by seed or (``unpaired``) independent runs."""
    if not unpaired:
        return RANKING_NOTE
    return (
        "Order: best first; '>' where the exact permutation interval of the two neighbours' independent runs "
        "(unpaired, unadjusted) excludes 0, '≈' where the runs do not separate them: a ranking is only as sure "
        "as its closest neighbours."
    )


RANKING_NOTE = (
    "Order: best first; '>' where the exact sign-flip interval of the two neighbours' paired difference "
    "(common seeds, unadjusted) excludes 0, '≈' where the seeds do not separate them: a ranking is only as "
    "sure as its closest neighbours."
)


def ranking_orders(rankings: pd.DataFrame) -> pd.DataFrame:
    """Per ranking set and summary, the arms best first joined by '>' (separated) or '≈' (rows of rankings.csv)."""
    rows = []
    for (name, summary), block in rankings.groupby(["ranking", "summary"], sort=False):
        order = block["arm"].iloc[0]
        for separated, arm in zip(block["separated"].iloc[:-1], block["arm"].iloc[1:]):
            order += f" {'>' if separated is True or separated == 1 else '≈'} {arm}"
        rows.append({"ranking": name, "summary": summary, "order (best first)": order})
    return pd.DataFrame(rows)


PREDICTION_WORDS = {
    "better": "better",
    "worse": "worse",
    "equivalent": "within ±{:g} pt",
    "not_better": "not better by more than {:g} pt",
    "not_worse": "not worse by more than {:g} pt",
}
REPLICATION_NOTE = (
    "Confirmatory: locked before the first training job (predictions/lock.json); exploratory: added or changed "
    "after the lock, or never locked. Observed: the paired difference in points with the comparison's interval; "
    "the verdict follows the rules of analysis/predictions.py (better/worse: the family's Holm test; equivalence "
    "and one-sided claims: the (1 − 2α) interval against the margin)."
)


def _bound(x: float) -> str:
    return "−∞" if x == -np.inf else ("∞" if x == np.inf else points(x))


def replication_display(table: pd.DataFrame) -> pd.DataFrame:
    """The replication table (rows of replications.csv) as strings: claim, source, prediction, observed, verdict."""
    prediction = [
        PREDICTION_WORDS[d].format(100 * m) for d, m in zip(table["prediction"], table["margin"].astype(float))
    ]
    observed = [
        f"{_bound(d)} [{_bound(lo)}, {_bound(hi)}]"
        for d, lo, hi in zip(*(table[c] for c in ("mean_diff", "ci_low", "ci_high")))
    ]
    return pd.DataFrame(
        {
            "claim": table["claim"],
            "source": table["source"],
            "comparison": table["arm"] + " vs " + table["reference"] + " (" + table["measure"] + ")",
            "prediction": prediction,
            "observed": observed,
            "Holm p (difference)": table["p_holm"].map(_p),
            "verdict": table["verdict"],
            "registration": table["registration"],
        }
    )


def report_markdown(result: AnalysisResult) -> str:
    """The plain-words Markdown report of an :class:`armlab.analysis.pipeline.AnalysisResult`."""
    cfg = result.config
    means = result.summaries.groupby(level="arm", sort=False).mean()
    seeds = (
        result.summaries.reset_index()
        .groupby("arm", sort=False)["seed"]
        .apply(lambda s: ", ".join(map(str, sorted(s))))
    )
    arm_table = pd.concat([seeds.rename("seeds"), means.map(lambda x: f"{100 * x:.2f}")], axis=1)
    arm_table = arm_table.reset_index().rename(columns={"index": "arm"})
    corr = result.correlations.assign(
        spearman=result.correlations["spearman"].map(correlation),
        kendall=result.correlations["kendall"].map(correlation),
        n_arms=result.correlations["n_arms"].astype(str),
    )
    ranks = [
        f"{markdown_text(name)}:\n\n"
        + to_markdown(
            block.pivot(index="arm", columns="summary", values="rank")
            .sort_values(block["summary"].iloc[0])
            .astype(str)
            .reset_index()
        )
        for name, block in result.rankings.groupby("ranking", sort=False)
    ]
    ranks += [to_markdown(ranking_orders(result.rankings)), ranking_note(is_unpaired(result.comparisons))]
    sections = [
        f"# Analysis of {markdown_text(cfg.experiment)}",
        f"Input: {markdown_text(result.source)}. Config: {markdown_text(cfg.source)}.",
        "## What the design allows and other notes",
        "\n".join(f"- {markdown_text(note)}" for note in result.notes) or "- none",
        "## Summaries per arm (mean over seeds, points)",
        to_markdown(arm_table),
        "## Unpaired comparisons (independent runs)" if is_unpaired(result.comparisons) else "## Paired comparisons",
        comparisons_markdown(result.comparisons),
        *(
            [
                "## Replication of the predictions",
                to_markdown(replication_display(result.replications)),
                REPLICATION_NOTE,
            ]
            if len(result.replications)
            else []
        ),
        *(
            f"## Per benchmark: {markdown_text(measure)} of family {markdown_text(family)}\n\n{to_markdown(frame)}\n\n"
            + markdown_text(per_benchmark_caption(result.per_benchmark, family, measure, result.config.settings.alpha))
            for family, measure, frame in per_benchmark_sections(result.per_benchmark)
        ),
        f"## Probability of improvement ({'unpaired' if is_unpaired(result.comparisons) else 'paired'})",
        to_markdown(improvement_display(result.improvement))
        + "\n\n"
        + (UNPAIRED_IMPROVEMENT_NOTE if is_unpaired(result.comparisons) else IMPROVEMENT_NOTE),
        "## Rank of each arm under each summary (1 = highest mean; lowest where lower is better)",
        "\n\n".join(ranks),
        "## Ranking sensitivity (correlation of arm means between summaries)",
        to_markdown(corr) if len(corr) else "No ranking set has three or more arms.",
    ]
    return "\n\n".join(sections) + "\n"


def verdict_lines(comparisons: pd.DataFrame, sequential: pd.DataFrame | None = None) -> list[str]:
    """One line per compared arm on the primary summary (:func:`verdict_line`), as the console prints them.

    Under a sequential design (rows of sequential.csv) the verdict is each arm's decision at its stop: a difference or
    an open one with its repeated confidence interval of the difference, equivalence with the sequential TOST that
    decided it; otherwise the family's gatekept Holm verdict with :func:`verdict_evidence`.
    """
    if sequential is not None and len(sequential):
        return [sequential_line(r) for r in sequential.itertuples()]
    rows = comparisons[
        (comparisons["level"] == "summary") & (comparisons["ci_method"] == comparisons["ci_method"].iloc[0])
    ]
    rows = rows[rows["measure"] == rows["measure"].iloc[0]]
    return [verdict_line(r) for r in rows.itertuples()]


def sequential_line(r: Row) -> str:
    """The console's line for one arm's stop under a sequential design (a row of sequential.csv)."""
    head = f"{r.family}: {r.arm} vs {r.reference}: {r.direction or r.decision}, Δ {points(r.mean_diff)} points, "
    where = f"(look {r.look}, {r.n_seeds} seeds)"
    if r.decision == "equivalent":  # the repeated interval is the difference's, not the test that decided
        return head + f"two one-sided sequential tests within {margin_text(r.equivalence_margin)} at α {where}"
    return head + f"{100 * r.rci_level:g}% repeated interval {interval_text(r.rci_low, r.rci_high, points)} {where}"
