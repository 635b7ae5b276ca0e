"""Read a HuggingFace ``tokenizer.json`` into a livetok encoding.

:func:`load_tokenizer_json` reads the file (bounded, depth-checked: :func:`..load.json_object`),
:func:`tokenizer_from_dict` builds the encoding from the parsed object, in two steps:
:func:`prepare` checks it and makes what is costly to make (the BPE rule table, the Unigram
pieces and scores; a second of Python for gpt-oss or Gemma 3) into plain values, which the
vocabulary cache (:mod:`..vocab_cache`) keeps for the next load of the same bytes, and
:func:`from_prepared` builds the encoding of them (docs/startup.md, "tokenizer.json files"):

* a BERT pipeline (``WordPiece`` model with ``BertPreTokenizer``) goes to the WordPiece family
  (:mod:`..wordpiece.load`, the LinMaxMatch encoder and its incremental splitter);
* anything else (and a BERT pipeline whose decoder the WordPiece family does not read: one
  neither ``WordPiece`` nor null) becomes a :class:`.encoding.TokenizerJsonEncoding` of the
  file's normalizer (:func:`.normalizers.build_normalizer`), pre-tokenizer
  (:func:`.pretokenizers.build_pre_tokenizer`), model (:func:`.models.build_model`), added
  tokens (:mod:`.added`) and decoder (:func:`.decoders.build_decoder`, for ``decode`` only).

Counts are of ``encode(text, add_special_tokens=False)``: the ``post_processor``,
``truncation`` and ``padding`` sections are read by nobody (BERT's fixed padding to 128 would
make every count 128). A component livetok does not implement raises
:class:`.errors.UnsupportedComponent` naming it and the file; nothing is approximated. The
exception is the ``decoder``, which counting never uses: an unsupported one leaves the file
loadable, and only ``decode`` raises that error (:class:`.decoders.Refused`).
"""

from __future__ import annotations

import contextlib
import copyreg
import os
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Optional, Sequence, Tuple

from ..vocab import parse_store as vocab_cache
from ..vocab.readers import VocabularyError, inflated, read_as, json_object, vocabulary_limit
from ..env_limits import size_limit
from ..piece_encoding import PieceEncoding
from ..regex import MAX_PATTERN_CHARS
from .added import check_added_count, parse_added_tokens, token_rows, tokens_of_rows
from .cut_pairs import formable_pairs
from .decoders import Decoder, Refused, build_decoder
from .bytelevel_file import ByteLevelFile, route
from .bytelevel_nfc import NfcByteLevelFile
from .encoding import TokenizerJsonEncoding
from .errors import UnboundedComponent, UnsupportedComponent
from .model_section import model_from_tables, model_tables
from .normalizers import Normalizer, build_normalizer
from .pipeline import Sections
from .pretokenizers import PreTokenizer, build_pre_tokenizer

__all__ = ["load_tokenizer_json", "tokenizer_from_dict", "cached_tokenizer", "prepare",
           "from_prepared", "check_pipeline", "MAX_PIPELINE_STEPS"]


def load_tokenizer_json(path: str | os.PathLike[str], *, name: str | None = None) -> PieceEncoding:
    """The encoding of the ``tokenizer.json`` at ``path`` (``name``: the encoding's name,
    default the folder's name, or the file's stem when it is not ``tokenizer``).

    What is costly to make of the file (the parse, the BPE rule table, the Unigram pieces:
    :func:`prepare`) comes from the vocabulary cache (:mod:`..vocab_cache`, keyed by the
    file's bytes and the code that prepares them) when it holds this file's, and is put
    there otherwise (docs/startup.md, "tokenizer.json files").

    Raises :class:`~.errors.UnsupportedComponent` (a ``VocabularyError``) naming a component
    that is not implemented, ``VocabularyError`` for a file that is not a tokenizer.json.

    Runtime complexity: ``O(file size)``.
    """
    p = Path(path)
    source = str(p)
    label = name or (p.parent.name if p.stem == "tokenizer" and p.parent.name else p.stem)
    limit = vocabulary_limit()
    raw = read_as(source, _WHAT, inflate=False)  # as on disk: the cache's key
    # the bound is part of the key: a file refused under a lower bound is refused cached too
    return cached_tokenizer(
        f"tokenizer-json-{limit}", source, [raw],
        lambda: json_object(inflated(raw, source, _WHAT, limit), source, _WHAT), name=label)


@contextlib.contextmanager
def _bounded(source: str) -> Iterator[None]:
    """Turn a ``RecursionError`` or ``MemoryError`` while a file is read or translated into a
    one-line :class:`VocabularyError` naming it (a file nested or sized past what the reader's
    own bounds foresaw; those bounds say which limit applies, this is the backstop)."""
    try:
        yield
    except RecursionError:
        raise VocabularyError(
            f"{source}: nested too deeply to read (a Python recursion limit was reached while "
            "reading or translating it); this tokenizer.json cannot be used with livetok"
        ) from None
    except MemoryError:
        raise VocabularyError(
            f"{source}: reading or translating it needs more memory than this process has; "
            "this tokenizer.json cannot be used with livetok") from None


def cached_tokenizer(kind: str, source: str, keys: Sequence[bytes],
                     make: Callable[[], dict[str, Any]], *, name: str,
                     code: Sequence[str] = ()) -> PieceEncoding:
    """The encoding of the ``tokenizer.json`` object ``make()`` returns, what :func:`prepare`
    makes of it kept in the vocabulary cache (:mod:`..vocab_cache`) under ``kind``, keyed by
    ``keys`` (the bytes it is made from) and the code that makes it (this package's, and the
    files ``code`` names: say, a converter that ``make`` runs). On a hit neither ``make`` nor
    :func:`prepare` runs. A ``RecursionError`` or ``MemoryError`` on the way is a one-line
    ``VocabularyError`` naming ``source``.

    Runtime complexity: ``O(size of the object)`` on a miss; on a hit, the cache's read and
    :func:`from_prepared`.
    """
    built: list[_Parts] = []

    def build() -> dict[str, Any]:
        payload, parts = _prepare(make(), source)
        built.append(parts)
        return payload

    with _bounded(source):
        payload = vocab_cache.cached(kind, source, list(keys), build, valid=_is_payload,
                                     code=[*_code_files(), *code])
        return from_prepared(payload, name=name, source=source,
                             parts=built[0] if built else None)


def tokenizer_from_dict(data: dict[str, Any], *, name: str, source: str,
                        byte_level_family: bool = True) -> PieceEncoding:
    """The encoding of an already parsed ``tokenizer.json`` object (``source`` names it in
    errors; nothing is cached).

    >>> enc = tokenizer_from_dict({"model": {"type": "BPE", "vocab": {"a": 0, "b": 1,
    ...     "ab": 2}, "merges": ["a b"]}, "added_tokens": [{"id": 3, "content": "<x>",
    ...     "special": True}]}, name="toy", source="toy.json")
    >>> enc.encode("ab<x>ba")
    [2, 3, 1, 0]

    ``byte_level_family`` False keeps a byte-level file (:mod:`.bytelevel_file`) on the general
    pipeline, :class:`~.encoding.TokenizerJsonEncoding` (the reference its tests compare with).

    Runtime complexity: ``O(size of the object)``.
    """
    with _bounded(source):
        payload, parts = _prepare(data, source, byte_level_family)
        return from_prepared(payload, name=name, source=source, parts=parts)


def prepare(data: dict[str, Any], *, source: str) -> dict[str, Any]:
    """The parsed ``tokenizer.json`` checked and reduced to what :func:`from_prepared` builds
    the encoding of, in plain values that ``marshal`` writes (what the vocabulary cache
    keeps): the normalizer, pre-tokenizer and decoder sections as they are (built on every
    load: cheap), the model's tables (:func:`.models.model_tables`), the added tokens as
    tuples; for a BERT pipeline, the parsed file itself (the WordPiece family builds its trie
    from it).

    Raises what :func:`tokenizer_from_dict` raises for the object, in the same order.

    Runtime complexity: ``O(size of the object)``.
    """
    return _prepare(data, source)[0]


#: a normalizer and a pre-tokenizer already built (by :func:`_prepare`, checking them)
_Parts = Optional[Tuple[Optional[Normalizer], PreTokenizer]]
#: the file as the errors and the size bound name it
_WHAT = "tokenizer.json"


#: the most steps (``type`` objects) a file's normalizer, pre-tokenizer and decoder may have in
#: all (``LIVETOK_MAX_PIPELINE_STEPS``): each step is a pass over every text (the real files
#: the tests read have at most 8, Llama 2); their patterns may have ``LIVETOK_MAX_REGEX_CHARS``
#: characters in all, as one pattern may (:data:`..regex.MAX_PATTERN_CHARS`; the real
#: files: at most 274)
MAX_PIPELINE_STEPS = 256


def check_pipeline(data: Mapping[str, Any], *, source: str) -> None:
    """Refuse (:class:`.errors.UnboundedComponent`) a file whose normalizer, pre-tokenizer
    and decoder have more steps, or whose patterns have more characters, than the limits.

    >>> check_pipeline({"pre_tokenizer": {"type": "Split", "pattern": {"Regex": "a+"}}},
    ...                source="f.json")

    Runtime complexity: ``O(size of the three sections)``.
    """
    steps = chars = 0
    stack: list[Any] = [data.get(k) for k in ("normalizer", "pre_tokenizer", "decoder")]
    while stack:
        node = stack.pop()
        if isinstance(node, Mapping):
            steps += int("type" in node)
            pattern = node.get("pattern")
            if isinstance(pattern, Mapping):
                chars += sum(len(v) for v in pattern.values() if isinstance(v, str))
            stack.extend(v for v in node.values() if isinstance(v, (Mapping, list)))
        elif isinstance(node, list):
            stack.extend(node)
    step_limit = size_limit(_STEPS_ENV, MAX_PIPELINE_STEPS, unit="steps")
    if steps > step_limit:
        raise UnboundedComponent(
            f"{source}: its normalizer, pre-tokenizer and decoder have {steps:,} steps in all, "
            f"more than the {step_limit:,} livetok runs (each is a pass over every text); set "
            f"{_STEPS_ENV} to allow more")
    char_limit = size_limit(_CHARS_ENV, MAX_PATTERN_CHARS, unit="characters")
    if chars > char_limit:
        raise UnboundedComponent(
            f"{source}: its patterns have {chars:,} characters in all, more than the "
            f"{char_limit:,} livetok reads from a file; set {_CHARS_ENV} to allow more")


_STEPS_ENV = "LIVETOK_MAX_PIPELINE_STEPS"
_CHARS_ENV = "LIVETOK_MAX_REGEX_CHARS"


def _prepare(data: dict[str, Any], source: str, byte_level_family: bool = True
             ) -> tuple[dict[str, Any], _Parts]:
    """:func:`prepare`, and the normalizer and pre-tokenizer it built to check them."""
    if not isinstance(data, Mapping):
        raise VocabularyError(f"{source}: not a tokenizer.json: not a JSON object")
    check_pipeline(data, source=source)
    model_spec = data.get("model")
    if not isinstance(model_spec, Mapping):
        raise UnsupportedComponent(f"{source}: no 'model' object: not a tokenizer.json "
                                   "(it needs at least a model section)")
    norm_spec = data.get("normalizer")
    pre_spec = data.get("pre_tokenizer")
    if _is_bert(norm_spec, pre_spec, model_spec, data.get("decoder")):
        return {"bert": data}, None
    for key in ("normalizer", "pre_tokenizer"):
        if data.get(key) is not None and not isinstance(data.get(key), Mapping):
            raise UnsupportedComponent(f"{source}: '{key}' must be an object or null")
    normalizer = build_normalizer(norm_spec, source=source)
    pre = build_pre_tokenizer(pre_spec, source=source)
    tables = model_tables(model_spec, source=source)
    added = parse_added_tokens(data.get("added_tokens"), source=source)
    model_cuts = (model_spec.get("type") in (None, "BPE") and not model_spec.get("ignore_merges"))
    if (tables["type"] == "BPE" and model_cuts and not pre.byte_level
            and _local_pre_tokenizer(pre_spec)):
        # every piece of a document is cut with them (Gemma 3: ~0.4 s to find, 12 ms cached)
        tables["pairs"] = formable_pairs(tables)
    # a byte-level file: the byte-level family's encoding (:mod:`.bytelevel_file`), which
    # needs the rules but not the string vocabulary (the slowest part of a warm load)
    bl = route(data, tables, added) if pre.byte_level and byte_level_family else None
    if bl is not None:
        tables = {"type": tables["type"], "rules": tables["rules"],
                  "ignore_merges": tables["ignore_merges"],
                  "m": max(tables["vocab"].values(), default=-1) + 1}
    payload = {
        "bytelevel": bl,
        "normalizer": norm_spec,
        "pre_tokenizer": pre_spec,
        "model": tables,
        "added": token_rows(added),
        # the model's cuts serve pieces unless merges are ignored (a whole token wins)
        "model_cuts": model_cuts,
        # JSON values (marshal writes them); built on each load, an unsupported one refused
        # only by decode
        "decoder": data.get("decoder"),
    }
    return payload, (normalizer, pre)


def from_prepared(payload: Mapping[str, Any], *, name: str, source: str,
                  parts: _Parts = None) -> PieceEncoding:
    """The encoding of what :func:`prepare` made of a file (checked then; ``parts``: the
    normalizer and pre-tokenizer it built, else they are built here from their sections).

    Runtime complexity: ``O(V)`` (the model's id list, the added tokens' pattern).
    """
    if "bert" in payload:
        return _bert(payload["bert"], name, source)
    check_added_count(len(payload["added"]), source=source)  # (a limit lowered since cached)
    norm_spec = payload["normalizer"]
    pre_spec = payload["pre_tokenizer"]
    if parts is None:
        check_pipeline(payload, source=source)  # (limits lowered since it was cached)
        parts = (build_normalizer(norm_spec, source=source),
                 build_pre_tokenizer(pre_spec, source=source))
    normalizer, pre = parts
    bl = payload.get("bytelevel")
    if bl is not None:
        tables = payload["model"]
        enc = ByteLevelFile(name, source=source, pattern=bl["pattern"], ranks=bl["ranks"],
                            rules=tables["rules"], m=tables["m"],
                            ignore_merges=tables["ignore_merges"],
                            added=tokens_of_rows(payload["added"]),
                            decoder=_decoder(payload["decoder"], source))
        return NfcByteLevelFile(enc) if bl.get("normalizer") == "NFC" else enc
    model = model_from_tables(payload["model"], source=source, byte_level=pre.byte_level)
    return TokenizerJsonEncoding(
        Sections(name=name, source=source, normalizer=normalizer, pre_tokenizer=pre,
                 model=model, added=tokens_of_rows(payload["added"]),
                 decoder=_decoder(payload["decoder"], source)),
        segment_start_matters=_segment_start_matters(norm_spec, pre_spec),
        local_pre_tokenizer=_local_pre_tokenizer(pre_spec),
        charwise_normalizer=_charwise(norm_spec),
        use_model_cuts=payload["model_cuts"] and not pre.byte_level,
    )


def _reduce_file(enc: ByteLevelFile | NfcByteLevelFile) -> tuple[Any, ...]:
    """A :class:`.bytelevel_file.ByteLevelFile` (or :class:`.bytelevel_nfc.NfcByteLevelFile`)
    is pickled as its file (loaded again on the other side, from the vocabulary cache)."""
    return _reload, (enc.source, enc.name)


def _reload(path: str, name: str) -> PieceEncoding:
    return load_tokenizer_json(path, name=name)


copyreg.pickle(ByteLevelFile, _reduce_file)
copyreg.pickle(NfcByteLevelFile, _reduce_file)


def _decoder(spec: Any, source: str) -> Decoder | None:
    """The file's decoder, or a :class:`.decoders.Refused` one saying why it is not
    implemented (decoding raises that; loading and counting go on)."""
    try:
        return build_decoder(spec, source=source)
    except UnsupportedComponent as exc:
        return Refused(str(exc))


def _is_payload(value: object) -> bool:
    """Whether ``value`` has the shape of :func:`prepare`'s result (the cache's checksum
    vouches for the rest). Runtime complexity: ``O(1)``."""
    if type(value) is not dict:
        return False
    if "bert" in value:
        return type(value["bert"]) is dict
    model = value.get("model")
    if not (type(model) is dict
            and model.get("type") in ("BPE", "Unigram", "WordPiece", "WordLevel")
            and type(value.get("added")) is list and type(value.get("model_cuts")) is bool
            and "decoder" in value and "bytelevel" in value):
        return False
    # subtle: the code key hashes the code's files when the entry is written, so a process
    # still running older code (a server during an upgrade) can write its own shape under the
    # new key: the shapes the two readers need are checked apart
    bl = value["bytelevel"]
    if bl is None:
        return model["type"] != "BPE" or "vocab" in model
    return type(bl) is dict and type(bl.get("ranks")) is dict and type(
        bl.get("pattern")) is str and {"rules", "m", "ignore_merges"} <= model.keys()


def _code_files() -> list[str]:
    """The files of the code that makes a payload (:func:`prepare`): its key in the cache."""
    from ..vocab import readers as load
    from . import added, bpe, bytelevel_file, model_section as models, unigram

    return [__file__, load.__file__, models.__file__, bpe.__file__, unigram.__file__,
            added.__file__, bytelevel_file.__file__]


def _is_bert(norm: Any, pre: Any, model: Mapping[str, Any], decoder: Any) -> bool:
    """A BERT pipeline: WordPiece after BertPreTokenizer (BertNormalizer or none), with the
    WordPiece decoder or none (the decoders the WordPiece family reads)."""
    return (model.get("type") == "WordPiece" and isinstance(pre, Mapping)
            and pre.get("type") == "BertPreTokenizer"
            and (norm is None or isinstance(norm, Mapping) and norm.get("type") == "BertNormalizer")
            and (decoder is None or isinstance(decoder, Mapping)
                 and decoder.get("type") == "WordPiece"))


def _bert(data: dict[str, Any], name: str, source: str) -> PieceEncoding:
    """The WordPiece family's encoding of a BERT ``tokenizer.json``."""
    from ..wordpiece.load import from_tokenizer_json

    try:
        return from_tokenizer_json(name, data, source)
    except UnsupportedComponent:
        raise
    except VocabularyError as exc:
        raise UnsupportedComponent(str(exc)) from exc


def _steps(spec: Any, key: str) -> list[Mapping[str, Any]]:
    """The steps of a section, a ``Sequence`` flattened."""
    if not isinstance(spec, Mapping):
        return []
    if spec.get("type") == "Sequence":
        out: list[Mapping[str, Any]] = []
        for s in spec.get(key) or []:
            out.extend(_steps(s, key))
        return out
    return [spec]


def _segment_start_matters(norm: Any, pre: Any) -> bool:
    """Whether a segment's ids depend on the segment starting there (not only on the text's
    start): ``Prepend``, ``Metaspace`` prepend_scheme always (or the legacy
    ``add_prefix_space``), ``ByteLevel`` add_prefix_space."""
    if any(s.get("type") == "Prepend" and s.get("prepend") for s in _steps(norm, "normalizers")):
        return True
    for s in _steps(pre, "pretokenizers"):
        kind = s.get("type")
        if kind == "Metaspace":
            scheme = s.get("prepend_scheme")
            if scheme == "always" or (scheme is None and s.get("add_prefix_space", True)):
                return True
        if kind == "ByteLevel" and s.get("add_prefix_space", True):
            return True
    return False


def _local_pre_tokenizer(pre: Any) -> bool:
    """Whether the pre-tokenizer's pieces restart at *any* position (none, ``Split`` on one
    literal character, ``Metaspace``, ``WhitespaceSplit``): a position inside a pre-token is
    a valid place to restart it, with a look-ahead of one character."""
    for s in _steps(pre, "pretokenizers"):
        kind = s.get("type")
        if kind == "Split":
            pat = s.get("pattern")
            if (not isinstance(pat, Mapping) or not isinstance(pat.get("String"), str)
                    or len(pat["String"]) != 1 or s.get("invert")):
                return False
        elif kind not in ("Metaspace", "WhitespaceSplit"):
            return False
    return True


def _charwise(norm: Any) -> bool:
    """Whether the normalizer maps each character to one character alone (none, an empty
    ``Sequence``, ``Replace`` of one character by one), but for a ``Prepend`` at a segment
    start (Llama 2: the encoding knows its segment starts, ``glue_ok``)."""
    for s in _steps(norm, "normalizers"):
        if s.get("type") == "Prepend":
            continue
        if s.get("type") != "Replace":
            return False
        pat = s.get("pattern")
        if (not isinstance(pat, Mapping) or not isinstance(pat.get("String"), str)
                or len(pat["String"]) != 1 or len(str(s.get("content", ""))) != 1):
            return False
    return True
