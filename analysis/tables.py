"""Human-readable tables: the comparisons as Markdown and LaTeX, and the Markdown report.

Both formats render the same display frame (:func:`comparison_display`), in
points (score x 100), one column per interval method.
"""

import numpy as np
import pandas as pd

FALLBACK_MARK = "†"


def _points(x):
    return f"{100 * x:+.2f}"


def _p(x):
    return f"{x:.3g}"


def _mde(x):
    return "∞" if np.isinf(x) else ("—" if np.isnan(x) else f"{100 * x:.2f}")


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
        "Δ (pts)": first["mean_diff"].map(_points),
    })
    for method in methods:
        rows = table[table["ci_method"] == method].reset_index(drop=True)
        mark = np.where(rows["note"] != "", FALLBACK_MARK, "")
        out[f"{level} CI {method}"] = [
            f"[{_points(lo)}, {_points(hi)}]{m}" for lo, hi, m in zip(rows["ci_low"], rows["ci_high"], mark)
        ]
    out["p"] = first["p_value"].map(_p)
    out["p Holm"] = first["p_holm"].map(_p)
    out["reject"] = first["reject"].map({True: "yes", False: "no"})
    out[f"equiv. ±{margin}"] = first["equivalent"].map({True: "yes", False: "no"})
    out["MDE (pts)"] = first["mde"].map(_mde)
    return out


def to_markdown(frame):
    """A string frame as a GitHub Markdown table."""
    lines = ["| " + " | ".join(frame.columns) + " |", "|" + "---|" * len(frame.columns)]
    lines += ["| " + " | ".join(str(v) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join(lines)


_LATEX = {"\\": r"\textbackslash{}", "_": r"\_", "%": r"\%", "&": r"\&", "#": r"\#", "$": r"\$",
          "{": r"\{", "}": r"\}", "Δ": r"$\Delta$", "±": r"$\pm$", "∞": r"$\infty$", "—": "--",
          FALLBACK_MARK: r"$^\dagger$"}


def _latex_escape(text):
    return "".join(_LATEX.get(c, c) for c in str(text))


def to_latex(frame, caption):
    """A string frame as a booktabs ``table`` environment."""
    body = [" & ".join(_latex_escape(v) for v in row) + r" \\" for row in frame.itertuples(index=False)]
    return "\n".join([
        r"\begin{table}[t]", r"\centering", rf"\caption{{{_latex_escape(caption)}}}",
        rf"\begin{{tabular}}{{ll{'r' * (len(frame.columns) - 2)}}}", r"\toprule",
        " & ".join(_latex_escape(c) for c in frame.columns) + r" \\", r"\midrule", *body,
        r"\bottomrule", r"\end{tabular}", r"\end{table}",
    ])


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


def comparisons_latex(table):
    """All comparison tables as LaTeX (needs the booktabs package)."""
    return "\n\n".join(to_latex(frame, title) for title, frame in comparison_sections(table)) + "\n"


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
