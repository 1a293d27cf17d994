"""Every ``pip install`` line of the docs and the README works from the repository.

spcakit is not on the package index, so ``pip install "spcakit[plot]"`` fails; the docs say
``pip install -e ".[plot]"`` (or ``.``) instead, run in a clone of the repository. Each line is read without
the network: its options must be ones pip takes, each requirement the repository itself (``.`` or ``-e .``, with
extras that ``pyproject.toml`` defines) or a folder of the repository (``./plugins/spcakit-firm``), or a
folder a page builds itself (:data:`PAGE_FOLDERS`).
"""

from __future__ import annotations

import re
import shlex
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PAGES = sorted([REPO / "README.md", *(REPO / "docs").rglob("*.md")])
#: A ``pip install`` command in a line: up to the end of a code span, a shell operator or a comment.
COMMAND = re.compile(r"pip install\b([^`|;&#]*)")
#: The repository itself, with extras: ``.``, ``.[a,b]``, ``".[a,b]"`` once the shell removed the quotes.
REPOSITORY = re.compile(r"^\.(?:\[(?P<extras>[A-Za-z0-9_,\-]*)\])?$")
#: pip options the lines may use that take no value (``-e`` takes the requirement after it).
FLAGS = {"-q", "--quiet", "-U", "--upgrade"}
#: Folders outside the repository that a page creates itself before installing them.
PAGE_FOLDERS = {
    (
        "docs/plugins.md",
        "./spcakit-garrote",
    ): "the plugin guide writes this package (tests/test_plugin_guide.py)"
}


def extras_defined() -> set[str]:
    with open(REPO / "pyproject.toml", "rb") as f:
        return set(tomllib.load(f)["project"]["optional-dependencies"])


def install_lines() -> list[tuple[str, int, str]]:
    """(page, line number, the arguments after ``pip install``) for every install command of the pages."""
    found = []
    for page in PAGES:
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            for match in COMMAND.finditer(line):
                found.append(
                    (page.relative_to(REPO).as_posix(), number, match.group(1).strip())
                )
    return found


def problems(page: str, arguments: str, extras: set[str]) -> list[str]:
    """What is wrong with ``pip install ARGUMENTS`` on ``page`` run in a clone of the repository (empty: nothing)."""
    try:
        words = shlex.split(arguments)
    except ValueError as exc:
        return [f"not a shell command: {exc}"]
    wrong, requirements = [], 0
    for word in words:
        if word in FLAGS or word == "-e":
            continue
        if word.startswith("-"):
            wrong.append(f"option {word!r} is not one the docs use")
            continue
        requirements += 1
        repository = REPOSITORY.match(word)
        if repository:
            named = [e for e in (repository.group("extras") or "").split(",") if e]
            wrong += [
                f"extra {e!r} is not in pyproject.toml's optional-dependencies"
                for e in named
                if e not in extras
            ]
        elif word.startswith("./"):
            if not (REPO / word).is_dir() and (page, word) not in PAGE_FOLDERS:
                wrong.append(f"{word!r} is no folder of the repository")
        else:
            wrong.append(
                f'{word!r} is not the repository (spcakit is not on the package index): use -e ".[...]"'
            )
    if requirements == 0:
        wrong.append("installs nothing")
    return wrong


def test_every_install_line_installs_from_the_repository():
    extras = extras_defined()
    lines = install_lines()
    assert len(lines) >= 10  # the tutorial's, the README's, the pages' notes of extras
    assert any(
        page == "docs/tutorial.md" and args == '-e ".[sklearn,pandas,plot]"'
        for page, _, args in lines
    )
    bad = [f"{page}:{number}: pip install {args}: {'; '.join(p)}"
           for page, number, args in lines if (p := problems(page, args, extras))]  # fmt: skip
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ('"spcakit[sklearn,pandas,plot]"', "not the repository"),
        ("'spcakit[test]'", "not the repository"),
        ('-e ".[sklearn,nosuch]"', "extra 'nosuch'"),
        ("-e ./plugins/nosuch", "no folder"),
        ("-e", "installs nothing"),
        ('"spcakit[plot', "not a shell command"),
    ],
)
def test_the_check_refuses_lines_that_do_not_install(arguments, message):
    assert any(message in p for p in problems("docs/x.md", arguments, extras_defined()))


@pytest.mark.parametrize(
    "arguments",
    [
        "-e .",
        "-q -e .",
        '-e ".[test]" -e ./plugins/spcakit-firm',
        ".[docs,plot,sklearn]",
    ],
)
def test_the_check_accepts_the_repository(arguments):
    assert problems("README.md", arguments, extras_defined()) == []
