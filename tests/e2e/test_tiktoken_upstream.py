"""tiktoken's own test suite, run against livetok: the drop-in claim, checked by tiktoken's tests.

The tests come from the sdist of the installed tiktoken version (``pip download --no-binary
:all: --no-deps tiktoken==VERSION``, kept in ``$XDG_CACHE_HOME/livetok/tiktoken-sdist`` so that
later runs are offline; the test skips, saying so, when neither the registry nor a kept copy is
there). Its ``tests/`` folder is copied to a temporary folder and run by pytest in a
subprocess in which ``import tiktoken`` is ``livetok.incremental.tiktoken_compat``: a
``tiktoken`` package placed first on ``PYTHONPATH`` puts the compat module in its own place,
also for the subprocesses tiktoken's tests start. Their ``tiktoken.get_encoding`` calls thus
load livetok's encodings, offline; the real tiktoken is never imported there (the conftest
checks it).

The tests that do not apply are deselected by name, with the reason, in :data:`DESELECTED`
(``docs/index.md``, "tiktoken's own tests", lists the same). Every other test must pass.
Hypothesis runs ``TIKTOKEN_MAX_EXAMPLES`` examples per test (tiktoken's own knob; 25 by
default here, tiktoken's own default of 100 under ``LIVETOK_SLOW=1``), seeded; the whole run
takes a few seconds.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import tarfile
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

import livetok.incremental.tiktoken_compat as compat

from ..conftest import SLOW

TIKTOKEN_VERSION = importlib.metadata.version("tiktoken")

#: tiktoken's tests that do not apply to livetok, by node id (a prefix: all parametrizations),
#: and why. Kept in one place; docs/index.md repeats it for readers.
DESELECTED: dict[str, str] = {
    "tests/test_encoding.py::test_basic_encode":
        "encodes with p50k_base, whose vocabulary no package ships (livetok reads it only from "
        "a file it is given)",
    "tests/test_misc.py::test_encoding_for_model":
        "loads p50k_base and p50k_edit through encoding_for_model (no package ships them)",
    "tests/test_simple_public.py::test_encoding_for_model":
        "loads p50k_base and p50k_edit through encoding_for_model (no package ships them)",
    "tests/test_encoding.py::test_encode_bytes":
        "tests the private Encoding._encode_bytes (tiktoken's guess at tokens of invalid UTF-8)",
    "tests/test_encoding.py::test_hyp_encode_bytes":
        "tests the private Encoding._encode_bytes",
}

#: how many of tiktoken's tests (parametrizations counted) must run and pass; a drop means a
#: test stopped being collected, which must not pass unnoticed
MIN_PASSED = 25


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "livetok" / "tiktoken-sdist"


def _sdist() -> Path:
    """The sdist of the installed tiktoken: the kept copy, or downloaded once with pip."""
    cache = _cache_dir()
    name = f"tiktoken-{TIKTOKEN_VERSION}.tar.gz"
    kept = cache / name
    if kept.is_file():
        return kept
    cache.mkdir(parents=True, exist_ok=True)
    part = cache / f"download-{os.getpid()}"
    cmd = [sys.executable, "-m", "pip", "download", "--no-binary", ":all:", "--no-deps",
           "--disable-pip-version-check", "--quiet", f"tiktoken=={TIKTOKEN_VERSION}",
           "-d", str(part)]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        got = sorted(part.glob("tiktoken-*.tar.gz")) if part.is_dir() else []
        if r.returncode == 0 and got:
            got[0].replace(kept)  # atomic: a parallel run sees the whole file or none
            return kept
        why = (r.stderr.strip().splitlines() or ["no sdist"])[-1]
    except subprocess.TimeoutExpired:
        why = "timed out"
    finally:
        shutil.rmtree(part, ignore_errors=True)
    pytest.skip(
        f"tiktoken {TIKTOKEN_VERSION}'s sdist is neither kept in {cache} nor downloadable "
        f"({why}); run with the package registry reachable once, or put {name} there"
    )


def _extract_tests(sdist: Path, dest: Path) -> Path:
    """Copy the sdist's ``tests/`` folder (regular files only) to ``dest/tests``."""
    prefix = f"tiktoken-{TIKTOKEN_VERSION}/tests/"
    with tarfile.open(sdist) as tar:
        for m in tar.getmembers():
            rel = m.name[len(prefix):] if m.name.startswith(prefix) else ""
            if not m.isfile() or not rel or ".." in Path(rel).parts:
                continue
            out = dest / "tests" / rel
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_bytes(tar.extractfile(m).read())  # type: ignore[union-attr]
    if not (dest / "tests").is_dir():
        raise AssertionError(f"{sdist} has no {prefix} folder")
    return dest / "tests"


#: ``tiktoken`` for the subprocess: livetok's compat module in its place in ``sys.modules``
_SHIM = '''\
"""tiktoken replaced by livetok.incremental.tiktoken_compat (test_tiktoken_upstream.py)."""
import sys

import livetok.incremental.tiktoken_compat as _compat

sys.modules[__name__] = _compat
'''

#: the conftest of the run: seeded hypothesis, deselection by DESELECTED with a report
_CONFTEST = '''\
"""Written by livetok's tests/e2e/test_tiktoken_upstream.py."""
import json
import os
import sys

import hypothesis
import pytest

import livetok.incremental.tiktoken_compat as compat
import tiktoken

assert tiktoken is compat and sys.modules["tiktoken"] is compat, "the real tiktoken was imported"
hypothesis.settings.register_profile(
    "livetok-upstream", derandomize=True, deadline=None, database=None,
    suppress_health_check=list(hypothesis.HealthCheck),
)
hypothesis.settings.load_profile("livetok-upstream")
DESELECTED = json.loads(os.environ["LIVETOK_UPSTREAM_DESELECTED"])


def _matches(nodeid, key):
    return nodeid == key or nodeid.startswith(key + "[")


def pytest_collection_modifyitems(config, items):
    keep, drop = [], []
    for item in items:
        (drop if any(_matches(item.nodeid, k) for k in DESELECTED) else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
    items[:] = keep
    unmatched = [k for k in DESELECTED if not any(_matches(i.nodeid, k) for i in drop)]
    with open(os.environ["LIVETOK_UPSTREAM_REPORT"], "w") as f:
        json.dump({"tiktoken": tiktoken.__name__, "deselected": [i.nodeid for i in drop],
                   "unmatched": unmatched}, f)
'''


def test_tiktokens_own_tests_pass(tmp_path: Path) -> None:
    """All of tiktoken's tests that apply (all but :data:`DESELECTED`) pass on livetok."""
    tests = _extract_tests(_sdist(), tmp_path / "run")
    shim = tmp_path / "shim" / "tiktoken"
    shim.mkdir(parents=True)
    (shim / "__init__.py").write_text(_SHIM)
    (tests.parent / "conftest.py").write_text(_CONFTEST)
    report, junit = tmp_path / "report.json", tmp_path / "junit.xml"
    env = dict(os.environ)
    env.update(
        PYTHONPATH=os.pathsep.join([str(shim.parent), env.get("PYTHONPATH", "")]).rstrip(os.pathsep),
        TIKTOKEN_MAX_EXAMPLES=os.environ.get("TIKTOKEN_MAX_EXAMPLES", "100" if SLOW else "25"),
        LIVETOK_UPSTREAM_DESELECTED=json.dumps(DESELECTED),
        LIVETOK_UPSTREAM_REPORT=str(report),
    )
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={junit}",
         "tests"],
        cwd=tests.parent, env=env, capture_output=True, text=True, timeout=1200,
    )
    out = r.stdout[-6000:] + r.stderr[-3000:]
    assert r.returncode == 0, f"tiktoken's tests failed on livetok:\n{out}"
    info = json.loads(report.read_text())
    assert info["tiktoken"] == compat.__name__
    assert not info["unmatched"], f"DESELECTED names tests tiktoken no longer has: {info['unmatched']}"
    cases = ET.parse(junit).getroot().iter("testcase")
    passed = [c for c in cases if not any(k.tag in ("failure", "error", "skipped") for k in c)]
    assert len(passed) >= MIN_PASSED, f"only {len(passed)} of tiktoken's tests ran:\n{out}"
    summary = [line for line in r.stdout.splitlines() if " passed" in line][-1:]
    print(f"tiktoken {TIKTOKEN_VERSION}'s tests on livetok: {len(passed)} passed, "
          f"{len(info['deselected'])} deselected ({''.join(summary).strip('= ')})")


def test_deselected_are_in_the_docs() -> None:
    """docs/index.md's "tiktoken's own tests" names every deselected test."""
    docs = (Path(__file__).resolve().parents[2] / "docs" / "index.md").read_text()
    assert "## tiktoken's own tests" in docs
    section = docs.split("## tiktoken's own tests", 1)[1].split("\n## ", 1)[0]
    for nodeid in DESELECTED:
        assert nodeid.split("::")[-1] in section, nodeid


def test_the_shim_replaces_tiktoken_in_subprocesses_too(tmp_path: Path) -> None:
    """The run's ``import tiktoken`` (tiktoken's tests start ``python -c "import tiktoken"``)
    is livetok's module, not the installed tiktoken."""
    shim = tmp_path / "tiktoken"
    shim.mkdir()
    (shim / "__init__.py").write_text(_SHIM)
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    prog = "import tiktoken; print(tiktoken.__name__, tiktoken.get_encoding('gpt2').name)"
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(prog)], env=env,
                         capture_output=True, text=True, check=True).stdout.split()
    assert out == ["livetok.incremental.tiktoken_compat", "gpt2"]
