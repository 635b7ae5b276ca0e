"""The ``model`` section of a ``tokenizer.json``: what turns one pre-token into ids.

:func:`build_model` reads the section and returns a :class:`Model`:

* ``BPE`` -> :class:`.bpe.BPEModel`, exactly as ``tokenizers``' ``BPE::tokenize``: the merge
  list's rules, the highest first at its leftmost position (Definition 3 of *Formalizing BPE
  Tokenization* over the merge list, which is what ``tokenizers`` runs; see :mod:`.bpe`);
* ``Unigram`` -> :class:`.unigram.UnigramModel`, the Viterbi of ``Unigram::encode``;
* ``WordPiece`` -> :class:`WordPieceModel`, the LinMaxMatch of *Fast WordPiece Tokenization*
  (``wordpiece.linmaxmatch``), equal to HuggingFace's greedy longest match;
* ``WordLevel`` -> :class:`WordLevelModel`, ``WordLevel::tokenize``: a pre-token is one
  token, its vocabulary id or the unknown token's;
* anything else (a BPE with ``dropout``) -> :class:`.errors.UnsupportedComponent`.

Byte-level pipelines (a ``ByteLevel`` pre-tokenizer or decoder) give the model the pre-token's
UTF-8 bytes spelled with GPT-2's printable characters (:func:`bytes_to_unicode`), as the
vocabulary's keys are: :func:`byte_level_map` makes that string in two C calls.
"""

from __future__ import annotations

from typing import Any, Mapping, Protocol, Sequence, runtime_checkable

from ..vocab.readers import gpt2_byte_decoder
from ..wordpiece.linmaxmatch import LinMaxMatch
from .bpe import BPEModel, is_vocab, bpe_tables, id_list
from .errors import UnsupportedComponent
from .unigram import UnigramModel, unigram_tables

__all__ = [
    "Model",
    "BPEModel",
    "UnigramModel",
    "WordPieceModel",
    "WordLevelModel",
    "build_model",
    "model_tables",
    "model_from_tables",
    "bytes_to_unicode",
    "byte_level_map",
]


@runtime_checkable
class Model(Protocol):
    """What the ``tokenizer.json`` encoding needs from a model."""

    #: True when Algorithm 1 of *Formalizing BPE Tokenization* holds inside a pre-token (BPE)
    supports_glue: bool
    #: the token of each id (None for an id the model does not have)
    id_to_token: list[str | None]
    token_to_id: dict[str, int]

    def tokenize(self, pretoken: str) -> list[int]:
        """HuggingFace's ``Model::tokenize`` ids for one pre-token (byte-level pipelines: the
        byte-mapped string, :func:`byte_level_map`)."""
        ...

    def token_lengths(self, pretoken: str, ids: Sequence[int]) -> list[int]:
        """Characters of ``pretoken`` each id covers (sum ``len(pretoken)``; a character's
        byte-fallback tokens: the character on the first, 0 on the others)."""
        ...

    def cuts(self, pretoken: str) -> list[int] | None:
        """Positions where no token can span (BPE), or None."""
        ...


class WordPieceModel:
    """A ``tokenizer.json`` ``WordPiece`` model on :class:`~..wordpiece.linmaxmatch.LinMaxMatch`.

    >>> wp = WordPieceModel({"vocab": {"[UNK]": 0, "un": 1, "##aff": 2, "##able": 3}},
    ...                     source="t.json")
    >>> wp.tokenize("unaffable"), wp.token_lengths("unaffable", [1, 2, 3]), wp.tokenize("x")
    ([1, 2, 3], [2, 3, 4], [0])

    Runtime complexity: ``O(n)`` per pre-token of ``n`` characters (Algorithm 1 of the paper).
    """

    supports_glue = False

    def __init__(self, spec: Mapping[str, Any], *, source: str) -> None:
        self.source = source
        vocab, unk = _check_wordpiece(spec, source)
        self.prefix: str = spec.get("continuing_subword_prefix", "##")
        max_chars = spec.get("max_input_chars_per_word", 100)
        self.lmm = LinMaxMatch(vocab, unk_token=unk, suffix_indicator=self.prefix,
                               max_input_chars_per_word=max_chars)
        self.token_to_id: dict[str, int] = vocab
        self.id_to_token = id_list(vocab)
        self.unk_id = vocab[unk]

    def tokenize(self, pretoken: str) -> list[int]:
        """HuggingFace's ``WordPiece::tokenize`` ids of one word.

        Runtime complexity: ``O(n)``.
        """
        return self.lmm.tokenize(pretoken)

    def token_lengths(self, pretoken: str, ids: Sequence[int]) -> list[int]:
        """Characters each id covers: the token's length (continuations without the prefix);
        the unknown token of a word that did not match covers the whole word.

        Runtime complexity: ``O(n)``.
        """
        if list(ids) == [self.unk_id]:
            return [len(pretoken)]
        plen = len(self.prefix)
        lens = []
        for k, tid in enumerate(ids):
            tok = self.id_to_token[tid]
            assert tok is not None, tid
            lens.append(len(tok) - (plen if k else 0))
        if sum(lens) != len(pretoken):
            raise ValueError(
                "token_lengths: ids are not the tokenization of this pre-token; pass the ids "
                "tokenize(pretoken) returned"
            )
        return lens

    def cuts(self, pretoken: str) -> list[int] | None:
        """None: WordPiece's greedy match is decided by the whole word."""
        return None


class WordLevelModel:
    """A ``tokenizer.json`` ``WordLevel`` model: each pre-token is one token, its id in the
    vocabulary or else the unknown token's (HuggingFace's ``WordLevel::tokenize``).

    >>> wl = WordLevelModel({"vocab": {"<unk>": 0, "hello": 1}}, source="t.json")
    >>> wl.tokenize("hello"), wl.tokenize("world"), wl.token_lengths("world", [0])
    ([1], [0], [5])

    Runtime complexity: ``O(n)`` per pre-token of ``n`` characters (one hash lookup).
    """

    supports_glue = False

    def __init__(self, spec: Mapping[str, Any], *, source: str) -> None:
        self.source = source
        vocab, unk = _check_vocab_and_unk(spec, source, "WordLevel", "<unk>")
        self.token_to_id: dict[str, int] = vocab
        self.id_to_token = id_list(vocab)
        self.unk_id = vocab[unk]

    def tokenize(self, pretoken: str) -> list[int]:
        """The pre-token's one id.

        Runtime complexity: ``O(n)``.
        """
        return [self.token_to_id.get(pretoken, self.unk_id)]

    def token_lengths(self, pretoken: str, ids: Sequence[int]) -> list[int]:
        """The one token covers the whole pre-token.

        Runtime complexity: ``O(1)``.
        """
        if len(ids) != 1:
            raise ValueError("token_lengths: a WordLevel pre-token is one token; pass the ids "
                             "tokenize(pretoken) returned")
        return [len(pretoken)]

    def cuts(self, pretoken: str) -> list[int] | None:
        """None: the pre-token is one token."""
        return None


def build_model(spec: Mapping[str, Any], *, source: str, byte_level: bool = False) -> Model:
    """The model a ``tokenizer.json``'s ``model`` section describes; ``source`` names the file
    in errors; ``byte_level``: the pipeline maps bytes to characters before the model.

    >>> m = build_model({"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"]},
    ...                 source="t.json")
    >>> m.tokenize("aab")
    [0, 2]
    >>> build_model({"type": "BPE", "vocab": {}, "merges": [], "dropout": 0.1}, source="t.json")
    Traceback (most recent call last):
      ...
    livetok.incremental.hf.errors.UnsupportedComponent: t.json: model BPE with dropout=0.1: not implemented (random merges cannot be counted exactly); set dropout to null

    Runtime complexity: ``O(V + R)`` for ``V`` tokens and ``R`` merges.
    """
    return model_from_tables(model_tables(spec, source=source), source=source,
                             byte_level=byte_level)


def model_tables(spec: Mapping[str, Any], *, source: str) -> dict[str, Any]:
    """The section read and checked into plain values that ``marshal`` writes (what the
    vocabulary cache keeps, :mod:`.reader`): ``{"type": ..., **tables}`` where the tables are
    :func:`.bpe.bpe_tables`' or :func:`.unigram.unigram_tables`' (WordPiece: the section's
    four fields, its LinMaxMatch trie is built on every load; WordLevel: its two).
    :func:`model_from_tables` makes the model of them in ``O(V)`` at most.

    Runtime complexity: ``O(V + R)`` for ``V`` tokens and ``R`` merges.
    """
    if not isinstance(spec, Mapping):
        raise UnsupportedComponent(f"{source}: 'model' must be an object, got {type(spec).__name__}")
    kind = spec.get("type")
    if kind is None:
        kind = _infer_type(spec)
    if kind == "BPE":
        return {"type": kind, **bpe_tables(spec, source=source)}
    if kind == "Unigram":
        return {"type": kind, **unigram_tables(spec, source=source)}
    if kind == "WordPiece":
        fields = {k: spec[k] for k in _WORDPIECE_FIELDS if k in spec}
        _check_wordpiece(fields, source)
        return {"type": kind, **fields}
    if kind == "WordLevel":
        fields = {k: spec[k] for k in ("vocab", "unk_token") if k in spec}
        _check_vocab_and_unk(fields, source, "WordLevel", "<unk>")
        return {"type": kind, **fields}
    raise UnsupportedComponent(
        f"{source}: model {kind}: not implemented; livetok reads the models BPE, Unigram, "
        "WordPiece and WordLevel"
    )


def _check_wordpiece(spec: Mapping[str, Any], source: str) -> tuple[dict[str, int], str]:
    """``(vocab, unk_token)`` of a WordPiece section, or the error that says what is wrong."""
    return _check_vocab_and_unk(spec, source, "WordPiece", "[UNK]")


def _check_vocab_and_unk(spec: Mapping[str, Any], source: str, kind: str, default_unk: str
                         ) -> tuple[dict[str, int], str]:
    """``(vocab, unk_token)`` of a WordPiece or WordLevel section (``unk_token`` defaults to
    HuggingFace's ``default_unk``), or the error that says what is wrong."""
    vocab = spec.get("vocab")
    if not is_vocab(vocab):
        raise UnsupportedComponent(
            f"{source}: model {kind}: 'vocab' must be an object of token -> integer id (>= 0)"
        )
    unk = spec.get("unk_token", default_unk)
    if unk not in vocab:
        raise UnsupportedComponent(
            f"{source}: model {kind}: unk_token {unk!r} is not in the vocabulary "
            "(HuggingFace fails on the first word it cannot match); add it to the vocabulary "
            "or name one that is there"
        )
    return vocab, unk


#: what a WordPiece section says (all :class:`WordPieceModel` reads)
_WORDPIECE_FIELDS = ("vocab", "unk_token", "continuing_subword_prefix", "max_input_chars_per_word")


def model_from_tables(tables: Mapping[str, Any], *, source: str, byte_level: bool = False
                      ) -> Model:
    """The model of what :func:`model_tables` returned (checked then: nothing is checked
    again).

    Runtime complexity: ``O(V)`` (BPE's id list; WordPiece: its trie).
    """
    kind = tables["type"]
    if kind == "BPE":
        return BPEModel.from_tables(tables, source=source, byte_level=byte_level)
    if kind == "Unigram":
        return UnigramModel.from_tables(tables, source=source)
    if kind == "WordLevel":
        return WordLevelModel(tables, source=source)
    return WordPieceModel(tables, source=source)


def _infer_type(spec: Mapping[str, Any]) -> str:
    """The model type of a section without ``type``: HuggingFace tries each model's fields
    (checked with tokenizers 0.23: merges -> BPE, a list vocabulary -> Unigram, WordPiece's
    three options -> WordPiece; a vocabulary object with unk_token -> WordLevel; anything
    else fails to load there)."""
    if "merges" in spec:
        return "BPE"
    if isinstance(spec.get("vocab"), list):
        return "Unigram"
    if {"unk_token", "continuing_subword_prefix", "max_input_chars_per_word"} <= spec.keys():
        return "WordPiece"
    if isinstance(spec.get("vocab"), Mapping) and "unk_token" in spec:
        return "WordLevel"
    return "(no type field, and not the fields of one HuggingFace reads)"


def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's byte -> printable character table, the alphabet of byte-level vocabularies.

    >>> t = bytes_to_unicode(); t[ord("a")], t[ord(" ")], t[0x0A], len(set(t.values()))
    ('a', 'Ġ', 'Ċ', 256)

    Runtime complexity: ``O(256)``.
    """
    return {b: c for c, b in gpt2_byte_decoder().items()}


#: ``str.translate`` table from U+0000..U+00FF (a byte, decoded as Latin-1) to its character
_BYTE_TABLE = {b: c for b, c in bytes_to_unicode().items()}


def byte_level_map(text: str) -> str:
    """``text``'s UTF-8 bytes as byte-level characters (the keys of a byte-level vocabulary).

    >>> byte_level_map(" héllo\\n")
    'ĠhÃ©llo\u010a'

    Runtime complexity: ``O(len(text))``, three C calls.
    """
    return text.encode("utf-8").decode("latin-1").translate(_BYTE_TABLE)
