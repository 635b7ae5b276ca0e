"""The Python livetok needs is said once and the same everywhere (issue 37 item 8):
``pyproject.toml``'s ``requires-python`` is the version both editor installers require (the
VS Code extension's ``MIN_PYTHON`` in ``demo/vscode/src/bootstrap.ts``, the Neovim plugin's in
``demo/neovim/lua/livetok/install.lua``), which the code needs (``re``'s possessive
quantifiers, ``tomllib``: Python 3.11), and which the README and the editor docs name."""

from __future__ import annotations

import re
import tomllib

from ..conftest import ROOT


def _pyproject_minimum() -> tuple[int, int]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    match = re.fullmatch(r"\s*>=\s*(\d+)\.(\d+)\s*", project["requires-python"])
    assert match, f"requires-python should be '>=X.Y', not {project['requires-python']!r}"
    return int(match.group(1)), int(match.group(2))


def _installer_minimum(path: str, pattern: str) -> tuple[int, int]:
    match = re.search(pattern, (ROOT / path).read_text(encoding="utf-8"))
    assert match, f"{path}: no MIN_PYTHON found"
    return int(match.group(1)), int(match.group(2))


def test_requires_python_is_what_the_installers_require() -> None:
    want = _pyproject_minimum()
    vscode = _installer_minimum("demo/vscode/src/bootstrap.ts",
                                r"MIN_PYTHON\b[^=]*=\s*\[\s*(\d+)\s*,\s*(\d+)\s*\]")
    neovim = _installer_minimum("demo/neovim/lua/livetok/install.lua",
                                r"MIN_PYTHON\s*=\s*\{\s*(\d+)\s*,\s*(\d+)\s*\}")
    assert want == vscode == neovim, (
        f"pyproject.toml requires-python >={want[0]}.{want[1]}, the VS Code installer "
        f"{vscode[0]}.{vscode[1]}, the Neovim installer {neovim[0]}.{neovim[1]}")


def test_no_dependency_or_classifier_names_an_older_python() -> None:
    """A dependency marker or a classifier for a Python below the minimum is dead weight that
    says livetok runs there."""
    major, minor = _pyproject_minimum()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    for line in project["dependencies"]:  # "python_version < '3.11'": only below 3.11
        for op, a, b in re.findall(r"python_version\s*(<=?)\s*['\"](\d+)\.(\d+)", line):
            below = (int(a), int(b)) if op == "<" else (int(a), int(b) + 1)
            assert below > (major, minor), f"{line!r}: for a Python livetok does not run on"
    for line in project.get("classifiers", []):
        for a, b in re.findall(r"Python :: (\d+)\.(\d+)", line):
            assert (int(a), int(b)) >= (major, minor), line


def test_the_readme_names_the_same_python() -> None:
    major, minor = _pyproject_minimum()
    assert f"Python {major}.{minor}+" in (ROOT / "README.md").read_text(encoding="utf-8")
