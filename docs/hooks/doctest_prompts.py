"""A MkDocs hook: doctest-style code blocks show their prompts and output, but copy as code only.

The Python examples of the pages (and of the docstrings' Examples sections) are doctests: ``>>> `` and ``... ``
prompts, the output under them, and ``# doctest: +SKIP``-style directives, which the tests run as they are.
In every rendered code block whose first line starts with ``>>>``, this hook

* wraps each prompt (``>>> ``, ``... ``) in ``<span class="doctest-prompt">`` and each output line in
  ``<span class="doctest-output">``: ``docs/stylesheets/extra.css`` makes both unselectable
  (``user-select: none``), so that a selection copies the code alone, and hides them while mkdocs-material's
  copy button reads the block (``code[data-md-copying]``, as it does for its own annotations);
* removes the ``# doctest: ...`` directives from the displayed code;
* gives the block a ``data-copy`` attribute holding the code without prompts, output or directives, which
  mkdocs-material's copy button copies instead of the block's text where it reads that attribute.

The Markdown pages are not changed (the doctests run as written).
"""

from __future__ import annotations

import html
import re
from typing import Any

#: A rendered code block (pymdownx.highlight): the ``div.highlight``'s opening tag, up to ``<code>``, the code.
BLOCK = re.compile(
    r'(?P<div><div class="(?:[^"]*\s)?highlight(?:\s[^"]*)?"[^>]*>)(?P<pre><pre[^>]*>(?:<span></span>)?<code[^>]*>)'
    r"(?P<code>.*?)(?P<end></code></pre>)",
    re.DOTALL,
)
PIECE = re.compile(r"(<[^>]*>)|([^<]+)")
#: A doctest directive comment, as doctest reads it (to the end of the line, no quote in it).
DIRECTIVE = re.compile(r"\s*#\s*doctest:[^\n'\"]*$")
EMPTY_SPAN = re.compile(r'<span class="[^"]*"></span>')
PROMPT_CLASS = "doctest-prompt"
OUTPUT_CLASS = "doctest-output"


def text_of(line: str) -> str:
    """The text a line of highlighted HTML shows (tags dropped, entities decoded)."""
    return html.unescape("".join(text for _, text in PIECE.findall(line)))


def remove_text(line: str, start: int, end: int) -> str:
    """The HTML ``line`` without the characters ``start:end`` of its text, its tags kept (and empty spans dropped)."""
    out: list[str] = []
    position = 0
    for tag, escaped in PIECE.findall(line):
        if tag:
            out.append(tag)
            continue
        text = html.unescape(escaped)
        low, high = position, position + len(text)
        position = high
        if high <= start or low >= end:
            out.append(escaped)
            continue
        kept = text[: max(start - low, 0)] + text[max(end - low, 0) :]
        out.append(html.escape(kept, quote=False))
    return EMPTY_SPAN.sub("", "".join(out))


def _source_line(line: str, prompt: str, copied: list[str]) -> str:
    text = text_of(line)
    directive = DIRECTIVE.search(text)
    if directive:
        line = remove_text(line, directive.start(), len(text))
        text = text[: directive.start()]
    copied.append(text[len(prompt) :])
    body = remove_text(line, 0, len(prompt))
    return f'<span class="{PROMPT_CLASS}">{html.escape(prompt, quote=False)}</span>{body}'


def doctest_block(code: str) -> tuple[str, str] | None:
    """The highlighted ``code`` of a block with its prompts and output marked and its directives removed, and the
    code to copy; ``None`` when the block is no doctest (its first line does not start with ``>>>``)."""
    lines = code.split("\n")
    first = text_of(lines[0])
    if not (first == ">>>" or first.startswith(">>> ")):
        return None
    copied: list[str] = []
    out: list[str] = []
    in_source = False
    for number, line in enumerate(lines):
        newline = "\n" if number < len(lines) - 1 else ""
        text = text_of(line)
        if text == ">>>" or text.startswith(">>> "):
            out.append(_source_line(line, text[:4], copied) + newline)
            in_source = True
        elif in_source and (text == "..." or text.startswith("... ")):
            out.append(_source_line(line, text[:4], copied) + newline)
        elif text.strip():  # the newline inside the span: hidden with it, the line leaves no blank line behind
            out.append(f'<span class="{OUTPUT_CLASS}">{line}{newline}</span>')
            in_source = False
        else:  # a blank line ends the output (and the last line is the empty one before </code>)
            out.append(line + newline)
            in_source = False
    return "".join(out), "\n".join(copied).rstrip("\n")


def on_page_content(html_text: str, **kwargs: Any) -> str:
    """Every doctest code block of the page with its prompts and output marked and its directives removed."""

    def one(match: re.Match[str]) -> str:
        done = doctest_block(match["code"])
        if done is None:
            return match[0]
        code, copied = done
        div = match["div"][:-1] + f' data-copy="{html.escape(copied, quote=True)}">'
        return div + match["pre"] + code + match["end"]

    return BLOCK.sub(one, html_text)
