"""The documentation site (``mkdocs.yml``) builds with ``mkdocs build --strict`` and holds what it should.

One strict build, as CI makes it: ``docs/`` and ``mkdocs.yml`` are copied to a temporary folder (beside links
to the packages the API reference reads), the tutorial's figures are drawn there by ``docs/make_figures.py``
(the copies in the repository are removed first, so the build shows what the script draws now), and the site
is built from that copy (about 15 s in all on a 2-core machine). Then checks on what it wrote:

* the build passes in strict mode: no warning of any kind, so no broken link between pages, no link
  to a missing ``#anchor``, no page left out of the nav, no docstring griffe cannot parse;
* the API reference lists every public name: each name of ``spcakit.__all__``, ``SparsePCA`` and
  ``plotting`` is in the site's objects inventory (``objects.inv``) as ``spcakit.NAME``, and the
  page it points to has that anchor;
* the docstrings' Sphinx roles were turned into Markdown (``docs/griffe_rst.py``), so that no
  ``:class:`` or ``:math:`` is printed literally on a reference page;
* the mathematics was typeset at build time (``docs/hooks/mathml.py``): no page shows a raw ``\\(`` or ``\\[``
  outside code, in its text, its table of contents or an attribute, and a formula that cannot be converted
  is reported naming the page;
* the site makes no request to another host: no script, stylesheet, image or frame of a built page, and
  no ``@import`` or ``url()`` of a built stylesheet, points to ``http://``, ``https://`` or ``//``;
* the doctest blocks (``docs/hooks/doctest_prompts.py``) show no ``# doctest:`` directive, their prompts and
  output lines are marked unselectable, and the copy button's text is the code alone;
* every Parameters, Other Parameters and Attributes entry of a documented object names real
  parameters (griffe reads a paragraph placed after such a section, without a ``Notes`` heading,
  as more entries, and shows it as a table row: it warns about nothing, so this is checked here);
* the figures of ``docs/figures`` are in the site byte for byte (an image a page shows but the
  site lacks is a broken link, which fails the strict build), and the pages show them: the tutorial its
  four PNGs as the script drew them, the reproductions page the encoders' Fig. 1 plots (whether the
  committed PNGs plot what the script plots now is tests/test_figures.py's check);
* the README's images are files of the repository (GitHub shows them from there).

Skipped, with the reason, where the ``docs`` extra (mkdocs, mkdocs-material, mkdocstrings, latex2mathml) is not
installed; the ``test`` extra installs it, so CI runs it.
"""

from __future__ import annotations

import html
import importlib.util
import logging
import os
import re
import shutil
import subprocess
import sys
import zlib
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from urllib.parse import unquote, urlsplit

import pytest

import spcakit

REPO = Path(__file__).resolve().parents[1]
FIGURES = REPO / "docs" / "figures"
DOCS_MODULES = ("mkdocs", "material", "mkdocstrings", "mkdocstrings_handlers", "latex2mathml")
HOOKS = REPO / "docs" / "hooks"
#: What the tutorial's figures need besides the docs extra (``docs/make_figures.py``).
FIGURE_MODULES = ("matplotlib", "sklearn")
#: A strict build takes about 6 s on a 2-core machine, the figures about 5 s; this only guards against a hang.
BUILD_TIMEOUT_S = 300
#: The tutorial's figures, as docs/make_figures.py writes them (relative to docs/) and docs/tutorial.md shows them.
TUTORIAL_FIGURES = ("figures/tutorial/tradeoff.png", "figures/tutorial/loadings.png", "figures/tutorial/variance.png",
                    "figures/tutorial/stability.png")
#: The plots of the sparse linear encoders' Fig. 1, shown on the reproductions page.
ENCODER_FIGURES = tuple(f"figures/encoders-fig1-{name}.svg" for name in ("pitprops", "lymphoma", "colon"))
#: What the API reference reads from the repository (``paths: [., plugins]`` of mkdocs.yml), linked into the copy.
SOURCE_FOLDERS = ("spcakit", "plugins")
IMAGE = re.compile(r"<img\b[^>]*?\bsrc=\"([^\"]+)\"")
MARKDOWN_IMAGE = re.compile(r"!\[[^\]]*\]\(([^)\s]+)")
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
#: Names documented on the reference pages besides ``spcakit.__all__``.
EXTRA_PUBLIC = ("SparsePCA", "plotting")
#: ``name domain:role priority uri title``, one object per line of the decompressed inventory.
INVENTORY_LINE = re.compile(
    r"^(?P<name>\S+)\s+(?P<domain>[^:\s]+):(?P<role>\S+)\s+(?P<priority>-?\d+)\s+(?P<uri>\S*)\s+(?P<title>.*)$"
)
#: An entry of a NumPy Parameters/Attributes section: a name, or several (``r, p``), with ``*``/``**``.
ENTRY_NAMES = re.compile(r"^\*{0,2}[A-Za-z_]\w*(?:, \*{0,2}[A-Za-z_]\w*)*$")
NAMED_SECTIONS = ("parameters", "other parameters", "attributes")
SPHINX_ROLE = re.compile(r":(?:class|func|meth|mod|attr|data|exc|obj|math):`")
#: What a browser shows as code, or does not show as text: left out of the raw-math check.
NOT_TEXT = re.compile(r"<(pre|code|script|style|textarea)\b[^>]*>.*?</\1>", re.DOTALL | re.IGNORECASE)
RAW_MATH = re.compile(r".{0,60}\\[(\[].{0,60}", re.DOTALL)
#: Elements whose URL attributes the browser fetches (an ``<a href>`` is only followed when clicked).
FETCHING_TAG = re.compile(
    r"<(?:script|link|img|iframe|frame|source|video|audio|embed|object|track|image|use)\b[^>]*>", re.IGNORECASE
)
URL_ATTRIBUTE = re.compile(
    r"""\b(?:src|href|srcset|data|poster|xlink:href)\s*=\s*(?:"([^"]*)"|'([^']*)')""", re.IGNORECASE
)
#: ``@import "x"``, ``@import url(x)`` and ``url(x)`` in CSS (a stylesheet, a ``<style>`` or a ``style=""``).
CSS_URL = re.compile(r"""@import\s+(?:url\(\s*)?["']?([^"')\s;]+)|url\(\s*["']?([^"')\s]+)""", re.IGNORECASE)
STYLE = re.compile(r"<style\b[^>]*>(.*?)</style>|\bstyle\s*=\s*\"([^\"]*)\"", re.DOTALL | re.IGNORECASE)
OTHER_HOST = re.compile(r"^\s*(?:https?:)?//", re.IGNORECASE)
#: A fenced Python block of a page and its first line; a rendered code block, its attributes and its code.
PYTHON_FENCE = re.compile(r"^```python[^\n]*\n(?P<first>[^\n]*)", re.MULTILINE)
CODE_BLOCK = re.compile(r'<div class="(?:[^"]*\s)?highlight(?:\s[^"]*)?"(?P<attrs>[^>]*)><pre[^>]*>(?:<span></span>)?'
                        r"<code[^>]*>(?P<code>.*?)</code></pre>", re.DOTALL)  # fmt: skip


def _missing_docs_modules() -> list[str]:
    return [name for name in DOCS_MODULES if importlib.util.find_spec(name) is None]


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of ``docs/`` and ``mkdocs.yml`` with the tutorial's figures drawn into it by ``docs/make_figures.py``."""
    missing = _missing_docs_modules() + [name for name in FIGURE_MODULES if importlib.util.find_spec(name) is None]
    if missing:
        pytest.skip(f"the docs extra is not installed ({', '.join(missing)} missing): pip install -e '.[test]'")
    root = tmp_path_factory.mktemp("project")
    shutil.copytree(REPO / "docs", root / "docs", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy2(REPO / "mkdocs.yml", root / "mkdocs.yml")
    for folder in SOURCE_FOLDERS:
        (root / folder).symlink_to(REPO / folder, target_is_directory=True)
    shutil.rmtree(root / "docs" / "figures" / "tutorial", ignore_errors=True)  # the build must show what the script draws
    done = subprocess.run(
        [sys.executable, str(root / "docs" / "make_figures.py"), "--out-dir", str(root / "docs" / "figures" / "tutorial")],
        cwd=root, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S,
    )  # fmt: skip
    assert done.returncode == 0, f"docs/make_figures.py failed (exit {done.returncode}):\n{done.stdout}{done.stderr}"
    for figure in TUTORIAL_FIGURES:
        assert f"wrote {root / 'docs' / figure}" in done.stdout, done.stdout
    return root


@pytest.fixture(scope="module")
def site(project: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}  # mkdocs-material's banner about its successor
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(project / "mkdocs.yml"), "--site-dir", str(out)],
        cwd=project, env=env, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S,
    )  # fmt: skip
    log = done.stdout + done.stderr
    assert done.returncode == 0, f"mkdocs build --strict failed (exit {done.returncode}):\n{log}"
    warnings = [line for line in log.splitlines() if line.startswith(("WARNING", "ERROR"))]
    assert not warnings, "\n".join(warnings)
    return out


def read_inventory(path: Path) -> dict[str, str]:
    """A Sphinx objects inventory (version 2): object name -> URI relative to the site (``$`` expanded)."""
    raw = path.read_bytes()
    header, _, body = raw.partition(b"# The remainder of this file is compressed using zlib.\n")
    assert header.startswith(b"# Sphinx inventory version 2\n"), header[:80]
    entries: dict[str, str] = {}
    for line in zlib.decompress(body).decode("utf-8").splitlines():
        match = INVENTORY_LINE.match(line)
        assert match, f"unreadable inventory line {line!r}"
        uri = match["uri"]
        entries[match["name"]] = uri[:-1] + match["name"] if uri.endswith("$") else uri
    return entries


def page_file(site: Path, uri: str) -> tuple[Path, str]:
    """The HTML file a site-relative URI names (``reference/api/#x``: ``reference/api/index.html``) and its fragment."""
    parts = urlsplit(uri)
    page = site / unquote(parts.path)
    if parts.path == "" or parts.path.endswith("/"):
        page = page / "index.html"
    return page, unquote(parts.fragment)


def public_names() -> list[str]:
    return sorted(set(spcakit.__all__) | set(EXTRA_PUBLIC))


def test_reference_lists_every_public_name(site: Path) -> None:
    inventory = read_inventory(site / "objects.inv")
    names = public_names()
    assert "fit" in names and "Result" in names  # the list the check runs over is the real one
    missing = [name for name in names if f"spcakit.{name}" not in inventory]
    assert not missing, (
        f"not in the API reference: {', '.join('spcakit.' + n for n in missing)}; add a `::: spcakit.NAME` "
        f"block to a page of docs/reference/ (and the page to the nav in mkdocs.yml when it is new)"
    )
    for name in names:
        page, anchor = page_file(site, inventory[f"spcakit.{name}"])
        assert page.is_file(), f"spcakit.{name}: the inventory points to {page}, which the build did not write"
        assert f'id="{anchor}"' in page.read_text(encoding="utf-8"), f"spcakit.{name}: no anchor #{anchor} on {page}"


def test_fit_documents_on_step(site: Path) -> None:
    page, anchor = page_file(site, read_inventory(site / "objects.inv")["spcakit.fit"])
    html = page.read_text(encoding="utf-8")
    section = html[html.index(f'id="{anchor}"') :]
    section = section[: section.find('class="doc doc-object ', 1)]  # up to the next documented object
    # the parameters table of fit names on_step, how the drivers call it, and links to the progress reports
    assert "<code>on_step</code>" in section, "fit's on_step parameter is not documented"
    assert "on_step(component, n_components," in section, "on_step's call is not documented"
    assert re.search(r'href="[^"]*#spcakit\.output\.progress"', section), "on_step does not link to spcakit.output.progress"


def test_reference_pages_print_no_sphinx_roles(site: Path) -> None:
    pages = sorted((site / "reference").rglob("*.html"))
    assert len(pages) >= 10, [str(p) for p in pages]
    literal = {str(p.relative_to(site)): SPHINX_ROLE.findall(p.read_text(encoding="utf-8")) for p in pages}
    assert not {page: roles for page, roles in literal.items() if roles}
    # and the docstrings' mathematics became MathML (docs/hooks/mathml.py)
    assert "<math " in (site / "reference" / "metrics" / "index.html").read_text(encoding="utf-8")


def test_site_holds_the_figures(site: Path) -> None:
    figures = sorted(FIGURES.glob("*.svg"))
    assert figures, f"no figures in {FIGURES}"
    for figure in figures:
        copy = site / "figures" / figure.name
        assert copy.is_file(), f"{figure.name} is not in the built site"
        assert copy.read_bytes() == figure.read_bytes(), f"{figure.name} differs in the built site"


def shown_images(site: Path, page: str) -> dict[str, Path]:
    """The images a built page shows: ``src`` as written -> the file it resolves to in the site."""
    html = site / page / "index.html"
    assert html.is_file(), f"{page} is not in the built site"
    return {src: (html.parent / unquote(urlsplit(src).path)).resolve() for src in IMAGE.findall(html.read_text(encoding="utf-8"))}


def test_tutorial_shows_the_figures_the_script_draws(project: Path, site: Path) -> None:
    images = shown_images(site, "tutorial")
    shown = {path.relative_to(site.resolve()).as_posix(): path for path in images.values()}
    assert set(TUTORIAL_FIGURES) <= set(shown), f"the tutorial shows {sorted(shown)}, not all of {TUTORIAL_FIGURES}"
    for figure in TUTORIAL_FIGURES:
        drawn = (project / "docs" / figure).read_bytes()
        assert drawn.startswith(PNG_SIGNATURE), figure
        assert shown[figure].read_bytes() == drawn, f"{figure} in the site is not what docs/make_figures.py drew"


def test_reproductions_show_the_encoders_figure_1(site: Path) -> None:
    images = shown_images(site, "reproductions")
    shown = {path.relative_to(site.resolve()).as_posix() for path in images.values()}
    assert set(ENCODER_FIGURES) <= shown, f"the reproductions page shows {sorted(shown)}"
    assert all(path.is_file() for path in images.values())


def test_readme_images_are_in_the_repository() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    images = MARKDOWN_IMAGE.findall(readme)
    assert "docs/figures/tutorial/tradeoff.png" in images, images
    for image in images:
        if "://" not in image:
            assert (REPO / image).is_file(), f"README.md shows {image}, which is not a file of the repository"



def test_docstring_sections_name_real_entries(site: Path) -> None:
    import griffe

    spec = importlib.util.spec_from_file_location("griffe_rst", REPO / "docs" / "griffe_rst.py")
    assert spec is not None and spec.loader is not None
    griffe_rst = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(griffe_rst)
    loader = griffe.GriffeLoader(
        search_paths=[str(REPO), str(REPO / "plugins")],
        docstring_parser=griffe.Parser.numpy,
        extensions=griffe.load_extensions(griffe_rst.RestToMarkdown),
    )
    package = loader.load("spcakit")
    documented = {name for name in read_inventory(site / "objects.inv") if name.startswith("spcakit.")}
    bad: list[str] = []
    seen: set[str] = set()
    checked = 0
    for name in sorted(documented):
        try:
            obj = package[name.removeprefix("spcakit.")]
        except (KeyError, griffe.AliasResolutionError, griffe.CyclicAliasError):
            continue
        if obj.docstring is None or obj.canonical_path in seen:
            continue
        seen.add(obj.canonical_path)
        for section in obj.docstring.parsed:
            if section.kind.value in NAMED_SECTIONS:
                checked += len(section.value)
                where = f"{obj.canonical_path} ({section.kind.value})"
                bad += [f"{where}: {entry.name[:70]!r}" for entry in section.value if not ENTRY_NAMES.match(entry.name)]
    assert checked > 100, checked  # the reference documents about 160 entries: fewer means the walk went wrong
    assert not bad, "text read as section entries (put a paragraph after a section under a 'Notes' heading):\n" + "\n".join(bad)


def load_hook(name: str) -> Any:
    """The module of ``docs/hooks/NAME.py``, as mkdocs loads it (by path, not from a package)."""
    if importlib.util.find_spec("latex2mathml") is None:
        pytest.skip("the docs extra is not installed (latex2mathml missing): pip install -e '.[test]'")
    spec = importlib.util.spec_from_file_location(f"docs_hooks_{name}", HOOKS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def built_files(site: Path, suffix: str) -> list[Path]:
    files = sorted(site.rglob(f"*{suffix}"))
    assert files, f"no {suffix} file in the built site"
    return files


def test_site_requests_nothing_from_another_host(site: Path) -> None:
    """No script, stylesheet, font, image or frame from a CDN or Google Fonts: the site works offline."""
    found: list[str] = []
    for page in built_files(site, ".html"):
        text = page.read_text(encoding="utf-8")
        where = page.relative_to(site).as_posix()
        for tag in FETCHING_TAG.findall(text):
            for double, single in URL_ATTRIBUTE.findall(tag):
                if OTHER_HOST.match(double or single):
                    found.append(f"{where}: {tag[:160]}")
        for block, attribute in STYLE.findall(text):
            found += [f"{where}: CSS {a or b}" for a, b in CSS_URL.findall(block or attribute) if OTHER_HOST.match(a or b)]
        if 'class="mermaid"' in text:  # mkdocs-material's script would fetch mermaid from unpkg.com for it
            found.append(f"{where}: a mermaid diagram")
    stylesheets = built_files(site, ".css")
    assert any(path.name == "extra.css" for path in stylesheets), "docs/stylesheets/extra.css is not in the site"
    for stylesheet in stylesheets:
        where = stylesheet.relative_to(site).as_posix()
        css = stylesheet.read_text(encoding="utf-8")
        found += [f"{where}: {a or b}" for a, b in CSS_URL.findall(css) if OTHER_HOST.match(a or b)]
    assert not found, "the built site fetches from another host (it must work offline):\n" + "\n".join(sorted(set(found)))
    # the pages load the site's own stylesheet and no MathJax
    tutorial = (site / "tutorial" / "index.html").read_text(encoding="utf-8")
    assert 'href="../stylesheets/extra.css"' in tutorial
    assert "mathjax" not in tutorial.lower()


def test_no_page_shows_raw_math(site: Path) -> None:
    """Every formula was typeset (MathML): no ``\\(`` or ``\\[`` left outside code, the table of contents included."""
    found: list[str] = []
    for page in built_files(site, ".html"):
        shown = NOT_TEXT.sub(" ", page.read_text(encoding="utf-8"))
        found += [f"{page.relative_to(site).as_posix()}: {m!r}" for m in RAW_MATH.findall(shown)]
    assert not found, "raw TeX on the built pages (docs/hooks/mathml.py did not convert it):\n" + "\n".join(found[:30])
    tutorial = (site / "tutorial" / "index.html").read_text(encoding="utf-8")
    # the heading "Choose $k$" in the page and in its table of contents
    heading = r'<h2 id="choose-k">Choose <span class="arithmatex"><math [^>]*display="inline"><mrow><mi>k</mi>'
    assert re.search(heading, tutorial), "the heading shows no MathML"
    toc = r'class="md-nav__link">\s*<span class="md-ellipsis">\s*Choose <math '
    assert re.search(toc, tutorial), "the table of contents shows no MathML"
    assert 'aria-label="Choose k"' in tutorial


def test_math_hook_reports_what_it_cannot_convert() -> None:
    hook = load_hook("mathml")
    messages: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: messages.append(record.getMessage())  # type: ignore[method-assign]
    hook.log.addHandler(handler)
    try:
        page = SimpleNamespace(file=SimpleNamespace(src_uri="guide.md"), toc=[], title="Guide")
        formula = '<p><span class="arithmatex">\\(\\arg\\max_k \\big\\{ x_k \\big\\}\\)</span></p>'
        good = hook.on_page_content(formula, page=page)  # \\arg and \\big\\{, which latex2mathml gets wrong alone
        assert messages == [] and "<math " in good and "\\" not in good, (messages, good)
        bad = '<p><span class="arithmatex">\\(\\frobnicate x\\)</span> <div class="arithmatex">\\[\\left( x\\]</div></p>'
        out = hook.on_page_content(bad, page=page)
    finally:
        hook.log.removeHandler(handler)
    assert messages == [
        "guide.md: cannot convert the formula $\\frobnicate x$ to MathML (unknown to latex2mathml: \\frobnicate)",
        "guide.md: cannot convert the formula $$\\left( x$$ to MathML (ExtraLeftOrMissingRightError)",
    ], messages  # logged as errors: strict mode (mkdocs.yml) fails the build on them
    assert out == bad


def test_tutorial_code_copies_without_prompts(site: Path) -> None:
    """The tutorial's doctest blocks: no directive shown, prompts and output marked, the copy text the code alone."""
    markdown = (REPO / "docs" / "tutorial.md").read_text(encoding="utf-8")
    doctests = [m for m in PYTHON_FENCE.finditer(markdown) if m["first"].startswith(">>>")]
    assert doctests, "docs/tutorial.md has no doctest block"
    html_text = (site / "tutorial" / "index.html").read_text(encoding="utf-8")
    blocks = [m for m in CODE_BLOCK.finditer(html_text) if "data-copy=" in m["attrs"]]
    assert len(blocks) == len(doctests), f"{len(blocks)} blocks marked, {len(doctests)} doctest blocks in docs/tutorial.md"
    assert "# doctest" not in html_text, "a doctest directive is shown on the tutorial page"
    prompts = 0
    for block in blocks:
        after_output = False
        for line in block["code"].split("\n"):
            if after_output:  # an output line's span holds its newline: it closes at the start of the next line
                assert line.startswith("</span>"), line
                line = line[len("</span>") :]
            after_output = line.startswith('<span class="doctest-output">')
            text = html.unescape(re.sub(r"<[^>]+>", "", line))
            if not text.strip() or after_output:
                continue
            # a source line: its prompt marked (an output line may start with "..." too: it is wrapped above)
            assert re.match(r'<span class="doctest-prompt">(&gt;&gt;&gt;|\.\.\.) ?</span>', line), line
            prompts += 1
        copied = html.unescape(re.search(r'data-copy="([^"]*)"', block["attrs"])[1])
        assert copied.strip() and not re.search(r"^(>>>|\.\.\.)( |$)|# doctest", copied, re.MULTILINE), copied
    assert prompts >= len(blocks)
    css = (site / "stylesheets" / "extra.css").read_text(encoding="utf-8")
    assert re.search(r"\.doctest-prompt,\s*\.doctest-output\s*\{[^}]*user-select:\s*none", css), css


def test_doctest_hook_marks_prompts_output_and_directives() -> None:
    hook = load_hook("doctest_prompts")
    code = (
        '<span class="o">&gt;&gt;&gt;</span> <span class="n">f</span><span class="p">(</span>  '
        '<span class="c1"># doctest: +SKIP</span>\n'
        '<span class="o">...</span>     <span class="mi">1</span><span class="p">)</span>\n'
        '<span class="mi">2</span>\n'
        '<span class="o">...</span>\n'
        '<span class="o">&gt;&gt;&gt;</span> <span class="n">x</span> <span class="o">&lt;</span> <span class="mi">3</span>\n'
    )
    shown, copied = hook.doctest_block(code)
    assert copied == "f(\n    1)\nx < 3"
    assert "# doctest" not in shown and "+SKIP" not in shown
    assert shown.split("\n") == [
        '<span class="doctest-prompt">&gt;&gt;&gt; </span><span class="n">f</span><span class="p">(</span>',
        '<span class="doctest-prompt">... </span>    <span class="mi">1</span><span class="p">)</span>',
        '<span class="doctest-output"><span class="mi">2</span>',
        '</span><span class="doctest-output"><span class="o">...</span>',  # "..." after output is output
        (
            '</span><span class="doctest-prompt">&gt;&gt;&gt; </span><span class="n">x</span> <span class="o">&lt;</span> '
            '<span class="mi">3</span>'
        ),
        "",
    ]
    assert hook.doctest_block('<span class="n">x</span> <span class="o">=</span> <span class="mi">1</span>\n') is None

