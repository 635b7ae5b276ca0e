"""Mistral's Tekken vocabularies (``tekken_*.json`` of the Apache-2.0 ``mistral-common``): as
``mistral-common`` encodes them (:func:`tekken_encoding`, the named encodings), and in
HuggingFace's ``tokenizer.json`` form, built in memory (:func:`tekken_to_dict`).

A Tekken file is Mistral's own format: a tiktoken-style list of ranked byte strings
(base64), the pre-tokenizer's regex, and a count of special tokens that come first in the id
space.

**mistral-common's semantics** (issue 35, decision 4: the library Mistral's models and API
use). Its ``Tekkenizer`` is tiktoken on the ranks with no special tokens (``special_tokens={}``):
every string in the text is text, ``[INST]`` or ``</s>`` included (as tiktoken's
``encode_ordinary`` treats ``<|endoftext|>``), and each id is the rank plus the number of
special tokens. :func:`tekken_encoding` is the byte-level
:class:`~livetok.incremental.bytelevel.encoding.Encoding` of exactly that: the ranks shifted
by that number (a constant shift keeps tiktoken's merge order, so the ids are
``mistral-common``'s), the file's pattern, the special tokens known for ``decode`` only.

**HuggingFace's semantics**: :func:`tekken_to_dict` writes what ``transformers``'
``convert_tekken_tokenizer`` writes: byte-level BPE with ``ignore_merges`` (tiktoken semantics), merges derived from the
ranks, the special tokens as added tokens with ids ``0..n_special-1`` and the ranks shifted
after them. ``livetok.incremental.hf.tokenizer_from_dict`` then builds the encoding, and
``tests/_tokenizer_files.py`` writes the same dictionary as the pinned test file (so the
pinned SHA-256 vouches for this conversion too).

>>> specials = tekken_specials({"config": {"default_num_special_tokens": 22}})
>>> specials[:3], specials[-2:]
(['<unk>', '<s>', '</s>'], ['<SPECIAL_20>', '<SPECIAL_21>'])
"""

from __future__ import annotations

import base64
import json
from typing import Any, Mapping

from ..bytelevel.encoding import Encoding
from .model_section import bytes_to_unicode

__all__ = ["tekken_ranks", "tekken_specials", "tekken_to_dict", "tekken_json_text",
           "tekken_encoding", "load_tekken"]

#: Tekken v3 files without a ``special_tokens`` list (``tekken_240718.json``) get these first
#: 20, then ``<SPECIAL_20>``..``<SPECIAL_999>`` (``mistral_common/tokens/tokenizers/tekken.py``)
_TEKKEN_SPECIALS = (
    "<unk> <s> </s> [INST] [/INST] [AVAILABLE_TOOLS] [/AVAILABLE_TOOLS] [TOOL_RESULTS] "
    "[/TOOL_RESULTS] [TOOL_CALLS] [IMG] <pad> [IMG_BREAK] [IMG_END] [PREFIX] [MIDDLE] [SUFFIX] "
    "[SYSTEM_PROMPT] [/SYSTEM_PROMPT] [TOOL_CONTENT]"
).split()


def tekken_ranks(data: Mapping[str, Any]) -> tuple[dict[bytes, int], str, int]:
    """``(ranks, pattern, n_special)`` of a parsed Tekken file: the mergeable ranks without
    the special-token offset (the first ``default_vocab_size - n_special`` entries, as
    ``mistral-common`` keeps), the pre-tokenizer's regex, the number of special tokens.

    Runtime complexity: ``O(vocabulary)``.
    """
    cfg = data["config"]
    n_special = int(cfg["default_num_special_tokens"])
    n_inner = int(cfg["default_vocab_size"]) - n_special
    ranks = {base64.b64decode(v["token_bytes"]): i for i, v in enumerate(data["vocab"][:n_inner])}
    return ranks, str(cfg["pattern"]), n_special


def tekken_specials(data: Mapping[str, Any]) -> list[str]:
    """The special tokens' strings, by id: the file's ``special_tokens`` list when it has one,
    else ``mistral-common``'s defaults, padded with ``<SPECIAL_i>`` to the declared count.

    Runtime complexity: ``O(special tokens)``.
    """
    n_special = int(data["config"]["default_num_special_tokens"])
    listed = [str(t["token_str"]) for t in data.get("special_tokens") or []]
    specials = listed or list(_TEKKEN_SPECIALS)
    return specials + [f"<SPECIAL_{i}>" for i in range(len(specials), n_special)]


def _merges(ranks: Mapping[bytes, int], show: Mapping[int, str]) -> list[list[str]]:
    """The merges of a tiktoken-style vocabulary, as ``convert_tekken_tokenizer`` derives them:
    for each token by rank, every split into two tokens, ordered by the two parts' ranks."""

    def s(b: bytes) -> str:
        return "".join(show[x] for x in b)

    merges: list[list[str]] = []
    for tok, _ in sorted(ranks.items(), key=lambda kv: kv[1]):
        local = []
        for k in range(1, len(tok)):
            left, right = tok[:k], tok[k:]
            if left in ranks and right in ranks:
                local.append((ranks[left], ranks[right], left, right))
        merges.extend([s(a), s(b)] for _, _, a, b in sorted(local))
    return merges


def tekken_to_dict(data: Mapping[str, Any]) -> dict[str, Any]:
    """The HuggingFace ``tokenizer.json`` dictionary of a parsed Tekken file (as
    ``transformers``' ``convert_tekken_tokenizer``): byte-level BPE, ``ignore_merges``, the
    Split regex ``Isolated`` then ``ByteLevel(use_regex=false)``, the special tokens first.

    Runtime complexity: ``O(sum of the tokens' lengths)`` dictionary look-ups.
    """
    ranks, pattern, n_special = tekken_ranks(data)
    specials = tekken_specials(data)
    show = bytes_to_unicode()
    vocab = {t: i for i, t in enumerate(specials)}
    for tok, rank in sorted(ranks.items(), key=lambda kv: kv[1]):
        vocab["".join(show[x] for x in tok)] = rank + n_special
    byte_level = {"add_prefix_space": False, "trim_offsets": True, "use_regex": False}
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [
            {"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
             "normalized": False, "special": True}
            for i, t in enumerate(specials)
        ],
        "normalizer": None,
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Isolated",
             "invert": False},
            {"type": "ByteLevel", **byte_level},
        ]},
        "post_processor": None,
        "decoder": {"type": "ByteLevel", **byte_level},
        "model": {
            "type": "BPE", "dropout": None, "unk_token": None,
            "continuing_subword_prefix": None, "end_of_word_suffix": None, "fuse_unk": False,
            "byte_fallback": False, "ignore_merges": True,
            "vocab": vocab, "merges": _merges(ranks, show),
        },
    }


def tekken_json_text(raw: bytes) -> str:
    """The ``tokenizer.json`` text of the Tekken file whose bytes are ``raw`` (the pinned
    test file's exact bytes: ``ensure_ascii=False``, ``indent=1``).

    Runtime complexity: as :func:`tekken_to_dict`.
    """
    return json.dumps(tekken_to_dict(json.loads(raw)), ensure_ascii=False, indent=1)


def tekken_encoding(name: str, data: Mapping[str, Any], *, source: str = "") -> Encoding:
    """The encoding of a parsed Tekken file as ``mistral-common``'s ``Tekkenizer.encode(text,
    bos=False, eos=False)`` gives its ids (module docstring): tiktoken on the ranks shifted by
    the number of special tokens, special-token strings in the text encoded as text.

    Runtime complexity: ``O(vocabulary)``.
    """
    ranks, pattern, n_special = tekken_ranks(data)
    specials = tekken_specials(data)
    return Encoding(name, pat_str=pattern, source=source,
                    mergeable_ranks={b: r + n_special for b, r in ranks.items()},
                    special_tokens={t: i for i, t in enumerate(specials)})


def _is_payload(v: object) -> bool:
    return (isinstance(v, dict) and isinstance(v.get("ranks"), dict)
            and isinstance(v.get("pattern"), str) and isinstance(v.get("specials"), list))


def load_tekken(name: str, path: str, raw: bytes) -> Encoding:
    """The named Tekken encoding (``mistral-common``'s semantics, :func:`tekken_encoding`) of
    the file ``path`` whose bytes are ``raw``, its ranks kept in the vocabulary cache
    (:mod:`..vocab_cache`: a warm start parses no JSON). A file that is not a Tekken
    vocabulary is a one-line :class:`~livetok.incremental.vocab.readers.VocabularyError`.

    Runtime complexity: ``O(vocabulary)``.
    """
    from ..vocab import parse_store as vocab_cache
    from ..vocab.readers import VocabularyError, check_byte_level, check_ranks

    def make() -> dict[str, Any]:
        try:
            data = json.loads(raw)
            ranks, pattern, n_special = tekken_ranks(data)
            specials = tekken_specials(data)
        except (ValueError, KeyError, TypeError, IndexError) as exc:
            raise VocabularyError(
                f"{path}: not a Tekken vocabulary ({type(exc).__name__}: {exc}); reinstall "
                "mistral-common (pip install --force-reinstall mistral-common)") from None
        shifted = {b: r + n_special for b, r in ranks.items()}
        check_ranks(shifted, path)
        check_byte_level(shifted, path)
        return {"ranks": shifted, "pattern": pattern, "specials": specials}

    got = vocab_cache.cached("tekken-ranks", path, [raw], make, valid=_is_payload,
                             code=[__file__])
    return Encoding(name, pat_str=got["pattern"], mergeable_ranks=got["ranks"], source=path,
                    special_tokens={t: i for i, t in enumerate(got["specials"])})
