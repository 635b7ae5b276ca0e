"""Read a SentencePiece ``.model`` file (a ``ModelProto`` message) without ``protobuf``.

A ``.model`` file is one protocol-buffer message, ``sentencepiece.ModelProto`` of
``sentencepiece_model.proto``. livetok needs a handful of its fields, so this module decodes the
protobuf *wire format* directly (varints, length-delimited fields, fixed 32/64-bit fields) and
keeps only those: no dependency on ``protobuf`` or on the ``sentencepiece`` package at run time.

Fields read (field numbers from ``sentencepiece_model.proto``)::

    ModelProto      1 pieces (repeated SentencePiece)  2 trainer_spec  3 normalizer_spec
    SentencePiece   1 piece (string)  2 score (float)  3 type (enum, default NORMAL = 1)
    TrainerSpec     3 model_type (UNIGRAM 1, BPE 2, WORD 3, CHAR 4)  4 vocab_size
                    20 max_sentencepiece_length  21 split_by_unicode_script
                    22 split_by_whitespace  23 split_by_number  24 treat_whitespace_as_suffix
                    25 split_digits  26 allow_whitespace_only_pieces  35 byte_fallback
                    40 unk_id  41 bos_id  42 eos_id  43 pad_id  44 unk_surface
    NormalizerSpec  1 name  2 precompiled_charsmap  3 add_dummy_prefix (default true)
                    4 remove_extra_whitespaces (default true)  5 escape_whitespaces (default true)

Unknown fields are skipped, as protobuf itself does.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass, field
from enum import IntEnum
from pathlib import Path
from typing import Iterator

from ..vocab.readers import MAX_VOCAB_BYTES, read_limited
from ..env_limits import size_limit

__all__ = [
    "ModelProtoError",
    "PieceType",
    "ModelType",
    "SentencePieceModel",
    "TrainerSpec",
    "NormalizerSpec",
    "parse_model_proto",
    "read_model_file",
]


class ModelProtoError(ValueError):
    """The bytes are not a SentencePiece ``ModelProto`` this module can read."""


class PieceType(IntEnum):
    """``ModelProto.SentencePiece.Type``."""

    NORMAL = 1
    UNKNOWN = 2
    CONTROL = 3
    USER_DEFINED = 4
    UNUSED = 5
    BYTE = 6


class ModelType(IntEnum):
    """``TrainerSpec.ModelType``."""

    UNIGRAM = 1
    BPE = 2
    WORD = 3
    CHAR = 4


@dataclass
class TrainerSpec:
    """The ``TrainerSpec`` fields that matter when encoding (defaults as in the ``.proto``)."""

    model_type: int = ModelType.UNIGRAM
    vocab_size: int = 8000
    max_sentencepiece_length: int = 16
    split_by_unicode_script: bool = True
    split_by_whitespace: bool = True
    split_by_number: bool = True
    treat_whitespace_as_suffix: bool = False
    split_digits: bool = False
    allow_whitespace_only_pieces: bool = False
    byte_fallback: bool = False
    unk_id: int = 0
    bos_id: int = 1
    eos_id: int = 2
    pad_id: int = -1
    unk_surface: str = " \u2047 "


@dataclass
class NormalizerSpec:
    """``NormalizerSpec``: an empty ``precompiled_charsmap`` means the identity normalizer."""

    name: str = ""
    precompiled_charsmap: bytes = b""
    add_dummy_prefix: bool = True
    remove_extra_whitespaces: bool = True
    escape_whitespaces: bool = True


@dataclass
class SentencePieceModel:
    """The parts of a ``ModelProto`` livetok uses."""

    pieces: list[str] = field(default_factory=list)
    scores: list[float] = field(default_factory=list)
    types: list[int] = field(default_factory=list)
    trainer_spec: TrainerSpec = field(default_factory=TrainerSpec)
    normalizer_spec: NormalizerSpec = field(default_factory=NormalizerSpec)


# --- wire format ---------------------------------------------------------------------------

_VARINT, _I64, _LEN, _I32 = 0, 1, 2, 5


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    result = 0
    shift = 0
    while True:
        if pos >= len(buf):
            raise ModelProtoError("truncated varint: the file is cut short or not a .model file")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
        if shift > 70:
            raise ModelProtoError("varint longer than 10 bytes: not a protobuf message")


def _fields(buf: bytes) -> Iterator[tuple[int, int, int | bytes]]:
    """Yield ``(field_number, wire_type, value)``; ``value`` is int (varint/fixed) or bytes."""
    pos = 0
    n = len(buf)
    while pos < n:
        key, pos = _varint(buf, pos)
        num, wt = key >> 3, key & 7
        if wt == _VARINT:
            val, pos = _varint(buf, pos)
            yield num, wt, val
        elif wt == _LEN:
            ln, pos = _varint(buf, pos)
            if pos + ln > n:
                raise ModelProtoError("length-delimited field runs past the end of the message")
            yield num, wt, buf[pos : pos + ln]
            pos += ln
        elif wt == _I32:
            if pos + 4 > n:
                raise ModelProtoError("truncated fixed32 field")
            yield num, wt, buf[pos : pos + 4]
            pos += 4
        elif wt == _I64:
            if pos + 8 > n:
                raise ModelProtoError("truncated fixed64 field")
            yield num, wt, buf[pos : pos + 8]
            pos += 8
        else:
            raise ModelProtoError(f"unsupported protobuf wire type {wt}: not a .model file")


def _int32(v: int) -> int:
    # negative int32 values are sign-extended to 64 bits on the wire
    v &= (1 << 64) - 1
    return v - (1 << 64) if v >= 1 << 63 else v


def _parse_piece(buf: bytes) -> tuple[str, float, int]:
    piece, score, typ = "", 0.0, int(PieceType.NORMAL)
    for num, wt, val in _fields(buf):
        if num == 1 and wt == _LEN:
            piece = val.decode("utf-8")  # type: ignore[union-attr]
        elif num == 2 and wt == _I32:
            score = struct.unpack("<f", val)[0]  # type: ignore[arg-type]
        elif num == 3 and wt == _VARINT:
            typ = int(val)
    return piece, score, typ


_TRAINER_INTS = {3: "model_type", 4: "vocab_size", 20: "max_sentencepiece_length",
                 40: "unk_id", 41: "bos_id", 42: "eos_id", 43: "pad_id"}
_TRAINER_BOOLS = {21: "split_by_unicode_script", 22: "split_by_whitespace",
                  23: "split_by_number", 24: "treat_whitespace_as_suffix", 25: "split_digits",
                  26: "allow_whitespace_only_pieces", 35: "byte_fallback"}
_NORMALIZER_BOOLS = {3: "add_dummy_prefix", 4: "remove_extra_whitespaces",
                     5: "escape_whitespaces"}


def _parse_trainer(buf: bytes) -> TrainerSpec:
    spec = TrainerSpec()
    for num, wt, val in _fields(buf):
        if wt == _VARINT and num in _TRAINER_INTS:
            setattr(spec, _TRAINER_INTS[num], _int32(val))  # type: ignore[arg-type]
        elif wt == _VARINT and num in _TRAINER_BOOLS:
            setattr(spec, _TRAINER_BOOLS[num], bool(val))
        elif num == 44 and wt == _LEN:
            spec.unk_surface = val.decode("utf-8")  # type: ignore[union-attr]
    return spec


def _parse_normalizer(buf: bytes) -> NormalizerSpec:
    spec = NormalizerSpec()
    for num, wt, val in _fields(buf):
        if num == 1 and wt == _LEN:
            spec.name = val.decode("utf-8")  # type: ignore[union-attr]
        elif num == 2 and wt == _LEN:
            spec.precompiled_charsmap = bytes(val)
        elif wt == _VARINT and num in _NORMALIZER_BOOLS:
            setattr(spec, _NORMALIZER_BOOLS[num], bool(val))
    return spec


def parse_model_proto(data: bytes) -> SentencePieceModel:
    """Decode the bytes of a ``.model`` file.

    >>> m = parse_model_proto(b"\\x0a\\x08\\x0a\\x01a\\x15\\x00\\x00\\x80\\xbf")
    >>> m.pieces, m.scores, m.types
    (['a'], [-1.0], [1])

    Runtime complexity: ``O(len(data))``.
    """
    model = SentencePieceModel()
    try:
        for num, wt, val in _fields(data):
            if num == 1 and wt == _LEN:
                piece, score, typ = _parse_piece(val)  # type: ignore[arg-type]
                model.pieces.append(piece)
                model.scores.append(score)
                model.types.append(typ)
            elif num == 2 and wt == _LEN:
                model.trainer_spec = _parse_trainer(val)  # type: ignore[arg-type]
            elif num == 3 and wt == _LEN:
                model.normalizer_spec = _parse_normalizer(val)  # type: ignore[arg-type]
    except UnicodeDecodeError as e:
        raise ModelProtoError(f"a piece is not valid UTF-8 ({e}): not a .model file") from None
    if not model.pieces:
        raise ModelProtoError(
            "no pieces found: this is not a SentencePiece .model file (pass the "
            "tokenizer.model file, not tokenizer.json or a .vocab file)"
        )
    for i, score in enumerate(model.scores):
        if math.isnan(score):
            # subtle: BPE picks the best-scored pair; NaN compares false with everything
            raise ModelProtoError(f"piece {i} ({model.pieces[i]!r}) has the score NaN: a "
                                  "damaged .model file")
    return model


def read_model_file(path: str | Path) -> SentencePieceModel:
    """Read and decode a ``.model`` file, with a bound on its size (``MAX_VOCAB_BYTES``,
    ``LIVETOK_MAX_VOCAB_BYTES``); every failure is a :class:`ModelProtoError` that names
    the file.

    Runtime complexity: ``O(file size)``.
    """
    name = str(path)
    env = "LIVETOK_MAX_VOCAB_BYTES"
    data = read_limited(name, size_limit(env, MAX_VOCAB_BYTES), what="SentencePiece model",
                        env=env, error=ModelProtoError)
    try:
        return parse_model_proto(data)
    except ModelProtoError as e:
        raise ModelProtoError(f"{name}: {e}") from None
