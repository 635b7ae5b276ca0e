"""``mypy --strict`` on ``livetok.incremental`` and ``livetok.server``, as part of the test run.

The configuration is ``[tool.mypy]`` in ``pyproject.toml`` (strict, both packages, found through
the two symlinks of ``typecheck/livetok/``), so this test runs exactly what ``.venv/bin/mypy``
runs from the repository root. mypy keeps its cache in ``.mypy_cache/`` there (ignored by git):
the first run checks everything, later runs only what changed.
"""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from ..conftest import ROOT


def _mypy_installed() -> bool:
    probe = subprocess.run(
        [sys.executable, "-m", "mypy", "--version"], capture_output=True, text=True, check=False
    )
    return probe.returncode == 0


def test_typecheck_links_point_at_the_packages() -> None:
    # A checkout that lost the symlinks (core.symlinks=false) would make mypy fail with
    # "Can't find package": say what is wrong instead.
    for name in ("incremental", "server"):
        link = ROOT / "typecheck" / "livetok" / name
        assert link.is_dir() and (link / "__init__.py").samefile(ROOT / name / "__init__.py"), (
            f"{link} must be a symlink to ../../{name}: "
            f"run `ln -sfn ../../{name} {link.relative_to(ROOT)}` from the repository root"
        )


def test_mypy_strict_passes() -> None:
    if not _mypy_installed():
        pytest.fail("mypy is missing: install the test extras with `pip install -e '.[test]'`")
    run = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    output = run.stdout + run.stderr
    assert run.returncode == 0, f"mypy --strict found errors (exit {run.returncode}):\n{output}"
    # Guard against a configuration that silently checks nothing: every module counts.
    checked = re.search(r"no issues found in (\d+) source files", output)
    assert checked, output
    modules = sum(1 for folder in ("incremental", "server") for _ in (ROOT / folder).rglob("*.py"))
    assert int(checked.group(1)) >= modules, (
        f"mypy checked {checked.group(1)} files but incremental/ and server/ hold {modules}:\n"
        f"{output}"
    )
