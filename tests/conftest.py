"""Shared test configuration.

Tests are sorted by kind (``tests/README.md``): ``unit/``, ``property/`` (hypothesis,
stateful machines, real traces at document level) and ``e2e/`` (processes: the server under
an LSP client, editors, the browser demo, the command line). Tests marked ``slow`` are skipped
unless ``LIVETOK_SLOW=1``. Under pytest-xdist (``scripts/test.sh`` runs ``-n auto --dist
loadgroup``) the files of ``ONE_WORKER`` keep their tests in one worker.

Hypothesis runs seeded (``derandomize``) with an example count taken from the environment:
``LIVETOK_EXAMPLES`` (default 60) so CI stays fast and a long fuzz is one variable away::

    LIVETOK_EXAMPLES=5000 .venv/bin/python -m pytest tests/property/test_document.py
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

EXAMPLES = int(os.environ.get("LIVETOK_EXAMPLES", "60"))
settings.register_profile(
    "livetok",
    max_examples=EXAMPLES,
    derandomize=os.environ.get("LIVETOK_RANDOM") != "1",
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    print_blob=True,
)
settings.load_profile("livetok")

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
TRACES = SHARED / "traces"


#: the folders of tests/, each a marker of its tests
KINDS = ("unit", "property", "e2e")

#: test files whose tests share one pytest-xdist worker (a group of ``--dist loadgroup``):
#: a module-scoped fixture too costly to build twice (the VS Code extension's npm build, which
#: ``test_editor_vscode.py`` reuses; a browser; the demo server; the mkdocs site), or an
#: installer that takes the apt/dpkg lock (the editors' tests install their editor if missing).
#: Grouped by ``pytest_xdist_make_scheduler`` below, not by ``xdist_group`` marks: with pytest
#: 9.2, xdist 3.8 drops those marks silently (pytest-dev/pytest-xdist#1386)
ONE_WORKER = {
    "test_vscode_extension.py": "vscode",
    "test_editor_vscode.py": "vscode",
    "test_demo_browser.py": "demo-browser",
    "test_demo_server.py": "demo-server",
    "test_docs_build.py": "docs-site",
    "test_editor_emacs.py": "apt",
    "test_server_neovim.py": "apt",
}


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_make_scheduler(config, log):
    """``--dist loadgroup`` whose groups are also the files of ``ONE_WORKER``; any other test
    is a unit of its own, sent to whichever worker is free."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadGroupScheduling

    class OneWorkerFiles(LoadGroupScheduling):
        def _split_scope(self, nodeid: str) -> str:
            group = ONE_WORKER.get(nodeid.split("::", 1)[0].rsplit("/", 1)[-1])
            return group if group is not None else super()._split_scope(nodeid)

    return OneWorkerFiles(config, log)


def pytest_collection_modifyitems(config, items):
    for item in items:
        kind = item.path.parent.name
        if kind in KINDS:  # -m unit, -m "not e2e", ...
            item.add_marker(getattr(pytest.mark, kind))
    if os.environ.get("LIVETOK_SLOW") == "1":
        return
    skip = pytest.mark.skip(reason="slow test: set LIVETOK_SLOW=1 to run it")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)
