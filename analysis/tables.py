"""Human-readable tables: the comparisons as Markdown and LaTeX, and the Markdown report.

Markdown (and the HTML report) render the display frame of
:func:`comparison_display`, one column per interval method; LaTeX is laid out
as a paper table (:func:`latex_table`). All are in points (score x 100), and
all state the same :func:`verdicts`.
"""

import re

import numpy as np
import pandas as pd

FALLBACK_MARK = "†"


def points(x):
    """A difference in score units as signed points (score x 100), two decimals."""
    return f"{round(100 * x, 2) + 0.0:+.2f}"  # + 0.0: no "-0.00"


def _p(x):
    return f"{x:.3g}"


def _mde(x):
    return "∞" if np.isinf(x) else ("—" if np.isnan(x) else f"{100 * x:.2f}")


def verdicts(table):
    """Plain-word verdict of each comparison row.

    ``better`` / ``worse``: Holm-significant with a positive / negative mean
    difference; ``equivalent``: not significant and the (1 - 2 alpha)
    interval inside ±δ; ``inconclusive``: neither.
    """
    reject, diff = table["reject"].astype(bool), table["mean_diff"]
    return np.select([reject & (diff > 0), reject & (diff < 0), table["equivalent"].astype(bool)],
                     ["better", "worse", "equivalent"], "inconclusive")


def comparison_display(table):
    """Comparisons (one family and level) as strings, one row per (measure, arm).

    Interval columns are per method; a BCa interval that fell back to the
    percentile one is marked with a dagger. Equivalence is judged with the
    first method's (1 - 2 alpha) interval.
    """
    methods = list(dict.fromkeys(table["ci_method"]))
    first = table[table["ci_method"] == methods[0]].reset_index(drop=True)
    level = f"{100 * first['ci_level'].iloc[0]:g}%"
    margin = f"{100 * first['equivalence_margin'].iloc[0]:g}"
    out = pd.DataFrame({
        "measure": first["summary"], "arm": first["arm"], "n": first["n_seeds"].astype(str),
        "Δ (pts)": first["mean_diff"].map(points),
    })
    for method in methods:
        rows = table[table["ci_method"] == method].reset_index(drop=True)
        mark = np.where(rows["note"] != "", FALLBACK_MARK, "")
        out[f"{level} CI {method}"] = [
            f"[{points(lo)}, {points(hi)}]{m}" for lo, hi, m in zip(rows["ci_low"], rows["ci_high"], mark)
        ]
    out["p"] = first["p_value"].map(_p)
    out["p Holm"] = first["p_holm"].map(_p)
    out["reject"] = first["reject"].map({True: "yes", False: "no"})
    out[f"equiv. ±{margin}"] = first["equivalent"].map({True: "yes", False: "no"})
    out["MDE (pts)"] = first["mde"].map(_mde)
    out["verdict"] = verdicts(first)
    return out


def to_markdown(frame):
    """A string frame as a GitHub Markdown table."""
    lines = ["| " + " | ".join(frame.columns) + " |", "|" + "---|" * len(frame.columns)]
    lines += ["| " + " | ".join(str(v) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join(lines)


_LATEX = {"\\": r"\textbackslash{}", "_": r"\_", "%": r"\%", "&": r"\&", "#": r"\#", "$": r"\$",
          "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
          "<": r"\textless{}", ">": r"\textgreater{}", "Δ": r"$\Delta$", "±": r"$\pm$", "∞": r"$\infty$",
          "—": "--", FALLBACK_MARK: r"$^\dagger$"}


def _latex_escape(text):
    return "".join(_LATEX.get(c, c) for c in str(text))


def comparison_sections(table):
    """``(title, display frame)`` per family and level, in table order."""
    for (family, level), group in table.groupby(["family", "level"], sort=False):
        reference = group["reference"].iloc[0]
        yield f"Family {family}: arms vs {reference}, per {level}", comparison_display(group)


def comparisons_markdown(table):
    """All comparison tables as Markdown sections."""
    parts = [f"### {title}\n\n{to_markdown(frame)}" for title, frame in comparison_sections(table)]
    footer = (f"\nDifferences in points (score x 100); p: exact sign-flip test; Holm within (family, measure); "
              f"{FALLBACK_MARK}: BCa undefined, percentile interval shown.")
    return "\n\n".join(parts) + "\n" + footer + "\n"


def _math(text, bold=False):
    return rf"$\mathbf{{{text}}}$" if bold else f"${text}$"


def _best(shown, best):
    """Which displayed values (strings of numbers) are the best, unless they are all equal."""
    values = shown.astype(float)
    target = best(values)
    return (values == target) & (values != target).any()


def latex_table(table):
    """One family and level (rows of ``comparisons.csv``) as a booktabs paper table.

    Arms are rows, grouped by measure; the columns are Δ, the first interval
    method's interval, p, Holm p and the verdict. In a group of two or more
    arms the largest Δ and the smallest p and Holm p, as displayed, are
    bold (nothing is bold in a column where all arms tie).
    """
    method = table["ci_method"].iloc[0]
    rows = table[table["ci_method"] == method]
    family, reference, level = rows["family"].iloc[0], rows["reference"].iloc[0], rows["level"].iloc[0]
    n_seeds = "/".join(map(str, sorted(rows["n_seeds"].unique())))
    caption = (
        f"Family {family}: arms vs {reference} ({n_seeds} seeds), per {level}. Δ: mean paired difference in "
        f"points; {100 * rows['ci_level'].iloc[0]:g}% {method} bootstrap interval over seeds; p: exact sign-flip "
        f"test, Holm-adjusted over the family's arms. Verdict: better/worse when Holm-significant, equivalent "
        f"when within ±{100 * rows['equivalence_margin'].iloc[0]:g} point(s). Smallest attainable Holm p: "
        f"{rows['min_attainable_p'].min():.3g}. Bold: best value per {level}."
    )
    label = re.sub(r"[^A-Za-z0-9]+", "-", f"{family}-{level}").strip("-")
    lines = [r"\begin{table}[t]", r"\centering", rf"\caption{{{_latex_escape(caption)}}}", rf"\label{{tab:{label}}}",
             r"\begin{tabular}{lrcrrl}", r"\toprule",
             rf"Arm & $\Delta$ (pts) & {_latex_escape(method)} interval & $p$ & $p_\mathrm{{Holm}}$ & Verdict \\",
             r"\midrule"]
    for g, (measure, group) in enumerate(rows.groupby("summary", sort=False)):
        lines += [r"\addlinespace"] if g else []
        lines.append(rf"\multicolumn{{6}}{{l}}{{\textit{{{_latex_escape(measure)}}}}} \\")
        shown = {"diff": group["mean_diff"].map(points), "p": group["p_value"].map(_p),
                 "holm": group["p_holm"].map(_p)}
        best = {"diff": max, "p": min, "holm": min}
        cell = {key: [_math(v, b) for v, b in zip(values, _best(values, best[key]))] for key, values in shown.items()}
        for i, (row, verdict) in enumerate(zip(group.itertuples(), verdicts(group))):
            interval = _math(f"[{points(row.ci_low)}, {points(row.ci_high)}]") + (r"$^\dagger$" if row.note else "")
            cells = [_latex_escape(row.arm), cell["diff"][i], interval, cell["p"][i], cell["holm"][i], verdict]
            lines.append(" & ".join(cells) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}", r"\end{table}"]
    return "\n".join(lines)


def comparisons_latex(table):
    """All comparison tables as LaTeX paper tables, one per family and level (needs booktabs)."""
    groups = table.groupby(["family", "level"], sort=False)
    return "\n\n".join(latex_table(group) for _, group in groups) + "\n"


def report_markdown(result):
    """The plain-words Markdown report of an :class:`analysis.pipeline.AnalysisResult`."""
    cfg = result.config
    means = result.summaries.groupby(level="arm", sort=False).mean()
    seeds = result.summaries.reset_index().groupby("arm", sort=False)["seed"].apply(
        lambda s: ", ".join(map(str, sorted(s))))
    arm_table = pd.concat([seeds.rename("seeds"), means.map(lambda x: f"{100 * x:.2f}")], axis=1)
    arm_table = arm_table.reset_index().rename(columns={"index": "arm"})
    corr = result.correlations.assign(
        spearman=result.correlations["spearman"].map(lambda x: f"{x:+.3f}"),
        kendall=result.correlations["kendall"].map(lambda x: f"{x:+.3f}"),
        n_arms=result.correlations["n_arms"].astype(str),
    )
    ranks = [
        f"{name}:\n\n" + to_markdown(block.pivot(index="arm", columns="summary", values="rank")
                                     .sort_values(block["summary"].iloc[0]).astype(str).reset_index())
        for name, block in result.rankings.groupby("ranking", sort=False)
    ]
    sections = [
        f"# Analysis of {cfg.experiment}",
        f"Input: {result.source}. Config: {cfg.source}.",
        "## What the design allows and other notes",
        "\n".join(f"- {note}" for note in result.notes) or "- none",
        "## Summaries per arm (mean over seeds, points)",
        to_markdown(arm_table),
        "## Paired comparisons",
        comparisons_markdown(result.comparisons),
        "## Rank of each arm under each summary (1 = highest mean)",
        "\n\n".join(ranks),
        "## Ranking sensitivity (correlation of arm means between summaries)",
        to_markdown(corr) if len(corr) else "No ranking set has three or more arms.",
    ]
    return "\n\n".join(sections) + "\n"
