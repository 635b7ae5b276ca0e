"""Shared test configuration.

Tests are sorted by kind (``tests/README.md``): ``unit/``, ``property/`` (hypothesis,
stateful machines, real traces at document level) and ``e2e/`` (processes: the server under
an LSP client, editors, the browser demo, the command line). Tests marked ``slow`` are skipped
unless ``LIVETOK_SLOW=1``. Under pytest-xdist (``scripts/test.sh`` runs ``-n auto --dist
loadgroup``) the files of ``ONE_WORKER`` keep their tests in one worker, and the tests of
``ONE_WORKER_PER_FILE`` that use one real tokenizer.json file share a worker.

Hypothesis runs seeded (``derandomize``) with an example count taken from the environment:
``LIVETOK_EXAMPLES`` (default 20, and 60 under ``LIVETOK_SLOW=1``) so CI stays fast and a long
fuzz is one variable away::

    LIVETOK_EXAMPLES=5000 .venv/bin/python -m pytest tests/property/test_document.py

A parametrization whose every case costs seconds (each tokenizer, each trace, each position
encoding, ...) runs one or two representatives by default and the others under
``LIVETOK_SLOW=1``: :func:`slow_except`.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

#: the slow run (``LIVETOK_SLOW=1``): every test, at its full size
SLOW = os.environ.get("LIVETOK_SLOW") == "1"
EXAMPLES = int(os.environ.get("LIVETOK_EXAMPLES", "60" if SLOW else "20"))
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


def slow_except(values: Any, fast: Any) -> list[Any]:
    """``values`` as the cases of a ``parametrize``: those in ``fast`` run in the default run,
    the others only in the slow one (marked ``slow``). A case of several arguments is a tuple
    (unpacked into ``pytest.param``); an existing ``pytest.param`` keeps its marks and id."""
    out = []
    for v in values:
        key = v.values if hasattr(v, "values") and hasattr(v, "marks") else v
        key = key[0] if isinstance(key, tuple) and len(key) == 1 else key
        if key in fast:
            out.append(v)
        elif hasattr(v, "marks") and hasattr(v, "values"):
            out.append(pytest.param(*v.values, marks=[*v.marks, pytest.mark.slow], id=v.id))
        else:
            out.append(pytest.param(*(v if isinstance(v, tuple) else (v,)), marks=pytest.mark.slow))
    return out


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
    "test_vscode_counts.py": "vscode",
    "test_vscode_install.py": "vscode",
    "test_vscode_workspace.py": "vscode",
    "test_demo_browser.py": "demo-browser",
    "test_demo_server.py": "demo-server",
    "test_docs_build.py": "docs-site",
    "test_editor_emacs.py": "apt",
    "test_server_neovim.py": "apt",
}


#: test files whose tests of one real tokenizer.json file (named in the test's parameters or
#: its name: ``[gemma3]``, ``test_xlmr_...``) share one worker, a group per file: each worker
#: loads a file once (tests/_hf_encodings.py caches it per process), so a file's tests on one
#: worker load it once in all instead of once per worker (Gemma 3: ~3 s a load)
ONE_WORKER_PER_FILE = {
    "test_hf_models.py", "test_hf_document.py", "test_hf_encoding.py", "test_hf_horizon.py",
    "test_hf_pretokenizers.py", "test_hf_normalizers.py", "test_tokenizer_files.py",
    "test_analyze_tokenizer_json.py", "test_hf_long_lines.py", "test_hf_decoders.py",
    "test_catalog.py",
}


def _file_pattern() -> re.Pattern[str]:
    from ._tokenizer_files import FILES

    names = sorted(FILES, key=len, reverse=True)  # llama3_1 before llama3
    return re.compile(r"(?<![A-Za-z0-9])(" + "|".join(map(re.escape, names)) + r")(?![A-Za-z0-9])")


def worker_group(nodeid: str, file_name: re.Pattern[str] | None = None) -> str | None:
    """The ``--dist loadgroup`` group of the test ``nodeid`` (None: a unit of its own)."""
    path, _, test = nodeid.partition("::")
    module = path.rsplit("/", 1)[-1]
    if module in ONE_WORKER:
        return ONE_WORKER[module]
    if module in ONE_WORKER_PER_FILE:
        found = (file_name or _file_pattern()).search(test)
        if found:
            return f"tokenizer.json:{found.group(1)}"
    return None


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_make_scheduler(config, log):
    """``--dist loadgroup`` whose groups are also the files of ``ONE_WORKER`` and the real
    tokenizer.json files of ``ONE_WORKER_PER_FILE``'s tests; any other test is a unit of its
    own, sent to whichever worker is free."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadGroupScheduling

    file_name = _file_pattern()

    class OneWorkerFiles(LoadGroupScheduling):
        def _split_scope(self, nodeid: str) -> str:
            group = worker_group(nodeid, file_name)
            return group if group is not None else super()._split_scope(nodeid)

    return OneWorkerFiles(config, log)


def pytest_collection_modifyitems(config, items):
    for item in items:
        kind = item.path.parent.name
        if kind in KINDS:  # -m unit, -m "not e2e", ...
            item.add_marker(getattr(pytest.mark, kind))
    if SLOW:
        return
    skip = pytest.mark.skip(reason="slow test: set LIVETOK_SLOW=1 to run it")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)
