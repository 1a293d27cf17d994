"""Following ``docs/plugins.md`` alone adds a new truncator to spcakit from a fresh third-party package.

The page's titled blocks (``pyproject.toml``, ``spcakit_garrote/__init__.py``, …) are the files of its
example package, by the convention of ``tests/test_docs.py``. This test writes them, and nothing else,
to a temporary folder; builds and installs that package with the build backend it declares
(setuptools, offline, no dependencies fetched) into a folder of its own; and runs spcakit in fresh
interpreters that see the package only through ``PYTHONPATH``, as a user would after
``pip install``. The plugin loads from its installed metadata, its truncator is listed and runs in
a built-in method, the method spec it ships as package data and its metric are registered, and the
page's own test file passes.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from test_docs import parse_blocks

REPO = Path(__file__).resolve().parents[1]
PAGE = REPO / "docs" / "plugins.md"
PACKAGE = "spcakit-garrote"  # the folder the page installs from: `pip install ./spcakit-garrote`
PAGE_FILES = {"pyproject.toml", "spcakit_garrote/__init__.py", "spcakit_garrote/spcart-garrote.toml", "tests/test_garrote.py"}


def write_page_package(folder: Path) -> Path:
    """Write the page's titled blocks into ``folder / PACKAGE``; return that folder."""
    package = folder / PACKAGE
    written = set()
    for block in parse_blocks(PAGE.read_text(encoding="utf-8")):
        if block.title:
            target = package / block.title
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text("\n".join(block.lines) + "\n", encoding="utf-8")
            written.add(block.title)
    assert written == PAGE_FILES, f"{PAGE.name} names other package files than this test expects: {sorted(written)}"
    return package


def setuptools_builds_wheels() -> bool:
    """Whether setuptools can build a wheel here (it needs the ``wheel`` package before 70.1)."""
    if importlib.util.find_spec("setuptools") is None:
        pytest.skip("setuptools, the build backend the page's pyproject.toml declares, is not installed")
    major, minor = (int(part) for part in importlib.metadata.version("setuptools").split(".")[:2])
    return (major, minor) >= (70, 1) or importlib.util.find_spec("wheel") is not None


def build_and_install(package: Path, site: Path) -> None:
    """Build ``package`` with setuptools and install it into ``site``, offline and without dependencies."""
    if setuptools_builds_wheels():
        command = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                   "--no-index", "--target", str(site), str(package)]  # fmt: skip
    else:
        # no wheel can be built: setuptools' own install command builds the same package and its
        # metadata (an .egg-info folder, which importlib.metadata reads like a .dist-info one)
        command = [sys.executable, "-W", "ignore", "-c", "from setuptools import setup; setup()", "--quiet", "install",
                   "--single-version-externally-managed", "--record", str(package / "installed.txt"),
                   "--install-lib", str(site), "--install-scripts", str(site / "bin")]  # fmt: skip
    done = subprocess.run(command, cwd=package, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"building and installing the page's package failed:\n{done.stdout}\n{done.stderr}"


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("plugin-guide")
    package = write_page_package(root)
    site = root / "site"
    build_and_install(package, site)
    elsewhere = root / "run"  # an empty working folder: the package's sources are not importable from it
    elsewhere.mkdir()
    return {"package": package, "site": site, "cwd": elsewhere}


def run(installed: dict[str, Path], *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """``python ARGS`` in a fresh interpreter that sees the installed package through PYTHONPATH only."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("SPCAKIT_")}
    environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(installed["site"]), os.environ.get("PYTHONPATH")]))
    environ.update(env or {})
    return subprocess.run([sys.executable, *args], cwd=installed["cwd"], capture_output=True, text=True,
                          env=environ, timeout=300)  # fmt: skip


def spcakit(installed: dict[str, Path], *args: str) -> subprocess.CompletedProcess:
    done = run(installed, "-m", "spcakit.cli", *args)
    assert done.returncode == 0, f"spcakit {' '.join(args)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return done


def test_the_installed_plugin_loads_from_its_metadata(installed):
    records = {rec["name"]: rec for rec in json.loads(spcakit(installed, "plugins", "--json").stdout)}
    assert records["garrote"] == {
        "name": "garrote",
        "package": "spcakit-garrote",
        "version": "0.1.0",
        "hooks": ["spcakit_register_parts", "spcakit_register_methods", "spcakit_register_metrics"],
        "error": None,
        "refused": [],
    }
    where = run(installed, "-c", "import spcakit_garrote; print(spcakit_garrote.__file__)")
    assert Path(where.stdout.strip()).is_relative_to(installed["site"]), where.stdout + where.stderr


def test_the_new_truncator_is_listed_and_runs_in_a_built_in_method(installed):
    listed = spcakit(installed, "parts", "--role", "truncator").stdout.splitlines()
    line = next((ln for ln in listed if ln.split()[:1] == ["garrote"]), None)
    assert line is not None, "\n".join(listed)
    assert "non-negative garrote" in line and "[threshold=None]" in line and line.rstrip().endswith("(garrote)")

    doc = json.loads(spcakit(installed, "run", "spcart", "--truncator", "garrote", "--lam", "0.3", "-r", "3", "--json").stdout)
    assert doc["spec"]["truncator"] == {"name": "garrote", "threshold": 0.3}
    loadings = np.array(doc["loadings"])
    assert loadings.shape == (13, 3)
    np.testing.assert_allclose(np.linalg.norm(loadings, axis=0), 1.0)
    assert 0 < np.count_nonzero(loadings) < loadings.size  # sparse, and no loading emptied
    assert doc["metrics"]["smallest_loading"] == pytest.approx(np.abs(loadings[loadings != 0]).min())

    refused = run(installed, "-m", "spcakit.cli", "run", "spcart", "--truncator", "garrote", "--lam", "1.5")
    assert refused.returncode == 2 and "threshold must be a number in [0, 1)" in refused.stderr


def test_the_method_shipped_as_package_data_runs_and_reports_the_metric(installed):
    text = spcakit(installed, "run", "spcart-garrote", "-r", "6").stdout
    assert text.startswith("spcart-garrote on builtin:pitprops: 13 variables, 6 components")
    metric = next(ln for ln in text.splitlines() if ln.strip().startswith("min |x|"))
    assert "smallest nonzero entry of the unit loadings" in metric


def test_the_pages_own_tests_pass_against_the_installed_package(installed):
    done = run(installed, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(installed["package"] / "tests"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "3 passed" in done.stdout
