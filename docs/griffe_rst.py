"""A griffe extension for the API reference: the reStructuredText bits of spcakit's docstrings as Markdown.

The docstrings are NumPy style (sections parsed by griffe) but name objects and write mathematics
with Sphinx roles, which Markdown would print literally. Before mkdocstrings renders a docstring,
this rewrites:

* ``:class:`~spcakit.inputs.dense.Covariance``` (also ``:func:``, ``:meth:``, ``:mod:``, ``:attr:``,
  ``:data:``, ``:exc:``, ``:obj:``) into an optional cross-reference: a link when the object is on
  a page of the site, else the name as code, never a warning. A relative name (``:func:`compose```
  in ``spcakit.workflows.fit``) is resolved in the docstring's scope; ``~`` shows the last component only,
  ``title <target>`` the title;
* ``:math:`x``` into ``$x$`` and a ``.. math::`` directive into a ``$$`` block (typeset by
  pymdownx.arithmatex and MathJax);
* a paragraph ending in ``::`` (a literal block follows) into one ending in ``:``;
* a NumPy parameter entry that names several parameters without a type (``truncator, lam``)
  into one entry per name with the shared description, so that each shows its own type and
  default from the signature (griffe gives them all the first one's);

and it gives a module or class attribute without a docstring the ``#:`` comment lines just above
it (Sphinx's attribute comments), so that documented constants show their documentation.

It changes nothing in the package; ``mkdocs.yml`` loads it for mkdocstrings.
"""

from __future__ import annotations

import html
import re
from typing import Any

import griffe

ROLE = re.compile(r":(?P<role>class|func|meth|mod|attr|data|exc|obj):`(?P<target>[^`]+)`")
EXPLICIT_TITLE = re.compile(r"(?P<title>[^<]+?)\s*<(?P<target>[^>]+)>")
MATH_ROLE = re.compile(r":math:`(?P<tex>[^`]+)`")
MATH_DIRECTIVE = re.compile(r"^(?P<indent>[ \t]*)\.\. math::[ \t]*(?P<inline>.*)$")
LITERAL_MARKER = re.compile(r"(?<=\S)::$")
SECTION_RULE = re.compile(r"^-{3,}\s*$")
PARAMETER_SECTIONS = ("parameters", "other parameters")
GROUPED_NAMES = re.compile(r"^\*{0,2}[A-Za-z_]\w*(?:, \*{0,2}[A-Za-z_]\w*)+\s*$")


def _cross_reference(obj: griffe.Object, role: str, target: str) -> str:
    explicit = EXPLICIT_TITLE.fullmatch(target)
    if explicit:  # :func:`the title <target>`
        return _link(obj, explicit["target"], explicit["title"])
    shown = target
    if target.startswith("~"):
        target = target[1:]
        shown = target.rsplit(".", 1)[-1]
    if role in ("func", "meth") and not shown.endswith(")"):
        shown += "()"
    return _link(obj, target, shown)


def _link(obj: griffe.Object, target: str, shown: str) -> str:
    target = target.lstrip(".")
    head, dot, rest = target.partition(".")
    try:
        identifier = obj.resolve(target)
    except (griffe.NameResolutionError, ValueError, KeyError):
        try:  # Result.to_dict: resolve the first name, keep the rest
            identifier = obj.resolve(head) + dot + rest
        except (griffe.NameResolutionError, ValueError, KeyError):
            identifier = target
    return f'<autoref identifier="{html.escape(identifier)}" optional><code>{html.escape(shown)}</code></autoref>'


def _inline(obj: griffe.Object, text: str) -> str:
    text = MATH_ROLE.sub(lambda m: f"${' '.join(m['tex'].split())}$", text)
    return ROLE.sub(lambda m: _cross_reference(obj, m["role"], " ".join(m["target"].split())), text)


def _math_blocks(lines: list[str]) -> list[str]:
    out: list[str] = []
    i = 0
    while i < len(lines):
        match = MATH_DIRECTIVE.match(lines[i])
        if match is None:
            out.append(lines[i])
            i += 1
            continue
        indent = match["indent"]
        body = [match["inline"].strip()] if match["inline"].strip() else []
        i += 1
        # the directive's content: the following blank or more-indented lines
        while i < len(lines) and (not lines[i].strip() or len(lines[i]) - len(lines[i].lstrip()) > len(indent)):
            if lines[i].strip():
                body.append(lines[i].strip())
            i += 1
        out.extend([f"{indent}$$", *(f"{indent}{line}" for line in body), f"{indent}$$", ""])
    return out


def _split_grouped_parameters(lines: list[str]) -> list[str]:
    out: list[str] = []
    section = ""
    i = 0
    while i < len(lines):
        line = lines[i]
        if i + 1 < len(lines) and line.strip() and not line.startswith(" ") and SECTION_RULE.match(lines[i + 1]):
            section = line.strip().lower()
        elif section in PARAMETER_SECTIONS and GROUPED_NAMES.match(line):
            end = i + 1
            while end < len(lines) and (lines[end].startswith(" ") or not lines[end].strip()):
                end += 1
            description = lines[i + 1 : end]
            while description and not description[-1].strip():
                description.pop()
            for name in line.split(","):
                out.extend([name.strip(), *description])
            out.extend(lines[i + 1 + len(description) : end])
            i = end
            continue
        out.append(line)
        i += 1
    return out


def markdown(obj: griffe.Object, text: str) -> str:
    """The docstring ``text`` of ``obj`` with its reST roles, math and literal markers as Markdown."""
    lines = _split_grouped_parameters(_math_blocks(text.splitlines()))
    lines = [LITERAL_MARKER.sub(":", line) for line in lines]
    return _inline(obj, "\n".join(lines))


def _attribute_comment(obj: griffe.Object) -> str:
    """The ``#:`` comment lines right above the attribute's assignment, without the markers."""
    try:
        lines = obj.module.lines
    except (AttributeError, ValueError, KeyError, OSError):
        return ""
    comment: list[str] = []
    index = (obj.lineno or 0) - 2  # the line above, 0-based
    while index >= 0 and lines[index].strip().startswith("#:"):
        comment.insert(0, lines[index].strip()[2:].strip())
        index -= 1
    return "\n".join(comment)


class RestToMarkdown(griffe.Extension):
    """Rewrite every docstring of the loaded packages before it is parsed and rendered."""

    def __init__(self) -> None:
        super().__init__()
        self._done: set[str] = set()

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        """griffe 2: a package is loaded."""
        if pkg.path not in self._done:
            self._done.add(pkg.path)
            self._walk(pkg, set())

    # griffe 1 names the same event so
    on_package_loaded = on_package

    def _walk(self, obj: griffe.Object, seen: set[str]) -> None:
        if obj.path in seen:
            return
        seen.add(obj.path)
        if obj.docstring is None and obj.is_attribute:
            comment = _attribute_comment(obj)
            if comment:
                obj.docstring = griffe.Docstring(comment, parent=obj)
        if obj.docstring is not None:
            obj.docstring.value = markdown(obj, obj.docstring.value)
        for member in obj.members.values():
            if not member.is_alias:
                self._walk(member, seen)
