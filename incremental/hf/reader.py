"""Read a HuggingFace ``tokenizer.json`` into a livetok encoding.

:func:`load_tokenizer_json` reads the file (bounded, depth-checked: :func:`..load.read_json_object`),
:func:`tokenizer_from_dict` builds the encoding from the parsed object:

* a BERT pipeline (``WordPiece`` model with ``BertPreTokenizer``) goes to the WordPiece family
  (:mod:`..wordpiece.load`, the LinMaxMatch encoder and its incremental splitter);
* anything else becomes a :class:`.encoding.TokenizerJsonEncoding` of the file's normalizer
  (:func:`.normalizers.build_normalizer`), pre-tokenizer
  (:func:`.pretokenizers.build_pre_tokenizer`), model (:func:`.models.build_model`) and added
  tokens (:mod:`.added`).

Counts are of ``encode(text, add_special_tokens=False)``: the ``post_processor``, ``decoder``,
``truncation`` and ``padding`` sections are read by nobody (BERT's fixed padding to 128 would
make every count 128). A component livetok does not implement raises
:class:`.errors.UnsupportedComponent` naming it and the file; nothing is approximated.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping

from ..load import VocabularyError, read_json_object
from ..protocol import PieceEncoding
from .added import parse_added_tokens
from .encoding import TokenizerJsonEncoding
from .errors import UnsupportedComponent
from .models import build_model
from .normalizers import build_normalizer
from .pretokenizers import build_pre_tokenizer

__all__ = ["load_tokenizer_json", "tokenizer_from_dict"]


def load_tokenizer_json(path: str | os.PathLike[str], *, name: str | None = None) -> PieceEncoding:
    """The encoding of the ``tokenizer.json`` at ``path`` (``name``: the encoding's name,
    default the folder's name, or the file's stem when it is not ``tokenizer``).

    Raises :class:`~.errors.UnsupportedComponent` (a ``VocabularyError``) naming a component
    that is not implemented, ``VocabularyError`` for a file that is not a tokenizer.json.

    Runtime complexity: ``O(file size)``.
    """
    p = Path(path)
    data = read_json_object(os.fspath(p), "tokenizer.json")
    label = name or (p.parent.name if p.stem == "tokenizer" and p.parent.name else p.stem)
    return tokenizer_from_dict(data, name=label, source=str(p))


def tokenizer_from_dict(data: dict[str, Any], *, name: str, source: str) -> PieceEncoding:
    """The encoding of an already parsed ``tokenizer.json`` object (``source`` names it in
    errors).

    >>> enc = tokenizer_from_dict({"model": {"type": "BPE", "vocab": {"a": 0, "b": 1,
    ...     "ab": 2}, "merges": ["a b"]}, "added_tokens": [{"id": 3, "content": "<x>",
    ...     "special": True}]}, name="toy", source="toy.json")
    >>> enc.encode("ab<x>ba")
    [2, 3, 1, 0]

    Runtime complexity: ``O(size of the object)``.
    """
    if not isinstance(data, Mapping):
        raise VocabularyError(f"{source}: not a tokenizer.json: not a JSON object")
    model_spec = data.get("model")
    if not isinstance(model_spec, Mapping):
        raise UnsupportedComponent(f"{source}: no 'model' object: not a tokenizer.json "
                                   "(it needs at least a model section)")
    norm_spec = data.get("normalizer")
    pre_spec = data.get("pre_tokenizer")
    if _is_bert(norm_spec, pre_spec, model_spec):
        return _bert(data, name, source)
    for key in ("normalizer", "pre_tokenizer"):
        if data.get(key) is not None and not isinstance(data.get(key), Mapping):
            raise UnsupportedComponent(f"{source}: '{key}' must be an object or null")
    normalizer = build_normalizer(norm_spec, source=source)
    pre = build_pre_tokenizer(pre_spec, source=source)
    model = build_model(model_spec, source=source, byte_level=pre.byte_level)
    added = parse_added_tokens(data.get("added_tokens"), source=source)
    kind = model_spec.get("type")
    use_model_cuts = (kind in (None, "BPE") and not model_spec.get("ignore_merges")
                      and not pre.byte_level)
    return TokenizerJsonEncoding(
        name=name,
        source=source,
        normalizer=normalizer,
        pre_tokenizer=pre,
        model=model,
        added=added,
        segment_start_matters=_segment_start_matters(norm_spec, pre_spec),
        local_pre_tokenizer=_local_pre_tokenizer(pre_spec),
        charwise_normalizer=_charwise(norm_spec),
        use_model_cuts=use_model_cuts,
    )


def _is_bert(norm: Any, pre: Any, model: Mapping[str, Any]) -> bool:
    """A BERT pipeline: WordPiece after BertPreTokenizer (BertNormalizer or none)."""
    return (model.get("type") == "WordPiece" and isinstance(pre, Mapping)
            and pre.get("type") == "BertPreTokenizer"
            and (norm is None or isinstance(norm, Mapping) and norm.get("type") == "BertNormalizer"))


def _bert(data: dict[str, Any], name: str, source: str) -> PieceEncoding:
    """The WordPiece family's encoding of a BERT ``tokenizer.json``."""
    from ..wordpiece.load import _from_tokenizer_json

    try:
        return _from_tokenizer_json(name, data, source)
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
    ``Sequence``, ``Replace`` of one character by one)."""
    for s in _steps(norm, "normalizers"):
        if s.get("type") != "Replace":
            return False
        pat = s.get("pattern")
        if (not isinstance(pat, Mapping) or not isinstance(pat.get("String"), str)
                or len(pat["String"]) != 1 or len(str(s.get("content", ""))) != 1):
            return False
    return True
