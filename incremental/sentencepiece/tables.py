"""What a SentencePiece BPE ``.model`` declares, checked and made lookup tables for
:mod:`.encoding`: the refusals (what livetok does not reproduce, each saying so), the pieces
by kind, the byte pieces of a byte-fallback model, and the joinable pairs as the raw text
spells them.
"""

from __future__ import annotations

from .model_proto import ModelProtoError, ModelType, PieceType, SentencePieceModel

__all__ = ["SPACE", "SentencePieceModelError", "check_supported", "piece_tables",
           "byte_piece_ids", "raw_pairs"]

#: SentencePiece's whitespace symbol
SPACE = "\u2581"


class SentencePieceModelError(ModelProtoError):
    """The ``.model`` file declares something this implementation does not reproduce."""


def check_supported(model: SentencePieceModel, name: str) -> None:
    """Raise :class:`SentencePieceModelError` for what this implementation does not reproduce.

    Runtime complexity: ``O(V)`` for ``V`` pieces.
    """
    ts, ns = model.trainer_spec, model.normalizer_spec
    if ts.model_type != ModelType.BPE:
        kind = {1: "unigram", 3: "word", 4: "char"}.get(ts.model_type, str(ts.model_type))
        raise SentencePieceModelError(
            f"{name}: this is a {kind} SentencePiece model; livetok implements BPE models "
            "only (model_type: BPE), such as Llama's or Mistral's tokenizer.model"
        )
    if ns.precompiled_charsmap:
        raise SentencePieceModelError(
            f"{name}: the model's normalizer {ns.name!r} rewrites text (precompiled "
            "charsmap); livetok supports the identity normalizer only (Llama/Mistral)"
        )
    if ns.remove_extra_whitespaces:
        raise SentencePieceModelError(
            f"{name}: remove_extra_whitespaces=true is not supported (it makes a piece's "
            "tokens depend on the end of the text); Llama/Mistral models set it false"
        )
    if ts.treat_whitespace_as_suffix:
        raise SentencePieceModelError(
            f"{name}: treat_whitespace_as_suffix=true is not supported"
        )
    for p, t in zip(model.pieces, model.types):
        if t == PieceType.USER_DEFINED and (" " in p or SPACE in p):
            raise SentencePieceModelError(
                f"{name}: user-defined piece {p!r} holds whitespace; SentencePiece matches "
                "user-defined pieces on both the raw and the normalized text, which differ "
                "there, and livetok does not reproduce that (Mistral's have none)"
            )


def piece_tables(model: SentencePieceModel, name: str) -> tuple[dict[str, int], dict[str, int], int]:
    """``(pieces the BPE may form, reserved pieces, unk id)``: the pieces by kind, checked.

    Runtime complexity: ``O(V)``.
    """
    piece_ids: dict[str, int] = {}
    reserved: dict[str, int] = {}
    unk_id = -1
    for i, (p, t) in enumerate(zip(model.pieces, model.types)):
        if not p:
            raise SentencePieceModelError(f"{name}: piece {i} is empty")
        formable = t in (PieceType.NORMAL, PieceType.USER_DEFINED, PieceType.UNUSED)
        target = piece_ids if formable else reserved
        if p in target:
            raise SentencePieceModelError(f"{name}: piece {p!r} occurs twice")
        target[p] = i
        if t == PieceType.UNKNOWN:
            unk_id = i
    if unk_id < 0:
        raise SentencePieceModelError(f"{name}: the model has no unknown piece (<unk>)")
    return piece_ids, reserved, unk_id


def byte_piece_ids(reserved: dict[str, int], types: list[int], name: str) -> list[int]:
    """The ids of the 256 byte pieces ``<0x00>`` ... ``<0xFF>`` of a byte-fallback model.

    Runtime complexity: ``O(1)`` (256 look-ups).
    """
    out = []
    for b in range(256):
        bid = reserved.get(f"<0x{b:02X}>")
        if bid is None or types[bid] != PieceType.BYTE:
            raise SentencePieceModelError(
                f"{name}: byte_fallback is set but byte piece <0x{b:02X}> is missing"
            )
        out.append(bid)
    return out


def raw_pairs(pairs: set[str]) -> frozenset[str]:
    """The joinable pairs as the raw text spells them when a space normalizes to ``▁``.

    >>> sorted(raw_pairs({"\u2581a"}))
    [' a', '\u2581a']

    Runtime complexity: ``O(len(pairs))``.
    """
    raw = set(pairs)
    for pair in pairs:
        if SPACE in pair:
            first, second = pair[0], pair[1]
            for x in {first, " "} if first == SPACE else {first}:
                for y in {second, " "} if second == SPACE else {second}:
                    raw.add(x + y)
    return frozenset(raw)
