"""Every example in the Markdown documentation (``docs/**/*.md``) runs and prints what the page shows.

Pages are found by globbing at collection time, so a page added later is checked too. Each example
is one test, named ``docs/PAGE.md:LINE``:

* a ```` ```python ```` block holding ``>>>`` prompts is one doctest (the stdlib ``doctest`` parser on
  the block's text, default option flags; a page may use ``# doctest:`` directives). Blocks run in
  page order, each in its own copy of the namespace (a block imports the names it uses);
* in a ```` ```console ```` block, each ``$ spcakit ...`` line is run in-process through typer's
  ``CliRunner`` and its output (stdout and stderr, as a terminal shows them) is compared with the
  lines that follow it up to the next ``$ `` line. Before comparing, trailing spaces and leading or
  trailing blank lines are dropped (Markdown cannot keep them reliably) and timing values
  (``0.00672 s``, ``"seconds": 0.0123``) are replaced by a placeholder; nothing else is normalised.

  - A command shown without output must exit with code 0. A command whose output holds an
    ``Error:`` line must exit with a nonzero code; one followed by ``$ echo $?`` must exit with the
    code shown there. Any other exit code fails.
  - ``| tail -N`` / ``| head -N`` (also ``-n N``) keep the last / first N lines of stdout, stderr
    passing by, as in a shell. ``NAME=value`` before the command sets environment variables and
    reloads the plugins, as a new process would.
  - Any other shell command, pipe or redirection is skipped, with the reason.

Supporting files, so that pages stay self-contained:

* a fenced block whose info string has ``title="NAME"`` (rendered as the block's caption by
  MkDocs-style renderers, ignored by GitHub) is written to ``NAME`` in the page's working directory,
  a fresh temporary folder in which the page's examples run; that folder is on ``sys.path`` while
  the page runs, so a titled ``.py`` block can be imported;
* a titled ``pyproject.toml`` block with ``[project] name``/``version`` and
  ``[project.entry-points.spcakit]`` is "installed" there (a ``.dist-info`` folder with its entry
  points), so the plugin it announces loads like an installed package; the plugin session is
  reloaded when the page starts and again when it ends;
* ``<!-- docs-test: skip REASON -->`` on the line before a fence skips the block's examples with
  REASON (for examples that need an environment a test cannot build, such as broken packages).

Pages in ``PAGES_UNDER_EDIT`` are skipped while their authors rewrite them.
"""

from __future__ import annotations

import difflib
import doctest
import fnmatch
import importlib
import re
import shlex
import sys
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import spcakit.core.plugins
from spcakit.cli import app

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"

# Pages (paths relative to the repository, or fnmatch patterns) whose examples are skipped because
# someone is rewriting them right now. (README.md and CHANGELOG.md are outside docs/: not collected.)
PAGES_UNDER_EDIT: tuple[str, ...] = ()
UNDER_EDIT_REASON = "being edited; remove from PAGES_UNDER_EDIT when done"

# Rich (typer's help screens) reads the terminal's width; fix it so `spcakit --help` prints alike
# everywhere. Colours are off because CliRunner's streams are not terminals (and see _invoke).
COLUMNS = "120"
TIMING = [
    (re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?:[eE][-+]?\d+)? s(?=$|[\s,;)])", re.M), "<time> s"),
    (re.compile(r'("seconds": )-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?'), r"\1<time>"),
]
FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})(?P<info>[^`]*)$")
SKIP_MARK = re.compile(r"^\s*<!--\s*docs-test:\s*skip\s+(?P<reason>.*?)\s*-->\s*$")
TITLE = re.compile(r"""\btitle=(?:"([^"]*)"|'([^']*)'|(\S+))""")
ENV_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


# -- parsing ------------------------------------------------------------------------------------
@dataclass
class Block:
    lang: str
    title: str | None
    lines: list[str]
    first_line: int  # 1-based line number of the block's first content line
    skip: str | None


@dataclass
class Example:
    page: str
    line: int
    kind: str  # "doctest", "command", or "malformed" (the page's mistake, in ``command``)
    block: Block
    command: str = ""
    expected: list[str] = field(default_factory=list)
    exit_code: int | None = None  # from a following `$ echo $?`

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"


def parse_blocks(text: str) -> list[Block]:
    blocks: list[Block] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, info = len(m["indent"]), m["fence"], m["info"].strip()
        start = i
        body: list[str] = []
        i += 1
        while i < len(lines):
            closing = lines[i].strip()
            if closing.startswith(fence[0] * len(fence)) and not closing.strip(fence[0]):
                break
            line = lines[i]
            body.append(line[indent:] if line[:indent].strip() == "" else line.lstrip())
            i += 1
        i += 1
        previous = next((lines[k] for k in range(start - 1, -1, -1) if lines[k].strip()), "")
        skip = SKIP_MARK.match(previous)
        title = TITLE.search(info)
        blocks.append(Block(
            lang=info.split()[0].lower() if info else "",
            title=next(g for g in title.groups() if g is not None) if title else None,
            lines=body,
            first_line=start + 2,
            skip=skip["reason"] if skip else None,
        ))  # fmt: skip
    return blocks


def page_examples(path: Path) -> list[Example]:
    page = path.relative_to(REPO).as_posix()
    examples: list[Example] = []
    for block in parse_blocks(path.read_text(encoding="utf-8")):
        if block.lang in ("python", "py", "pycon") and any(l.lstrip().startswith(">>>") for l in block.lines):
            first = next(k for k, l in enumerate(block.lines) if l.lstrip().startswith(">>>"))
            examples.append(Example(page, block.first_line + first, "doctest", block))
        elif block.lang == "console":
            for k, command, output in console_entries(block):
                if command == "echo $?":
                    previous = examples[-1] if examples and examples[-1].block is block else None
                    shown = [line.strip() for line in output if line.strip()]
                    if previous is None or previous.kind != "command" or len(shown) != 1 or not shown[0].isdigit():
                        problem = "`$ echo $?` must follow a command in the same block and show its exit code"
                        examples.append(Example(page, block.first_line + k, "malformed", block, command=problem))
                    else:
                        previous.exit_code = int(shown[0])
                    continue
                examples.append(Example(page, block.first_line + k, "command", block, command=command, expected=output))
    return examples


def console_entries(block: Block) -> list[tuple[int, str, list[str]]]:
    """``(line index, command, output lines)`` for each ``$ `` line of a console block."""
    entries: list[tuple[int, str, list[str]]] = []
    for k, line in enumerate(block.lines):
        if line.startswith("$ "):
            entries.append((k, line[2:].strip(), []))
        elif entries:
            entries[-1][2].append(line)
    return entries


def under_edit(page: str) -> bool:
    return any(fnmatch.fnmatchcase(page, pattern) for pattern in PAGES_UNDER_EDIT)


def collect() -> list[Example]:
    examples: list[Example] = []
    for path in sorted(DOCS.glob("**/*.md")):
        examples.extend(page_examples(path))
    return examples


EXAMPLES = collect()


# -- a page's state: working folder, doctest namespace, installed plugin files ------------------------
class PageRun:
    """The examples of one page run in order in one folder and share one doctest namespace."""

    def __init__(self, page: str, folder: Path) -> None:
        self.page = page
        self.folder = folder
        self.namespace: dict[str, Any] = {"__name__": "__main__"}
        self.done: set[int] = set()
        self.modules = set(sys.modules)
        self.installs_plugin = False
        for block in (b for b in parse_blocks((REPO / page).read_text(encoding="utf-8")) if b.title):
            target = folder / block.title
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text("\n".join(block.lines) + "\n", encoding="utf-8")
            if target.name == "pyproject.toml":
                self.installs_plugin |= _install(tomllib.loads(target.read_text()), folder)
        sys.path.insert(0, str(folder))
        importlib.invalidate_caches()
        if self.installs_plugin:
            spcakit.core.plugins.reset()

    def close(self) -> None:
        if str(self.folder) in sys.path:
            sys.path.remove(str(self.folder))
        for name in set(sys.modules) - self.modules:  # modules imported from the page's folder
            module_file = getattr(sys.modules[name], "__file__", None) or ""
            if module_file.startswith(str(self.folder)):
                del sys.modules[name]
        importlib.invalidate_caches()
        if self.installs_plugin:
            spcakit.core.plugins.reset()


def _install(pyproject: dict[str, Any], folder: Path) -> bool:
    """Write the ``.dist-info`` of a pyproject.toml's distribution into ``folder`` (on ``sys.path``), so that
    ``importlib.metadata`` lists its entry points; True if it announces a spcakit plugin."""
    project = pyproject.get("project", {})
    entry_points = project.get("entry-points", {})
    if "name" not in project or "version" not in project or not entry_points:
        return False
    dist = folder / f"{project['name'].replace('-', '_')}-{project['version']}.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n")
    (dist / "entry_points.txt").write_text(
        "".join(f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in eps.items()) + "\n" for group, eps in entry_points.items())
    )
    return "spcakit" in entry_points


_current: PageRun | None = None


@pytest.fixture(scope="module", autouse=True)
def _close_last_page() -> Iterator[None]:
    yield
    global _current
    if _current is not None:
        _current.close()
        _current = None


def page_run(page: str, tmp_path_factory: pytest.TempPathFactory) -> PageRun:
    global _current
    if _current is None or _current.page != page:
        if _current is not None:
            _current.close()
            _current = None
        _current = PageRun(page, tmp_path_factory.mktemp(re.sub(r"\W+", "-", page)))
    return _current


# -- running --------------------------------------------------------------------------------------------
def normalise(lines: list[str]) -> list[str]:
    text = "\n".join(line.rstrip() for line in lines).strip("\n")
    for pattern, replacement in TIMING:
        text = pattern.sub(replacement, text)
    return text.split("\n") if text else []


def run_doctest(example: Example, run: PageRun) -> None:
    page_examples_before = [e for e in EXAMPLES if e.page == example.page and e.kind == "doctest" and e.line < example.line]
    for earlier in page_examples_before:  # run alone (-k), a block still needs the names defined before it
        if earlier.line not in run.done:
            _doctest(earlier, run)
    failures, report = _doctest(example, run)
    assert not failures, f"{example.id}: {failures} doctest failure(s)\n{report}"


def _doctest(example: Example, run: PageRun) -> tuple[int, str]:
    run.done.add(example.line)
    test = doctest.DocTestParser().get_doctest(
        "\n".join(example.block.lines), run.namespace, example.id, example.page, example.block.first_line - 1
    )
    report: list[str] = []
    runner = doctest.DocTestRunner(verbose=False)
    runner.run(test, out=report.append, clear_globs=False)
    return runner.failures, "".join(report)


def parse_command(command: str, where: str = "") -> tuple[dict[str, str], list[str], tuple[str, int] | None]:
    """``(env, argv, pipe)`` of a shell line; ``pytest.skip`` (naming ``where``) for what is not emulated."""
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = "#"
    tokens = list(lexer)
    env: dict[str, str] = {}
    while tokens and ENV_ASSIGNMENT.match(tokens[0]):
        key, _, value = tokens.pop(0).partition("=")
        env[key] = value
    stages: list[list[str]] = [[]]
    for token in tokens:
        if token == "|":
            stages.append([])
        elif token and set(token) <= set("();<>&|"):
            pytest.skip(f"{where}: shell operator {token!r} is not emulated: `{command}`")
        else:
            stages[-1].append(token)
    argv = stages[0]
    if not argv or argv[0] != "spcakit":
        pytest.skip(f"{where}: shell command {argv[0] if argv else command!r} is not emulated: `{command}`")
    pipe = None
    for stage in stages[1:]:
        m = re.fullmatch(r"(head|tail) (?:-n )?-?(\d+)", " ".join(stage))
        if not m or pipe is not None:
            pytest.skip(f"{where}: pipe to {' '.join(stage)!r} is not emulated: `{command}`")
        pipe = (m[1], int(m[2]))
    return env, argv[1:], pipe


def _invoke(args: list[str], env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Any:
    import typer.rich_utils

    monkeypatch.setattr(typer.rich_utils, "FORCE_TERMINAL", False)  # GITHUB_ACTIONS/FORCE_COLOR at import
    monkeypatch.setattr(typer.rich_utils, "MAX_WIDTH", None)  # TERMINAL_WIDTH at import
    if env:
        spcakit.core.plugins.reset()  # a new process would load the plugins under this environment
    try:
        return CliRunner().invoke(app, args, env={"COLUMNS": COLUMNS, **env})
    finally:
        if env:
            spcakit.core.plugins.reset()


def run_command(example: Example, monkeypatch: pytest.MonkeyPatch) -> None:
    env, args, pipe = parse_command(example.command, example.id)
    result = _invoke(args, env, monkeypatch)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"{example.id}: `{example.command}` raised") from result.exception
    if pipe is None:
        actual = result.output.splitlines()
    else:
        out = result.stdout.splitlines()
        out = out[max(len(out) - pipe[1], 0):] if pipe[0] == "tail" else out[:pipe[1]]
        actual = result.stderr.splitlines() + out
    expected, got = normalise(example.expected), normalise(actual)
    if example.expected and got != expected:
        diff = "\n".join(difflib.unified_diff(expected, got, "page", "now", lineterm=""))
        pytest.fail(f"{example.id}: `{example.command}` prints something else:\n{diff}", pytrace=False)
    code = result.exit_code
    if example.exit_code is not None:
        assert code == example.exit_code, f"{example.id}: `{example.command}` exits {code}, page says {example.exit_code}"
    elif any(line.startswith("Error:") for line in expected):
        assert code != 0, f"{example.id}: `{example.command}` shows an error but exits 0"
    else:
        assert code == 0, f"{example.id}: `{example.command}` exits {code}:\n{result.output}"


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.id for e in EXAMPLES])
def test_doc_example(example: Example, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    if under_edit(example.page):
        pytest.skip(UNDER_EDIT_REASON)
    if example.block.skip:
        pytest.skip(f"{example.id}: {example.block.skip}")
    if example.kind == "malformed":
        pytest.fail(f"{example.id}: {example.command}", pytrace=False)
    run = page_run(example.page, tmp_path_factory)
    monkeypatch.chdir(run.folder)
    if example.kind == "doctest":
        run_doctest(example, run)
    else:
        run_command(example, monkeypatch)


def test_pages_are_found() -> None:
    pages = {e.page for e in EXAMPLES}
    assert "docs/cli.md" in pages and any(p.startswith("docs/methods/") for p in pages)


#: A repository path in a code span of a page: ``tests/core/test_drivers.py``, ``benchmarks/results/exact.json``.
REPOSITORY_PATH = re.compile(r"`[^`]*?\b((?:tests|benchmarks|spcakit|plugins|docs|\.ci)/[\w./{},-]*\w\}?)[^`]*`")


def _expanded(path: str) -> list[str]:
    """``a/{b,c}.svg`` as ``a/b.svg`` and ``a/c.svg`` (the shell's brace expansion, one level)."""
    brace = re.search(r"\{([^{}]*)\}", path)
    if brace is None:
        return [path]
    return [path[: brace.start()] + choice + path[brace.end() :] for choice in brace.group(1).split(",")]


def test_paths_the_pages_name_exist() -> None:
    """Every file or folder of the repository that the README or a page of the docs names in code exists."""
    pages = [REPO / "README.md", *sorted(DOCS.rglob("*.md"))]
    named, missing = 0, []
    for page in pages:
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            for match in REPOSITORY_PATH.finditer(line):
                for path in _expanded(match.group(1).rstrip(".")):
                    named += 1
                    if not (REPO / path).exists():
                        missing.append(f"{page.relative_to(REPO)}:{number}: {path}")
    assert named > 50, "the pages' repository paths were not found: has the pattern stopped matching?"
    assert not missing, "named but absent:\n" + "\n".join(missing)
