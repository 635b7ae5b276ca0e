"""SentencePiece BPE: our encoding against ``sentencepiece.SentencePieceProcessor``.

The shipped model is Mistral 7B v0.1's ``tokenizer.model.v1`` from ``mistral-common``
(``pip install --no-deps mistral-common``); tests needing it skip with that instruction when it
is absent. Small models with other settings (no byte fallback, no dummy prefix, UNUSED pieces)
are trained here in a fraction of a second by ``sentencepiece`` itself.
"""

from __future__ import annotations

import doctest
import functools
import io
import struct

import pytest
from hypothesis import given, note
from hypothesis import strategies as st

spm = pytest.importorskip("sentencepiece")

from livetok.incremental.samples import corpora as corpus  # noqa: E402
from livetok.incremental.sentencepiece import encoding as sentencepiece_bpe  # noqa: E402
from livetok.incremental.sentencepiece import model_proto  # noqa: E402
from livetok.incremental.piece_encoding import PieceEncoding  # noqa: E402
from livetok.incremental.vocab.find import find_mistral_v1  # noqa: E402
from livetok.incremental.sentencepiece._reference import encode_reference, sp_bpe_naive  # noqa: E402
from livetok.incremental.sentencepiece.bpe import sp_bpe  # noqa: E402
from livetok.incremental.sentencepiece.encoding import (  # noqa: E402
    SentencePieceEncoding,
    SentencePieceModelError,
    load_mistral_v1,
    load_sentencepiece,
)
from livetok.incremental.sentencepiece.model_proto import (  # noqa: E402
    ModelProtoError,
    PieceType,
    parse_model_proto,
)

MISTRAL_PATH = find_mistral_v1()
needs_mistral = pytest.mark.skipif(
    MISTRAL_PATH is None,
    reason="Mistral tokenizer.model.v1 missing: pip install --no-deps mistral-common",
)


@pytest.fixture(scope="module")
def mistral() -> SentencePieceEncoding:
    return load_mistral_v1()


@pytest.fixture(scope="module")
def mistral_sp():
    return spm.SentencePieceProcessor(model_file=str(MISTRAL_PATH))


# --- text strategies: what SentencePiece models find hard ------------------------------------

_CJK = st.text(
    st.characters(min_codepoint=0x4E00, max_codepoint=0x9FFF)
    | st.characters(min_codepoint=0x3040, max_codepoint=0x30FF)
    | st.characters(min_codepoint=0xAC00, max_codepoint=0xD7A3),
    min_size=1,
    max_size=40,
)
_EMOJI = st.text(st.characters(min_codepoint=0x1F300, max_codepoint=0x1FAFF), min_size=1, max_size=4)
_WORDS = st.sampled_from(
    ["the", "The", "hello", "world", "tokenizer", "ing", "un", "def", "return", "x",
     "café", "naïve", "Ünïcödé", "1234567", "3.14", "don't", "(a,b)", "->", "::", "▁", "<s>",
     "<unk>", "<0x41>", "\u200b", "\u00a0", "ﬁ", "\u0301e", "\r\n"]
)
_SPACES = st.sampled_from([" ", "  ", "   ", "    ", " " * 17, "\t", "\n", "\n\n", " \n ", "\t "])
_ANY = st.text(st.characters(blacklist_categories=("Cs",)), max_size=8)
sp_text = st.lists(st.one_of(_WORDS, _SPACES, _CJK, _EMOJI, _ANY), max_size=25).map("".join)


# --- model file reading ----------------------------------------------------------------------


@needs_mistral
def test_proto_reader_matches_sentencepiece(mistral_sp) -> None:
    model = model_proto.read_model_file(MISTRAL_PATH)
    n = mistral_sp.get_piece_size()
    assert len(model.pieces) == n == 32000
    assert model.pieces == [mistral_sp.id_to_piece(i) for i in range(n)]
    assert model.scores == [mistral_sp.get_score(i) for i in range(n)]
    for i, t in enumerate(model.types):
        assert (t == PieceType.BYTE) == mistral_sp.is_byte(i)
        assert (t == PieceType.CONTROL) == mistral_sp.is_control(i)
        assert (t == PieceType.UNKNOWN) == mistral_sp.is_unknown(i)
        assert (t == PieceType.UNUSED) == mistral_sp.is_unused(i)
    ts, ns = model.trainer_spec, model.normalizer_spec
    assert (ts.model_type, ts.byte_fallback, ts.split_digits) == (2, True, True)
    assert (ns.name, ns.add_dummy_prefix, ns.remove_extra_whitespaces) == ("identity", True, False)
    assert ts.unk_id == mistral_sp.unk_id() and ts.bos_id == mistral_sp.bos_id()


def test_proto_reader_rejects_garbage(tmp_path) -> None:
    with pytest.raises(ModelProtoError, match="not a SentencePiece .model"):
        parse_model_proto(b"")
    with pytest.raises(ModelProtoError):
        parse_model_proto(b"\x0a\xff")  # length runs past the end
    bad = tmp_path / "missing.model"
    with pytest.raises(ModelProtoError, match="cannot read"):
        load_sentencepiece(bad)


# --- Mistral against sentencepiece -----------------------------------------------------------


@needs_mistral
def test_protocol_and_vocab(mistral) -> None:
    assert isinstance(mistral, PieceEncoding)
    assert mistral.name == "mistral-7b-v0.1" and mistral.supports_glue
    mistral._check()


@needs_mistral
@pytest.mark.parametrize(
    "text",
    ["", " ", "  ", "Hello world", " leading", "trailing ", "a  b   c", "\t\ttab\n\nnl",
     "日本語のテキストです。中文测试", "emoji 😀🚀 x", "🦀🦀🦀", "1234567890", "x" * 300,
     "▁literal ▁", "\u200b\u00a0", "<s></s><unk>", "\ud800 lone surrogate"],
)
def test_examples_equal_sentencepiece(mistral, mistral_sp, text) -> None:
    # sentencepiece cannot take lone surrogates; we encode them as U+FFFD, as its normalizer
    # does for malformed UTF-8
    expected = mistral_sp.encode(text.replace("\ud800", "\ufffd"))
    assert mistral.encode(text) == expected
    assert encode_reference(mistral, text) == expected
    pieces = list(mistral.split(text))
    ids = [i for s, e in pieces for i in mistral.encode_piece(text[s:e], at_text_start=s == 0)]
    assert ids == expected


@needs_mistral
def test_real_text_300k_equals_sentencepiece(mistral, mistral_sp) -> None:
    text = corpus.real_text(300_000)
    assert len(text) > 250_000, "need the stdlib sources for real text"
    assert any("\u4e00" <= c <= "\u9fff" for c in text[:20000]) or not corpus.cjk_texts()
    assert mistral.encode(text) == mistral_sp.encode(text)
    # and piece by piece, as the document encodes it
    ids = []
    for s, e in mistral.split(text):
        ids.extend(mistral.encode_piece(text[s:e], at_text_start=s == 0))
    assert ids == mistral_sp.encode(text)


@pytest.mark.slow
@needs_mistral
def test_real_text_5mb_equals_sentencepiece(mistral, mistral_sp) -> None:
    text = corpus.real_text(5_200_000)
    assert len(text.encode("utf-8")) >= 5_000_000
    # line by line too: many texts start with the dummy prefix
    assert mistral.encode(text) == mistral_sp.encode(text)
    lines = text.splitlines()[:20000]
    assert [mistral.encode(t) for t in lines] == mistral_sp.encode(lines)


@needs_mistral
@given(sp_text)
def test_hypothesis_text_equals_sentencepiece(mistral, mistral_sp, text) -> None:
    expected = mistral_sp.encode(text)
    assert mistral.encode(text) == expected
    if len(text) < 200:
        assert encode_reference(mistral, text) == expected
    pieces = list(mistral.split(text))
    note(repr([text[s:e] for s, e in pieces]))
    # pieces tile the text
    assert [s for s, _ in pieces[1:]] == [e for _, e in pieces[:-1]]
    assert (pieces[0][0], pieces[-1][1]) == (0, len(text)) if text else pieces == []
    ids = []
    for s, e in pieces:
        piece_ids = mistral.encode_piece(text[s:e], at_text_start=s == 0)
        lens = mistral.token_cp_lens(text[s:e], piece_ids, at_text_start=s == 0)
        assert len(lens) == len(piece_ids) and all(x >= 0 for x in lens)
        assert sum(lens) == e - s
        ids.extend(piece_ids)
    assert ids == expected
    # decode inverts encode (no <unk> with byte fallback)
    assert mistral.decode(expected) == mistral_sp.decode(expected) == text


@needs_mistral
@given(sp_text, st.data())
def test_split_from_any_boundary_is_the_tail(mistral, text, data) -> None:
    pieces = list(mistral.split(text))
    if not pieces:
        return
    k = data.draw(st.integers(0, len(pieces) - 1))
    assert list(mistral.split(text, pieces[k][0])) == pieces[k:]


@needs_mistral
@given(sp_text, sp_text, st.data())
def test_horizon_is_sound(mistral, text, other, data) -> None:
    """The piece at ``s`` depends only on ``text[s:h]``: change everything past ``h``."""
    pieces = list(mistral.split(text))
    if not pieces:
        return
    s, e = pieces[data.draw(st.integers(0, len(pieces) - 1))]
    h = mistral.horizon(text, s, len(text) + 10)
    assert h > e or (h == e and e == len(text) + 1)
    if h <= len(text):
        changed = text[:h] + other
        assert next(mistral.split(changed, s)) == (s, e)
    # with a limit below the bound, the answer is at least the limit
    lim = data.draw(st.integers(s + 1, max(s + 1, h)))
    assert mistral.horizon(text, s, lim) >= min(lim, h)


@needs_mistral
def test_pieces_tile_the_text(mistral) -> None:
    """``pieces`` (as ``Encoding.pieces``): the spans of ``split``, tiling the text; the ids of
    the pieces concatenated are the text's; a non-str raises ``TypeError``."""
    for text in ("Hello,  world!\n\tx", "a\ud800 b", "  ", ""):
        spans = mistral.pieces(text)
        ends = [b for _, b in spans]
        assert [a for a, _ in spans] == [0, *ends[:-1]][: len(spans)]
        assert (ends[-1] if ends else 0) == len(text)
        ids = [i for a, b in spans for i in mistral.encode_piece(
            text[a:b].replace("\ud800", "\ufffd"), at_text_start=a == 0)]
        assert ids == mistral.encode(text)
    with pytest.raises(TypeError, match="str"):
        mistral.pieces(b"x")


@needs_mistral
def test_token_bytes_and_decode(mistral, mistral_sp) -> None:
    ids = mistral.encode(" hello  wörld 😀")
    assert b"".join(mistral.token_bytes(i) for i in ids) == b"  hello  w\xc3\xb6rld \xf0\x9f\x98\x80"
    assert mistral.token_bytes(mistral.bos_id) == b""
    assert mistral.decode(ids) == " hello  wörld 😀"
    with pytest.raises(ValueError, match="out of range"):
        mistral.token_bytes(10**6)


@needs_mistral
def test_ids_out_of_range_raise_index_error_as_sentencepiece(mistral, mistral_sp) -> None:
    """id_to_piece(-1) gave the last piece (a list index from the end) and decode's error was
    a ValueError; sentencepiece raises IndexError for both. Ours is both (PieceIdError)."""
    n = mistral.n_vocab
    assert [mistral.id_to_piece(i) for i in (0, n - 1)] == [
        mistral_sp.id_to_piece(i) for i in (0, n - 1)]
    for bad in (-1, -n, n, 10**6):
        with pytest.raises(IndexError):
            mistral_sp.id_to_piece(bad)
        with pytest.raises(IndexError, match=rf"token id {bad} out of range 0\.\.{n - 1}"):
            mistral.id_to_piece(bad)
        with pytest.raises(IndexError):
            mistral_sp.decode([5, bad])
        with pytest.raises(IndexError):
            mistral.decode([5, bad])
        with pytest.raises(ValueError, match="out of range"):  # what livetok raised before
            mistral.decode([bad])
    assert issubclass(sentencepiece_bpe.PieceIdError, (IndexError, ValueError))


@needs_mistral
def test_token_cp_lens_byte_fallback_and_dummy(mistral) -> None:
    # an unseen CJK character falls back to 3 byte tokens: the first holds the character
    rare = "\U00020000"  # CJK Extension B, not in the vocabulary
    ids = mistral.encode_piece(rare, at_text_start=True)
    assert ids[0] == mistral.piece_to_id("▁")
    assert mistral.token_cp_lens(rare, ids, at_text_start=True) == [0, 1, 0, 0, 0]
    with pytest.raises(ValueError, match="encode_piece"):
        mistral.token_cp_lens("abc", [1, 2, 3])


# --- BPE core against the naive reference (Definition 3 with score ties) -----------------------

_alpha = st.sampled_from("abc")


@given(
    st.lists(st.tuples(st.text(_alpha, min_size=2, max_size=4), st.integers(-3, 3)), max_size=12),
    st.text(_alpha, max_size=30),
)
def test_sp_bpe_matches_naive(rules, s) -> None:
    piece_ids = {"a": 0, "b": 1, "c": 2}
    neg = [0.0, 0.0, 0.0]
    for p, score in rules:
        if p not in piece_ids:
            piece_ids[p] = len(neg)
            neg.append(float(score))  # small range: many ties
    spans = sp_bpe(s, piece_ids, neg)
    assert [s[a:b] for a, b in spans] == sp_bpe_naive(s, piece_ids, neg)


# --- other model settings, trained on the spot -----------------------------------------------


@functools.lru_cache(maxsize=None)
def _train_lines() -> tuple[str, ...]:
    text = corpus.real_text(60_000)
    return tuple(ln for ln in text.splitlines() if ln.strip())


@functools.lru_cache(maxsize=None)
def _train_cached(items: tuple) -> bytes:
    return _train_uncached(**dict(items))


def _train(**kw) -> bytes:
    return _train_cached(tuple(sorted(kw.items())))


def _train_uncached(**kw) -> bytes:
    lines = _train_lines()
    f = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines), model_writer=f, model_type="bpe", vocab_size=600,
        normalization_rule_name="identity", remove_extra_whitespaces=False,
        character_coverage=0.98, minloglevel=2, **kw,
    )
    return f.getvalue()


_SETTINGS = {
    "unk-dummy": dict(byte_fallback=False, add_dummy_prefix=True),
    "bytes-nodummy": dict(byte_fallback=True, add_dummy_prefix=False),
    "unk-nodummy-digits": dict(
        byte_fallback=False, add_dummy_prefix=False, split_digits=True,
        allow_whitespace_only_pieces=True,
    ),
}


@pytest.fixture(scope="module", params=sorted(_SETTINGS))
def trained(request):
    data = _train(**_SETTINGS[request.param])
    return SentencePieceEncoding(parse_model_proto(data), name=request.param), spm.SentencePieceProcessor(model_proto=data)


@given(sp_text)
def test_trained_models_equal_sentencepiece(trained, text) -> None:
    enc, sp = trained
    expected = sp.encode(text)
    assert enc.encode(text) == expected
    ids = [i for s, e in enc.split(text) for i in enc.encode_piece(text[s:e], at_text_start=s == 0)]
    assert ids == expected
    if len(text) < 200:
        assert encode_reference(enc, text) == expected


def test_unknown_runs_fuse_into_one_unk(trained) -> None:
    enc, sp = trained
    text = "ζζζ ab ꙮꙮ"  # characters no small model has seen
    assert enc.encode(text) == sp.encode(text)
    if not enc.byte_fallback:
        assert enc.encode("ꙮꙮꙮ").count(enc.unk_id) == 1
        pieces = list(enc.split("ꙮꙮꙮ"))
        assert len(pieces) == 1, "a run of unknown characters must stay in one piece"


def _varint(v: int) -> bytes:
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def _mark_unused(data: bytes, keep: set[str]) -> bytes:
    """Rewrite a ModelProto so every NORMAL piece not in ``keep`` has type UNUSED (5)."""
    out = bytearray()
    for num, wt, val in model_proto._fields(data):
        key = _varint(num << 3 | wt)
        if num == 1 and wt == 2:
            piece, score, typ = model_proto._parse_piece(val)
            if typ == PieceType.NORMAL and len(piece) > 1 and piece not in keep:
                typ = PieceType.UNUSED
            raw = piece.encode("utf-8")
            body = (b"\x0a" + _varint(len(raw)) + raw + b"\x15" + struct.pack("<f", score)
                    + b"\x18" + _varint(typ))
            out += key + _varint(len(body)) + body
        elif wt == 2:
            out += key + _varint(len(val)) + val
        elif wt == 0:
            out += key + _varint(val)
        else:
            out += key + val
    return bytes(out)


def test_unused_pieces_are_resegmented() -> None:
    data = _train(byte_fallback=True, add_dummy_prefix=True)
    sp = spm.SentencePieceProcessor(model_proto=data)
    # pieces used by a small text stay; every other multi-character piece becomes UNUSED, so
    # the BPE still forms them but the output re-splits them into the pair that formed them
    keep_text = "the quick brown fox jumps over the lazy dog; def return import"
    keep = {sp.id_to_piece(i) for i in sp.encode(keep_text)}
    data = _mark_unused(data, keep)
    model = parse_model_proto(data)
    assert sum(t == PieceType.UNUSED for t in model.types) > 100
    sp = spm.SentencePieceProcessor(model_proto=data)
    enc = SentencePieceEncoding(model, name="unused")
    unused_ids = [i for i, t in enumerate(model.types) if t == PieceType.UNUSED]
    for text in ["the quick brown fox", "import returns", "theory of everything",
                 corpus.real_text(20000)]:
        got = enc.encode(text)
        assert got == sp.encode(text), text[:80]
        assert not set(got) & set(unused_ids)


def test_unsupported_models_explain_themselves() -> None:
    model = parse_model_proto(_train(byte_fallback=False, add_dummy_prefix=True))
    model.trainer_spec.model_type = 1
    with pytest.raises(SentencePieceModelError, match="BPE models only"):
        SentencePieceEncoding(model, name="uni")
    model.trainer_spec.model_type = 2
    model.normalizer_spec.precompiled_charsmap = b"\x00"
    with pytest.raises(SentencePieceModelError, match="identity normalizer"):
        SentencePieceEncoding(model, name="nfkc")
    model.normalizer_spec.precompiled_charsmap = b""
    model.normalizer_spec.remove_extra_whitespaces = True
    with pytest.raises(SentencePieceModelError, match="remove_extra_whitespaces"):
        SentencePieceEncoding(model, name="rew")


def test_missing_mistral_says_how_to_install(monkeypatch) -> None:
    monkeypatch.setattr(sentencepiece_bpe, "find_mistral_v1", lambda: None)
    with pytest.raises(SentencePieceModelError, match="pip install --no-deps mistral-common"):
        sentencepiece_bpe.load_mistral_v1()


@needs_mistral
def test_registry_name() -> None:
    reg = pytest.importorskip("livetok.incremental.names.registry")
    enc = reg.get_encoding("mistral-7b-v0.1")
    assert enc.encode("Hello world") == [22557, 1526]


@pytest.mark.parametrize("module", [model_proto, sentencepiece_bpe, corpus])
def test_doctests(module) -> None:
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0


@needs_mistral
def test_algorithm_1_glue_on_long_spans_is_exact(mistral) -> None:
    from livetok.incremental.analysis import widening

    texts = [ln for ln in corpus.real_text(40_000).splitlines() if len(ln) >= 30]
    # measure_widening asserts every glued result equals a full re-encode
    hist = widening.measure_widening(mistral, texts, edits=150, seed=7, verify=True)
    assert sum(hist.values()) == 150
    assert hist[0] > 0
