"""A MkDocs hook: the pages' mathematics as MathML, typeset at build time (no script, nothing fetched).

``pymdownx.arithmatex`` (generic mode, ``mkdocs.yml``) leaves ``$...$`` as ``<span class="arithmatex">\\(...\\)</span>``
and ``$$...$$`` as ``<div class="arithmatex">\\[...\\]</div>``, on the Markdown pages and on the API reference
alike (``docs/griffe_rst.py`` turns the docstrings' ``:math:`` and ``.. math::`` into ``$``/``$$`` first). This
hook replaces each TeX formula by the MathML that ``latex2mathml`` (pure Python, the ``docs`` extra) writes for
it, which every current browser renders itself, and does the same for the table of contents (a heading such as
"Choose $k$") and the page title (as plain text there: a ``<title>`` holds no markup).

A formula latex2mathml cannot convert (an error, or a command it does not know, which it would leave as
``\\name`` in the output) is reported as an error naming the page and the formula; ``strict: true`` in
``mkdocs.yml`` then fails the build rather than show raw TeX.
"""

from __future__ import annotations

import html
import logging
import re
from typing import Any

from latex2mathml.converter import convert

log = logging.getLogger("mkdocs.hooks.mathml")

#: arithmatex's generic output: the element, then the TeX with its delimiters, HTML-escaped.
ARITHMATEX = re.compile(r'<(?P<tag>span|div) class="arithmatex">(?P<body>.*?)</(?P=tag)>', re.DOTALL)
#: A formula left in plain text (table-of-contents titles, page titles): ``\(...\)`` or ``\[...\]``.
DELIMITED = re.compile(r"\\\((?P<inline>.*?)\\\)|\\\[(?P<display>.*?)\\\]", re.DOTALL)
#: TeX that latex2mathml (3.x) does not know, rewritten first: ``\arg`` is an operator name like ``\max``.
REWRITES = ((re.compile(r"\\arg(?![A-Za-z])"), r"\\operatorname{arg}"),)
#: Delimiters after ``\big``, ``\Bigl``, ...: latex2mathml copies the command into the ``<mo>`` as it is.
DELIMITERS = {
    "\\{": "{", "\\}": "}", "\\lbrace": "{", "\\rbrace": "}", "\\|": "\u2016", "\\Vert": "\u2016",
    "\\lVert": "\u2016", "\\rVert": "\u2016", "\\vert": "|", "\\lvert": "|", "\\rvert": "|",
    "\\langle": "\u27e8", "\\rangle": "\u27e9", "\\lceil": "\u2308", "\\rceil": "\u2309",
    "\\lfloor": "\u230a", "\\rfloor": "\u230b",
}  # fmt: skip
RAW_DELIMITER = re.compile(r"(<mo\b[^>]*>)(\\[A-Za-z]+|\\[{}|])(</mo>)")
TAG = re.compile(r"<[^>]+>")


class MathError(ValueError):
    """latex2mathml could not convert a formula."""


def mathml(tex: str, *, display: bool) -> str:
    """The MathML of the TeX ``tex`` (without delimiters); :class:`MathError` when it cannot be converted."""
    source = tex
    for pattern, replacement in REWRITES:
        source = pattern.sub(replacement, source)
    try:
        out = convert(source, display="block" if display else "inline")
    except Exception as exc:  # latex2mathml raises its own exceptions, and IndexError/KeyError on bad input
        raise MathError(f"{type(exc).__name__}: {exc}".rstrip(": ")) from exc
    out = RAW_DELIMITER.sub(lambda m: m[1] + html.escape(DELIMITERS.get(m[2], m[2])) + m[3], out)
    left = re.findall(r"\\[A-Za-z]+|\\.", TAG.sub(" ", out))  # symbols are written as &#x...; entities
    if left:  # a command latex2mathml does not know: it would be printed as it is
        raise MathError(f"unknown to latex2mathml: {', '.join(sorted(set(left)))}")
    return out


def plain(mathml_text: str) -> str:
    """The text of a MathML formula (for a page title), its symbols as Unicode."""
    return html.unescape(TAG.sub("", mathml_text))


def _page_name(page: Any) -> str:
    file = getattr(page, "file", None)
    return getattr(file, "src_uri", None) or str(page)


def _convert_delimited(text: str, page: Any, where: str, *, as_text: bool = False) -> str:
    """``text`` (HTML-escaped, as in a toc title) with each ``\\(...\\)``/``\\[...\\]`` as MathML (or its text)."""

    def one(match: re.Match[str]) -> str:
        display = match["display"] is not None
        tex = html.unescape(match["display"] if display else match["inline"])
        try:
            out = mathml(tex, display=False)  # inline in a title, whatever the source said
        except MathError as exc:
            log.error(f"{_page_name(page)}: cannot convert the formula ${tex}$ in {where} to MathML ({exc})")
            return match[0]
        return plain(out) if as_text else out

    return DELIMITED.sub(one, text)


def _convert_toc(items: Any, page: Any) -> None:
    for item in items:
        if "\\(" in item.title or "\\[" in item.title:
            item.title = _convert_delimited(item.title, page, f"the table of contents ({item.title!r})")
        _convert_toc(item.children, page)


def on_page_content(html_text: str, page: Any, **kwargs: Any) -> str:
    """Every arithmatex formula of the page, its table of contents and its title as MathML (text in the title)."""

    def one(match: re.Match[str]) -> str:
        display = match["tag"] == "div"
        body = html.unescape(match["body"]).strip()
        opening, closing = ("\\[", "\\]") if display else ("\\(", "\\)")
        if not (body.startswith(opening) and body.endswith(closing)):
            log.error(f"{_page_name(page)}: unexpected arithmatex output {match[0][:120]!r}")
            return match[0]
        tex = body[2:-2].strip()
        try:
            out = mathml(tex, display=display)
        except MathError as exc:
            dollars = "$$" if display else "$"
            log.error(f"{_page_name(page)}: cannot convert the formula {dollars}{tex}{dollars} to MathML ({exc})")
            return match[0]
        return f'<{match["tag"]} class="arithmatex">{out}</{match["tag"]}>'

    html_text = ARITHMATEX.sub(one, html_text)
    _convert_toc(page.toc, page)
    title = getattr(page, "title", None)
    if title and ("\\(" in title or "\\[" in title):
        page.title = _convert_delimited(title, page, "the page title", as_text=True)
    return html_text
