"""The report's HTML pieces: escaping, tables, lists, figures, folded details, sections and the page's style."""

from __future__ import annotations

import base64
import html
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

import pandas as pd

if TYPE_CHECKING:
    pass


STYLE = """
:root { --ink: #1a1a1a; --muted: #555; --rule: #d8d8d8; }
body { font: 15px/1.45 "DejaVu Sans", system-ui, sans-serif; color: var(--ink); max-width: 1160px;
       margin: 0 auto; padding: 1rem 1.5rem 4rem; }
h1 { font-size: 1.55rem; margin: .2rem 0; }
h2 { font-size: 1.2rem; border-bottom: 1px solid var(--rule); padding-bottom: .2rem; margin-top: 2rem; }
h3 { font-size: 1.02rem; margin: .8rem 0 .3rem; }
figcaption, .muted { color: var(--muted); }
nav { font-size: .9rem; margin-bottom: .4rem; }
nav a { margin-right: .9rem; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: .1rem 1rem; margin: .4rem 0; }
dl.facts dt { font-weight: bold; }
dl.facts dd { margin: 0; }
.cards { display: grid; grid-template-columns: repeat(auto-fit, minmax(460px, 1fr)); gap: .8rem; }
.card { border: 1px solid var(--rule); border-radius: 6px; padding: .5rem .9rem; }
.card ul { margin: .3rem 0; padding-left: 1.2rem; }
.chip { display: inline-block; border-radius: 4px; padding: 0 .45rem; margin: 0 .3rem .3rem 0; font-size: .85rem;
        border: 1px solid; }
.better { background: #dff3ec; border-color: #009E73; }
.worse { background: #fbe6da; border-color: #D55E00; }
.equivalent { background: #dcebf6; border-color: #0072B2; }
.inconclusive { background: #eeeeee; border-color: #888888; }
table.grades td { white-space: normal; vertical-align: top; }
table.grades td.status { white-space: nowrap; }
.pass { background: #dff3ec; border-color: #009E73; }
.fail { background: #fbe6da; border-color: #D55E00; }
.not-applicable, .not-available, .not-run { background: #eeeeee; border-color: #888888; }
.warning { border-left: 4px solid #D55E00; background: #fff4ec; padding: .3rem .8rem; margin: .4rem 0; }
.scroll { overflow-x: auto; max-width: 100%; }
table { border-collapse: collapse; font-size: .8rem; margin: .4rem 0; font-variant-numeric: tabular-nums; }
th, td { padding: .12rem .5rem; border-bottom: 1px solid var(--rule); text-align: left; white-space: nowrap; }
th { border-bottom: 1.5px solid var(--ink); }
figure { margin: .8rem 0; }
figure img { max-width: 100%; height: auto; }
figcaption { font-size: .85rem; }
details { margin: .3rem 0; }
summary { cursor: pointer; }
pre { background: #f5f5f5; padding: .6rem; overflow: auto; font-size: .78rem; }
"""


def esc(value: object) -> str:
    """HTML-escape any value as text (quotes included, so it is safe in attributes too)."""
    return html.escape(str(value), quote=True)


# ----------------------------------------------------------------------------- HTML pieces


def html_table(frame: pd.DataFrame) -> str:
    """A frame as an HTML table; every header and cell is escaped."""
    head = "".join(f"<th>{esc(c)}</th>" for c in frame.columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{esc(v)}</td>" for v in row) + "</tr>" for row in frame.itertuples(index=False)
    )
    # a wide table scrolls inside its own box instead of widening the page
    return f'<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'


def html_list(items: Iterable[object]) -> str:
    return "<ul>" + "".join(f"<li>{esc(item)}</li>" for item in items) + "</ul>"


def html_figure(rendered: Mapping[str, bytes], title: str, caption: str) -> str:
    """A rendered figure inline: base64 SVG in an ``<img>`` (an image cannot run scripts or load anything)."""
    data = base64.b64encode(rendered["svg"]).decode("ascii")
    return (
        f'<figure><img src="data:image/svg+xml;base64,{data}" alt="{esc(title)}">'
        f"<figcaption>{esc(caption)}</figcaption></figure>"
    )


def html_facts(facts: Mapping[str, object]) -> str:
    """Label: value pairs as a definition list; both escaped."""
    return '<dl class="facts">' + "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in facts.items()) + "</dl>"


def muted(text: str) -> str:
    return f'<p class="muted">{esc(text)}</p>'


def details(summary: str, body: str) -> str:
    return f"<details><summary>{esc(summary)}</summary>{body}</details>"


def section(anchor: str, title: str, body: str) -> str:
    return f'<section id="{anchor}"><h2>{esc(title)}</h2>{body}</section>'
