"""The tokenizer.json tests' shared data: each real file's livetok encoding, its HuggingFace
reference and its parsed JSON, built once per process (so a pytest-xdist worker loads a file
once, whichever modules' tests it is given), and real text to compare them on.

Real text, all offline:

* multilingual prose: the translations of Django's ``.po`` catalogues (``django==5.2.17``,
  BSD-3-Clause, installed by ``scripts/install-dev.sh test`` from ``scripts/test-extras.txt``
  with ``--no-deps``; only its data files are read, no Django code is imported): the
  ``msgstr`` strings of ~100 languages, taken round-robin so any prefix mixes scripts;
* code: the Python standard library's own sources;
* the final texts of the shared editing traces (``../shared/traces``).
"""

from __future__ import annotations

import functools
import importlib.util
import json
import re
import sysconfig
from pathlib import Path
from typing import Any

import pytest

from ._tokenizer_files import tokenizer_file
from .conftest import TRACES

#: the real files (tests/_tokenizer_files.py), one per family and then the rest
NAMES = ["llama3", "qwen3", "deepseek_v3", "gemma3", "llama2", "xlmr", "bert", "gpt4o",
         "gptoss", "mistral_nemo", "llama3_1"]
#: the files whose pipeline another file of ``NAMES`` already has (Llama 3's or GPT-4o's
#: Split + ByteLevel + BPE): tested in the slow run only, their loading being most of the time
SLOW_NAMES = {"gptoss", "mistral_nemo", "llama3_1"}


def params(names: list[str] = NAMES) -> list[Any]:
    """``names`` as pytest parameters, those of ``SLOW_NAMES`` marked slow."""
    return [pytest.param(n, marks=pytest.mark.slow) if n in SLOW_NAMES else n for n in names]

#: the pinned Django whose ``.po`` files are the multilingual text
DJANGO = "django==5.2.17"


@functools.lru_cache(maxsize=None)
def encoding(name: str) -> Any:
    """livetok's encoding of the real file ``name`` (skips when the file is not installed)."""
    from livetok.incremental.hf import load_tokenizer_json

    return load_tokenizer_json(tokenizer_file(name), name=name)


@functools.lru_cache(maxsize=None)
def general_encoding(name: str) -> Any:
    """The real file ``name`` on the general pipeline (``TokenizerJsonEncoding``), also when it
    loads as the byte-level family (``hf/bytelevel_file.py``): the reference of that route's
    split and horizon."""
    from livetok.incremental.hf import tokenizer_from_dict

    return tokenizer_from_dict(tokenizer_json(name), name=name,
                               source=str(tokenizer_file(name)), byte_level_family=False)


@functools.lru_cache(maxsize=None)
def reference(name: str) -> Any:
    """HuggingFace ``tokenizers``' ``Tokenizer`` of the real file ``name``, its padding and
    truncation off (BERT's file pads every text to 128 even without special tokens)."""
    tokenizers = pytest.importorskip("tokenizers")
    tok = tokenizers.Tokenizer.from_file(str(tokenizer_file(name)))
    tok.no_padding()
    tok.no_truncation()
    return tok


@functools.lru_cache(maxsize=None)
def tokenizer_json(name: str) -> dict[str, Any]:
    """The parsed ``tokenizer.json`` of the real file ``name``, shared: read it, never change
    it (build a test's own copy of a section to change)."""
    data: dict[str, Any] = json.loads(tokenizer_file(name).read_bytes())
    return data


def hf_ids(name: str, text: str) -> list[int]:
    """HuggingFace's ``encode(text, add_special_tokens=False).ids``."""
    ids: list[int] = reference(name).encode(text, add_special_tokens=False).ids
    return ids


_PO_ESCAPES = {"n": "\n", "t": "\t", '"': '"', "\\": "\\", "r": "\r"}


def _po_strings(path: Path) -> list[str]:
    """The non-empty ``msgstr`` strings of a ``.po`` file."""
    out: list[str] = []
    cur: list[str] | None = None
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        if line.startswith("msgstr"):
            if cur:
                out.append("".join(cur))
            cur = [line.split('"', 1)[1].rsplit('"', 1)[0]] if '"' in line else []
        elif line.startswith('"') and cur is not None:
            cur.append(line[1:].rsplit('"', 1)[0])
        else:
            if cur:
                out.append("".join(cur))
            cur = None
    if cur:
        out.append("".join(cur))
    unescape = functools.partial(re.sub, r"\\(.)", lambda m: _PO_ESCAPES.get(m.group(1), m.group(1)))
    # the first msgstr is the catalogue's header (translator names, dates): left out
    return [unescape(s) for s in out if s and not s.startswith("Project-Id-Version")]


@functools.lru_cache(maxsize=4)
def multilingual_text(size: int) -> str:
    """About ``size`` code points of Django's translations, languages interleaved; skips when
    Django is not installed."""
    spec = importlib.util.find_spec("django")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip(f"multilingual test text: pip install --no-deps {DJANGO} "
                    "(scripts/test-extras.txt)")
    root = Path(list(spec.submodule_search_locations)[0])
    per_lang = [_po_strings(p) for p in sorted(root.glob("**/locale/*/LC_MESSAGES/*.po"))]
    per_lang = [s for s in per_lang if s]
    parts: list[str] = []
    total = 0
    k = 0
    while total < size and any(k < len(s) for s in per_lang):
        for strings in per_lang:
            if k < len(strings):
                parts.append(strings[k])
                total += len(strings[k]) + 1
        k += 1
    return "\n".join(parts)[:size]


@functools.lru_cache(maxsize=4)
def code_text(size: int) -> str:
    """About ``size`` code points of the Python standard library's sources."""
    parts: list[str] = []
    total = 0
    for p in sorted(Path(sysconfig.get_paths()["stdlib"]).glob("*.py")):
        t = p.read_text(encoding="utf-8", errors="replace")
        parts.append(t)
        total += len(t)
        if total >= size:
            break
    return "".join(parts)[:size]


@functools.lru_cache(maxsize=1)
def trace_texts() -> list[str]:
    """The final texts of the shared editing traces (empty when they are absent)."""
    if not TRACES.is_dir():
        return []
    from livetok.server.cli.traces import load_trace

    return [load_trace(p).end for p in sorted(TRACES.glob("*.json.gz"))]
