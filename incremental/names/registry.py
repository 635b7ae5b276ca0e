"""Names of the encodings livetok knows, how each is built offline, and the one cache of the
loaded encodings: each is built once, from what a finder of :mod:`..vocab.find` finds, and kept here.

Besides the built-in names, :func:`get_encoding` takes a HuggingFace ``tokenizer.json`` by
path (a name ending in ``.json`` or holding a ``/``) or by model id from the local Hugging
Face cache (``hf:ORG/NAME``, :func:`.find.find_hf_tokenizer`); such files are read by
:mod:`.hf` and kept here too, read again when the file changes (its size, modification time
or inode).

>>> from livetok.incremental import list_encodings
>>> "o200k_base" in list_encodings()
True
"""

from __future__ import annotations

import copyreg
import os
import threading
from enum import IntEnum
from pathlib import Path
from typing import Any, Callable, TypeVar

from ..bytelevel.encoding import Encoding
from ..bytelevel.pretokenize import PATTERNS
from ..vocab import parse_store as vocab_cache
from ..vocab.find import HF_PREFIX, MISTRAL_V1_ENV, find_hf_tokenizer, find_mistral_data, find_mistral_v1, find_vocabulary, list_hf_tokenizers, split_model_id
from ..vocab.readers import VocabularyError, check_byte_level, load_gpt2_files, load_tiktoken_file, read_limited, vocabulary_limit
from ..piece_encoding import PieceEncoding, check_encoding

__all__ = ["get_encoding", "list_encodings", "describe_encodings", "register_encoding",
           "register_models", "is_registered", "derived", "is_file_name",
           "tokenizer_json_path", "ALIASES"]

T = TypeVar("T")

_SPECIALS: dict[str, dict[str, int]] = {
    "r50k_base": {"<|endoftext|>": 50256},
    "gpt2": {"<|endoftext|>": 50256},
    "p50k_base": {"<|endoftext|>": 50256},
    "p50k_edit": {
        "<|endoftext|>": 50256,
        "<|fim_prefix|>": 50281,
        "<|fim_middle|>": 50282,
        "<|fim_suffix|>": 50283,
    },
    "cl100k_base": {
        "<|endoftext|>": 100257,
        "<|fim_prefix|>": 100258,
        "<|fim_middle|>": 100259,
        "<|fim_suffix|>": 100260,
        "<|endofprompt|>": 100276,
    },
    "o200k_base": {"<|endoftext|>": 199999, "<|endofprompt|>": 200018},
    # tiktoken's table, in its order (200018 has two names; it decodes to <|endofprompt|>)
    "o200k_harmony": {
        "<|endoftext|>": 199999,
        "<|endofprompt|>": 200018,
        "<|startoftext|>": 199998,
        "<|reserved_200000|>": 200000,
        "<|reserved_200001|>": 200001,
        "<|return|>": 200002,
        "<|constrain|>": 200003,
        "<|reserved_200004|>": 200004,
        "<|channel|>": 200005,
        "<|start|>": 200006,
        "<|end|>": 200007,
        "<|message|>": 200008,
        "<|reserved_200009|>": 200009,
        "<|reserved_200010|>": 200010,
        "<|reserved_200011|>": 200011,
        "<|call|>": 200012,
        **{f"<|reserved_{i}|>": i for i in range(200013, 201088)},
    },
}

#: the pre-tokenizer pattern of each tiktoken encoding (tiktoken's gpt2, p50k_base and
#: p50k_edit split like r50k_base, o200k_harmony like o200k_base)
_PATTERN_OF = {
    "r50k_base": "r50k_base", "gpt2": "r50k_base", "p50k_base": "r50k_base",
    "p50k_edit": "r50k_base", "cl100k_base": "cl100k_base", "o200k_base": "o200k_base",
    "o200k_harmony": "o200k_base",
}

#: tiktoken's encodings whose vocabulary no package ships: readable from a file only
_FILE_ONLY = {"p50k_base": "p50k_base", "p50k_edit": "p50k_base"}

#: where tiktoken downloads the p50k vocabulary from (named in the error that asks for the file)
_P50K_URL = "https://openaipublic.blob.core.windows.net/encodings/p50k_base.tiktoken"

#: other names users type for the same encodings
ALIASES = {"gpt-4o": "o200k_base", "gpt-4": "cl100k_base", "mistral-nemo": "mistral-tekken-240718",
           "mistral-v2": "mistral-sp-240216", "mistral-v3": "mistral-sp-240323",
           "mistral-v7": "mistral-sp-241114"}

#: one line about each built-in encoding (:func:`describe_encodings`, the editors' pickers)
_DESCRIPTIONS = {
    "o200k_base": "GPT-4o, GPT-4.1, o1/o3/o4 (tiktoken)",
    "o200k_harmony": "gpt-oss: o200k_base with the harmony format's special tokens",
    "cl100k_base": "GPT-4, GPT-3.5-turbo, text-embedding-3 (tiktoken)",
    "r50k_base": "GPT-3 (tiktoken)",
    "gpt2": "GPT-2 (tiktoken's name for r50k_base's vocabulary)",
    "bert-base-uncased": "BERT uncased (WordPiece)",
    "mistral-7b-v0.1": "Mistral 7B v0.1 (SentencePiece BPE; pip install mistral-common)",
    "mistral-tekken-240718": "Mistral Nemo, Tekken v3 (pip install mistral-common)",
    "mistral-tekken-240911": "Mistral's multimodal Tekken v3, Pixtral (pip install mistral-common)",
    "mistral-sp-240216": "Mistral's SentencePiece tokenizer v2 of February 2024 (pip install "
                         "mistral-common)",
    "mistral-sp-240323": "Mistral's SentencePiece tokenizer v3 of March 2024, with user-defined "
                         "[REFERENCE_DOC_n] pieces (pip install mistral-common)",
    "mistral-sp-241114": "Mistral's SentencePiece tokenizer v7 of November 2024, with user-defined "
                         "[REF] and [REFERENCE_DOC_n] pieces (pip install mistral-common)",
}

#: the Tekken vocabularies of ``mistral-common`` (``data/tekken_<version>.json``) by name
_TEKKEN = {"mistral-tekken-240718": "240718", "mistral-tekken-240911": "240911"}
#: ``mistral-common``'s SentencePiece models by name, read exactly by the SentencePiece family
#: (v3 and v7 with their user-defined pieces; ``.v7m1`` is the same file as ``.v7``)
_MISTRAL_SP = {"mistral-sp-240216": "mistral_instruct_tokenizer_240216.model.v2",
               "mistral-sp-240323": "mistral_instruct_tokenizer_240323.model.v3",
               "mistral-sp-241114": "mistral_instruct_tokenizer_241114.model.v7"}


def _tiktoken_style(name: str) -> Callable[[], Any]:
    def build() -> Encoding:
        ranks, source = find_vocabulary(name)
        return Encoding(
            name,
            pat_str=PATTERNS[name],
            mergeable_ranks=ranks,
            special_tokens=_SPECIALS[name],
            source=source,
        )

    return build


def _variant_of(base: str, name: str) -> Callable[[], Any]:
    """An encoding that is ``base``'s vocabulary under tiktoken's other ``name`` (``gpt2``:
    ``r50k_base``'s ranks, pattern and special token; ``o200k_harmony``: ``o200k_base``'s
    with more special tokens), sharing the loaded vocabulary and its caches."""

    def build() -> Encoding:
        enc = get_encoding(base)
        assert isinstance(enc, Encoding)  # (a factory of this module)
        specials = _SPECIALS[name]
        return enc._variant(name, special_tokens=None if specials == enc.special_tokens else specials)

    return build


# the WordPiece and SentencePiece families are imported when first asked for, not at start-up


def _bert() -> Any:
    from ..wordpiece.load import load_bert_uncased

    return load_bert_uncased()


def _mistral() -> Any:
    from ..sentencepiece.encoding import SentencePieceEncoding

    path = find_mistral_v1()
    if path is None:  # a vocabulary that is not here, as for the other Mistral files
        raise VocabularyError(
            f"mistral-7b-v0.1 needs Mistral's tokenizer.model.v1 from the mistral-common "
            f"package (Apache-2.0), which is not installed: pip install mistral-common (or "
            f"set {MISTRAL_V1_ENV} to a tokenizer.model file)")
    return SentencePieceEncoding(_sentencepiece_model(str(path)), name="mistral-7b-v0.1",
                                 source=str(path))


def _mistral_sp(name: str) -> Callable[[], Any]:
    """The factory of one of ``mistral-common``'s SentencePiece models (:data:`_MISTRAL_SP`),
    read by the SentencePiece family; without the package the error says how to install it."""
    filename = _MISTRAL_SP[name]

    def build() -> Any:
        from ..sentencepiece.encoding import SentencePieceEncoding

        path = _mistral_file(name, filename)
        return SentencePieceEncoding(_sentencepiece_model(str(path)), name=name,
                                     source=str(path))

    return build


def _mistral_file(name: str, filename: str) -> Path:
    """``mistral-common``'s data file ``filename`` for the encoding ``name``, or the error
    that says how to install the package (not a dependency)."""
    path = find_mistral_data(filename)
    if path is None:
        raise VocabularyError(
            f"{name} needs Mistral's {filename} from the mistral-common package "
            "(Apache-2.0), which is not installed: pip install mistral-common")
    return path


def _tekken(name: str) -> Callable[[], Any]:
    """The factory of a Tekken encoding: ``mistral-common``'s file read as ``mistral-common``
    encodes it (special-token strings in the text are text, issue 35 decision 4;
    :func:`.hf.tekken.load_tekken`, its ranks kept in the vocabulary cache). Its HuggingFace
    conversion is read by path (a ``tokenizer.json``). ``mistral-common`` is not a dependency:
    without it the error says how to install it."""
    version = _TEKKEN[name]

    def build() -> Any:
        path = _mistral_file(name, f"tekken_{version}.json")
        from ..hf.tekken import load_tekken

        limit = vocabulary_limit()
        raw = read_limited(path, limit, what="Tekken vocabulary", env="LIVETOK_MAX_VOCAB_BYTES")
        return load_tekken(name, str(path), raw)

    return build


def _sentencepiece_model(name: str) -> Any:
    """The ``SentencePieceModel`` of the ``.model`` file ``name``, as ``read_model_file``
    reads it, from the vocabulary cache when that holds it (:mod:`..vocab.parse_store`).

    Runtime complexity: ``O(file size)``.
    """
    from dataclasses import astuple

    from ..sentencepiece import model_proto as mp

    limit = vocabulary_limit()
    raw = read_limited(name, limit, what="SentencePiece model", env="LIVETOK_MAX_VOCAB_BYTES",
                       error=mp.ModelProtoError)

    def parse() -> tuple[Any, ...]:
        try:
            m = mp.parse_model_proto(raw)
        except mp.ModelProtoError as e:
            raise mp.ModelProtoError(f"{name}: {e}") from None
        # plain values for marshal (IntEnum members become ints)
        specs = [tuple(int(v) if isinstance(v, IntEnum) else v for v in astuple(spec))
                 for spec in (m.trainer_spec, m.normalizer_spec)]
        return m.pieces, m.scores, m.types, *specs

    got = vocab_cache.cached(f"sentencepiece-{limit}", name, [raw], parse,
                             valid=lambda v: type(v) is tuple and len(v) == 5,
                             code=[mp.__file__, __file__])
    pieces, scores, types, trainer, normalizer = got
    return mp.SentencePieceModel(pieces, scores, types, mp.TrainerSpec(*trainer),
                                 mp.NormalizerSpec(*normalizer))


_FACTORIES: dict[str, Callable[[], Any]] = {
    "o200k_base": _tiktoken_style("o200k_base"),
    "cl100k_base": _tiktoken_style("cl100k_base"),
    "r50k_base": _tiktoken_style("r50k_base"),
    "gpt2": _variant_of("r50k_base", "gpt2"),
    "o200k_harmony": _variant_of("o200k_base", "o200k_harmony"),
    "bert-base-uncased": _bert,
    "mistral-7b-v0.1": _mistral,
    **{name: _tekken(name) for name in _TEKKEN},
    **{name: _mistral_sp(name) for name in _MISTRAL_SP},
}
#: the one cache of loaded encodings: ``name -> encoding`` for :func:`get_encoding`, and
#: ``(name, kind) -> object`` for what other modules derive from one (:func:`derived`)
_LOADED: dict[str | tuple[str, str], Any] = {}
_LOCK = threading.Lock()
#: one lock per name being loaded: a second caller (the language server's preload thread and
#: its first didOpen) waits for the first load instead of building the vocabulary again
_LOADING: dict[str, threading.Lock] = {}


def register_encoding(name: str, factory: Callable[[], Any]) -> None:
    """Make ``get_encoding(name)`` build its encoding with ``factory()`` (lazily, once)."""
    with _LOCK:
        _FACTORIES[name] = factory
        for key in [k for k in _LOADED if k == name or isinstance(k, tuple) and k[0] == name]:
            del _LOADED[key]


#: how model names become encoding names: ``(encoding_of, listed)`` registered by
#: :mod:`.catalog` (:func:`register_models`), which imports :mod:`.openai_models`, which imports this
#: module: so the registry is told, it does not import the catalog
_MODELS: list[tuple[Callable[[str], str | None], Callable[[], list[tuple[str, str]]]]] = []


def register_models(encoding_of: Callable[[str], str | None],
                    listed: Callable[[], list[tuple[str, str]]]) -> None:
    """Make :func:`get_encoding` take model names: ``encoding_of(name)`` is the encoding name
    of the model ``name`` (``None``: not a model; it raises ``VocabularyError`` for a model it
    cannot count exactly here), ``listed()`` the ``(model, one line)`` pairs that
    ``list_encodings(models=True)`` adds. :mod:`.catalog` registers itself on import.

    Runtime complexity: ``O(1)``.
    """
    _MODELS[:] = [(encoding_of, listed)]


def list_encodings(*, found: bool = True, models: bool = False) -> list[str]:
    """Names :func:`get_encoding` accepts (aliases not included): the built-in names, sorted,
    then (with ``models``) the exact models' names whose tokenizer is here (:mod:`.catalog`),
    then (unless ``found`` is false) the ``hf:ORG/NAME`` ids whose ``tokenizer.json`` is in the
    local Hugging Face cache (a listing of its folder, nothing read). Any ``tokenizer.json``
    path is accepted too.

    Runtime complexity: ``O(encodings)``, plus ``O(models in the cache)`` file checks (and
    ``O(catalog)`` with ``models``).
    """
    names = sorted(_FACTORIES)
    if models:
        names += [n for n, _ in _described_models() if n not in _FACTORIES]
    return names + list_hf_tokenizers() if found else names


def _described_models() -> list[tuple[str, str]]:
    return [pair for _, listed in _MODELS for pair in listed()]


def describe_encodings(*, models: bool = False) -> list[tuple[str, str]]:
    """``(name, one line about it)`` for each name of :func:`list_encodings` (what the
    language server's ``livetok/listEncodings`` and ``livetok count --help`` show).

    Runtime complexity: as :func:`list_encodings`.
    """
    out = []
    about_model = dict(_described_models()) if models else {}
    for name in list_encodings(models=models):
        if name.startswith(HF_PREFIX):
            about = "tokenizer.json from the local Hugging Face cache"
        else:
            about = _DESCRIPTIONS.get(name) or about_model.get(name, "registered encoding")
        aliases = sorted(a for a, n in ALIASES.items() if n == name)
        out.append((name, about + (f" (alias: {', '.join(aliases)})" if aliases else "")))
    return out


def is_file_name(name: str) -> bool:
    """Whether :func:`get_encoding` reads ``name`` as a ``tokenizer.json``: an ``hf:`` model
    id, or a path (a name ending in ``.json``, or holding a path separator).

    >>> is_file_name("hf:Qwen/Qwen3-4B"), is_file_name("models/tokenizer.json")
    (True, True)
    >>> is_file_name("o200k_base")
    False

    Runtime complexity: ``O(len(name))``.
    """
    return (name.startswith(HF_PREFIX) or name.lower().endswith(".json") or "/" in name
            or os.sep in name)


def tokenizer_json_path(p: str, label: str | None = None) -> str:
    """``p``, or ``p/tokenizer.json`` when ``p`` is a folder (a model's folder: its
    ``tokenizer.json``); a folder without one raises ``VocabularyError`` naming ``label``
    (default ``p``).

    Runtime complexity: ``O(1)`` (two ``stat`` calls).
    """
    if not os.path.isdir(p):
        return p
    inside = os.path.join(p, "tokenizer.json")
    if not os.path.isfile(inside):
        raise VocabularyError(f"{label or p}: a folder without a tokenizer.json; pass the path "
                              "of a HuggingFace tokenizer.json or of its model's folder")
    return inside


def is_registered(enc: object, kind: str | None = None) -> bool:
    """Whether ``enc`` is the encoding :func:`get_encoding` returns for its name (with
    ``kind``: the object :func:`derived` keeps under its name and ``kind``), so that a pickle
    of it may be just the name.

    Runtime complexity: ``O(1)``.
    """
    name = getattr(enc, "name", None)
    if not isinstance(name, str):
        return False
    with _LOCK:
        return _LOADED.get(name if kind is None else (name, kind)) is enc


def derived(name: str, kind: str, build: Callable[[], T]) -> T:
    """The object ``build()`` returned the first time it was asked for under ``(name, kind)``,
    kept in the registry's cache beside the encoding ``name`` (and dropped with it by
    :func:`register_encoding`): ``tiktoken_compat`` keeps its encodings with tiktoken's
    defaults here. ``build`` runs under the registry's lock, so it must be quick.

    Runtime complexity: ``O(1)`` after the first call.
    """
    with _LOCK:
        got = _LOADED.get((name, kind))
        if got is None:
            got = _LOADED[(name, kind)] = build()
    return got


def _reduce(enc: Encoding) -> tuple[Any, ...]:
    """Pickling of byte-level encodings (registered with :mod:`copyreg`), as tiktoken's: an
    encoding that :func:`get_encoding` returns travels as its name and is loaded again on the
    other side; any other as :meth:`Encoding.__reduce__` says (its vocabulary, pattern and
    special tokens)."""
    if is_registered(enc):
        return get_encoding, (enc.name,)
    return enc.__reduce__()


copyreg.pickle(Encoding, _reduce)


def _from_file(canonical: str, p: str) -> PieceEncoding:
    """The encoding ``canonical`` with its vocabulary read from the file ``p`` (not cached):
    see :func:`get_encoding`'s ``path``."""
    if canonical == "bert-base-uncased":
        from ..wordpiece.load import load_wordpiece

        return load_wordpiece(p)
    if canonical == "mistral-7b-v0.1":
        from ..sentencepiece.encoding import SentencePieceEncoding

        return SentencePieceEncoding(_sentencepiece_model(p), name=Path(p).stem, source=p)
    if canonical not in _PATTERN_OF:
        raise VocabularyError(
            f"a vocabulary file needs a known pre-tokenizer; pick one of {sorted(_PATTERN_OF)}"
        )
    if p.endswith(".json"):
        bpe = os.path.join(os.path.dirname(p), "vocab.bpe")
        ranks = load_gpt2_files(p, bpe if os.path.exists(bpe) else None)
    else:
        ranks = load_tiktoken_file(p)
    check_byte_level(ranks, p)  # an incomplete vocabulary: the error now, not a KeyError later
    return Encoding(
        canonical,
        pat_str=PATTERNS[_PATTERN_OF[canonical]],
        mergeable_ranks=ranks,
        special_tokens=_SPECIALS.get(canonical, {}),
        source=p,
    )


def _is_tokenizer_json(p: str) -> bool:
    """Whether the file ``p`` is a HuggingFace ``tokenizer.json`` (a JSON object whose
    ``model`` is an object) rather than a GPT-2 ``encoder.json`` (token -> id) or a
    ``.tiktoken`` file: its name says so, else its first bytes hold ``"model": {``.

    Runtime complexity: ``O(1)`` for ``tokenizer.json``, else ``O(file)``.
    """
    if os.path.basename(p) == "tokenizer.json":
        return True
    if not p.lower().endswith(".json"):
        return False
    import re

    try:
        raw = read_limited(p, vocabulary_limit(), what="vocabulary",
                           env="LIVETOK_MAX_VOCAB_BYTES")
    except (OSError, ValueError):
        return False  # the GPT-2 reader says what is wrong with it
    # an encoder.json maps strings to numbers only: a key followed by an object is not one
    return re.search(rb'"model"\s*:\s*\{', raw) is not None


def _signature(p: str) -> tuple[int, int, int]:
    """What says a file changed: its size, modification time and inode (after symlinks, as
    the Hugging Face cache's snapshots are)."""
    st = os.stat(p)
    return st.st_size, st.st_mtime_ns, st.st_ino


#: the file signature (:func:`_signature`) each tokenizer.json encoding was read with
_SIGNATURES: dict[str | tuple[str, str], tuple[int, int, int]] = {}


def _tokenizer_json(name: str, p: str, key: str | tuple[str, str] | None = None
                    ) -> PieceEncoding:
    """The encoding ``name`` of the ``tokenizer.json`` at ``p`` (read by :mod:`.hf`), kept
    under ``key`` (default ``name``) and read again when the file has changed since.

    Runtime complexity: ``O(1)`` file checks when cached, else ``O(file)``.
    """
    key = name if key is None else key
    sig = _signature(p)
    with _LOCK:
        enc: PieceEncoding | None = _LOADED.get(key)
        if enc is not None and _SIGNATURES.get(key) == sig:
            return enc
        loading = _LOADING.setdefault(str(key), threading.Lock())
    with loading:
        with _LOCK:
            waited: PieceEncoding | None = _LOADED.get(key)
            if waited is not None and _SIGNATURES.get(key) == sig:
                return waited  # loaded by the caller we waited for
        try:
            from ..hf import load_tokenizer_json

            enc = check_encoding(load_tokenizer_json(p, name=name))
        except ImportError as exc:
            raise VocabularyError(f"{p}: cannot be read here: {exc}") from exc
        with _LOCK:
            if isinstance(key, str):  # what was derived from the old file goes with it
                for k in [k for k in _LOADED if isinstance(k, tuple) and k[0] == key
                          and not k[1].startswith("file:")]:
                    del _LOADED[k]
            _LOADED[key] = enc
            _SIGNATURES[key] = sig
        return enc


def get_encoding(name: str, *, path: str | os.PathLike[str] | None = None) -> PieceEncoding:
    """The encoding called ``name``, loaded once and cached; offline.

    ``name`` may also be a HuggingFace ``tokenizer.json``: its path (a name ending in
    ``.json`` or holding a ``/``, or a model's folder holding one; the encoding's name is
    then the file's absolute path), or
    ``hf:ORG/NAME[@REVISION]``, a model whose ``tokenizer.json`` is in the local Hugging Face
    cache (never downloaded: :func:`.find.find_hf_tokenizer`). Such an encoding is read again
    when its file changes. A model's name (``llama-3.1-8b``, ``gpt-4.1``) is the encoding of
    its tokenizer (:mod:`.catalog`); one whose count would only be ≈, or whose tokenizer is
    not here, is a ``VocabularyError`` that says what to do instead.

    With ``path``, the vocabulary is read from that file instead: a ``tokenizer.json`` (the
    file's whole pipeline; ``name`` only names the encoding), a ``.tiktoken`` file, or a
    GPT-2 ``encoder.json`` (its ``vocab.bpe`` beside it is checked when present); for the last
    two, ``name`` picks the pre-tokenizer pattern and the special tokens. That is how
    ``p50k_base`` and ``p50k_edit``, whose vocabulary no package ships, are read.

    ``gpt2`` is tiktoken's name for ``r50k_base``'s vocabulary, and an encoding of its own
    here too (the vocabulary is loaded once for both):

    >>> get_encoding("gpt2").name, get_encoding("gpt2").encode("hello world")
    ('gpt2', [31373, 995])

    Runtime complexity: ``O(vocabulary)`` the first time, ``O(1)`` after.
    """
    if not isinstance(name, str):
        raise TypeError(f"encoding name must be a str, not {type(name).__name__}")
    canonical = ALIASES.get(name, name)
    if path is not None:
        p = os.fspath(path)
        if _is_tokenizer_json(p):
            return _tokenizer_json(name, p, key=(name, "file:" + os.path.abspath(p)))
        return _from_file(canonical, p)
    if canonical not in _FACTORIES and is_file_name(canonical):
        if canonical.startswith(HF_PREFIX):
            repo_id, revision = split_model_id(canonical)
            canonical = HF_PREFIX + repo_id + (f"@{revision}" if revision else "")
            return _tokenizer_json(canonical, str(find_hf_tokenizer(canonical)))
        p = tokenizer_json_path(os.path.abspath(os.path.expanduser(canonical)), canonical)
        if not os.path.isfile(p):
            raise VocabularyError(
                f"{canonical}: no such file; an encoding name that is a path must name a "
                "HuggingFace tokenizer.json (check the path)"
            )
        return _tokenizer_json(p, p)
    if canonical not in _FACTORIES and canonical not in _FILE_ONLY and _MODELS:
        model_encoding = _MODELS[0][0](canonical)  # a model's name (:mod:`.catalog`)
        if model_encoding is not None:
            return _model(name, model_encoding)
    with _LOCK:
        enc: PieceEncoding | None = _LOADED.get(canonical)
        if enc is not None:
            return enc
        factory = _FACTORIES.get(canonical)
    if factory is None and canonical in _FILE_ONLY:
        raise VocabularyError(
            f"{canonical} is one of tiktoken's encodings, but no package livetok can use ships "
            f"its vocabulary: pass the file, livetok.incremental.get_encoding({canonical!r}, "
            f"path='{_FILE_ONLY[canonical]}.tiktoken') (tiktoken downloads it from "
            f"{_P50K_URL})"
        )
    if factory is None:
        raise ValueError(
            f"unknown encoding {name!r}; available: {', '.join(list_encodings())} "
            f"(aliases: {', '.join(sorted(ALIASES))}), a model's name (`livetok models` "
            "lists them), a tokenizer.json path, or hf:ORG/NAME for a model in the local "
            "Hugging Face cache"
        )
    with _LOCK:  # a name that cannot be loaded gets no lock: unknown names keep nothing
        loading = _LOADING.setdefault(canonical, threading.Lock())
    with loading:
        with _LOCK:
            waited: PieceEncoding | None = _LOADED.get(canonical)
        if waited is not None:
            return waited  # loaded by the caller we waited for
        try:
            enc = check_encoding(factory())
        except ImportError as exc:
            raise VocabularyError(f"encoding {canonical!r} is not available here: {exc}") from exc
        if isinstance(enc, Encoding) and type(enc) not in copyreg.dispatch_table:
            copyreg.pickle(type(enc), _reduce)  # a subclass: pickled by name too
        with _LOCK:
            loaded: PieceEncoding = _LOADED.setdefault(canonical, enc)
        return loaded


def _model(name: str, encoding: str) -> PieceEncoding:
    """The encoding of the model ``name`` (its tokenizer's name ``encoding``); a tokenizer
    that cannot be loaded says which model asked for it."""
    try:
        return get_encoding(encoding)
    except VocabularyError as exc:
        raise VocabularyError(f"{name}: the model's tokenizer is {encoding}: {exc}") from exc
