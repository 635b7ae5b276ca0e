"""The tight horizon and the lazy split of ``TokenizerJsonEncoding`` (``incremental/hf/
encoding.py``, module docstring, *Horizon*) against the piece machinery they shortcut.

* ``split`` under the tight rule gives the pieces of ``_scan`` (the general path);
* every horizon is *sound* (changing the text at or after it leaves the piece at its start
  alone, the piece found by the general path) and *dominated* (``h_j <= max(h_i, s_i + 4)``);
* the one-character shortcut of ``SplitHorizon.eot_reach`` equals the readers' bound.

Toy files cover what the real ones do not: a token that is a prefix of a longer one (the
trie's walk reads past the match), token characters inside words, normalized tokens beside
raw ones, NFC (its transparent shortcut) and Lowercase (the general path without the token
terms). A deliberately loose-token horizon (no token reads) fails the checker.
"""

from __future__ import annotations

import json
import random
from typing import Any, Callable

import pytest

from livetok.incremental.hf.pretokenizers import GPT2_PATTERN
from livetok.incremental.regex import SplitHorizon, derive

from livetok.incremental.hf.bytelevel_file import ByteLevelFile
from livetok.incremental.hf.bytelevel_nfc import NfcByteLevelFile

from .._hf_encodings import encoding, general_encoding, hf_ids, params
from ..conftest import EXAMPLES, SHARED

tokenizers = pytest.importorskip("tokenizers")

#: text atoms: words, spaces (the look-ahead pattern), digits, token pieces
ATOMS = ["a", "ab", "abc", "the", "\u2581", "\u2581\u2581", "bc", "the", "x", "Z", " ", "  ", "   ", "\t", "\n", "\n\n", "1", "42",
         "'s", "<", ">", "|", "<a", "<a>", "<a>b", "<a>bcd", "<a>bcdefg", "<|x|>", "<|x",
         "|>", "é", "e\u0301", "\u0301", "中文", "😀", "_", "zz", "Ω", "A", "<|end|>"]
#: characters probed at and after a horizon
PROBES = ["a", " ", "\n", "<", ">", "|", "b", "x", "1", "\u0301", "'", "<a>", "<|x|>", "zz", "é"]

Horizon = Callable[[str, int, int], int]


def _text(rng: random.Random, k: int = 16) -> str:
    return "".join(rng.choice(ATOMS) for _ in range(rng.randint(0, k)))


def _general_pieces(enc: Any, text: str, pos: int = 0) -> list[tuple[int, int]]:
    """The pieces of ``text[pos:]`` by the general path (``_scan``)."""
    out = []
    a = pos
    for e, _ in enc._scan(text[pos:], False):
        out.append((a, pos + e))
        a = pos + e
    return out


def check(enc: Any, text: str, rng: random.Random, horizon: Horizon | None = None,
          tries: int = 3, general: Any = None) -> None:
    """Split equality, horizon soundness and dominance on ``text`` (``general``: the encoding
    whose ``_scan`` is the reference, default ``enc``)."""
    hor = horizon or enc.horizon
    ref = enc if general is None else general
    pieces = _general_pieces(ref, text)
    assert list(enc.split(text)) == pieces, text
    hs = _limits_and_dominance(hor, text, pieces, rng)
    for (s, e), h in zip(pieces, hs):
        if h > len(text):
            continue
        for t2 in _variants(text, h, rng, tries):
            got = _general_pieces(ref, t2, s)[0]
            assert got == (s, e), ("soundness", text, s, e, h, t2, got)


def _limits_and_dominance(hor: Horizon, text: str, pieces: list[tuple[int, int]],
                          rng: random.Random) -> list[int]:
    """The horizon of each piece (past the text's end: one value, ``len(text) + 1``), checked
    to stay past a nearer limit it passes, to pass its own start, and to be dominated
    (``h_j <= max(h_i, s_i + 4)`` for ``j < i``). A horizon past the text's end only says
    "reads its end"; a limit past the end asks for the bound itself."""
    hs = [min(hor(text, s, len(text) + 2), len(text) + 1) for s, _ in pieces]
    for k, (s, _) in enumerate(pieces):
        lim = rng.randint(s + 1, len(text) + 1)
        if hs[k] > lim:
            assert hor(text, s, lim) > lim, ("limit", text, s, hs[k], lim)
        assert hs[k] > s, (text, s, hs[k])
        for i in range(k + 1, len(pieces)):
            si = pieces[i][0]
            assert hs[k] <= max(hs[i], si + 4), ("dominance", text, s, hs[k], si, hs[i])
    return hs


def _variants(text: str, h: int, rng: random.Random, tries: int) -> list[str]:
    """Texts equal to ``text`` before ``h`` and changed at or after it (the soundness probes
    of a horizon ``h``): a new tail, an insertion at ``h``, a deletion there, and an insertion
    further on; ``tries`` rounds."""
    out = []
    for _ in range(tries):
        tail = "".join(rng.choice(PROBES) for _ in range(rng.randint(0, 4)))
        j = rng.randrange(h, len(text) + 1)
        out += [text[:h] + tail, text[:h] + tail + text[h:], text[:h] + text[h + 1:],
                text[:j] + rng.choice(PROBES) + text[j:]]
    return out


def _toy(added: list[dict[str, Any]], normalizer: Any = None, local: bool = False) -> Any:
    """A small BPE file with the GPT-2 split (``local``: Gemma's ``Split(" ")`` and merges,
    so that the model's cuts make pieces)."""
    from livetok.incremental.hf.reader import tokenizer_from_dict

    vocab = {c: i for i, c in enumerate(
        "abcdefghijklmnopqrstuvwxyz <>|_ABCDEFGHIJKLMNOPQRSTUVWXYZ\t\n'0123456789\u2581")}
    merges = [("a", "b"), ("ab", "c"), ("\u2581", "t"), ("\u2581t", "h"), ("b", "c"),
              ("\n", "\n")] if local else []
    for a, b in merges:
        vocab.setdefault(a + b, len(vocab))
    tok = tokenizers.Tokenizer(tokenizers.models.BPE(vocab=vocab, merges=merges,
                                                     unk_token="_"))
    tok.pre_tokenizer = (tokenizers.pre_tokenizers.Split(" ", "merged_with_previous") if local
                         else tokenizers.pre_tokenizers.Split(
                             tokenizers.Regex(GPT2_PATTERN), "isolated"))
    if normalizer is not None:
        tok.normalizer = normalizer
    tok.add_tokens([tokenizers.AddedToken(**a) for a in added])
    enc: Any = tokenizer_from_dict(json.loads(tok.to_str()), name="toy", source="toy.json")
    assert enc._tight
    return enc


_RAW = [dict(content=c, normalized=False) for c in ("<a>", "<a>bcdefgh", "<|x|>", "zz",
                                                       "<|end|>")]
TOYS = {
    "raw": lambda: _toy(_RAW),
    "raw+normalized": lambda: _toy(_RAW[:3] + [dict(content="[n]", normalized=True)]),
    "nfc": lambda: _toy(_RAW, tokenizers.normalizers.NFC()),
    "lowercase": lambda: _toy(_RAW, tokenizers.normalizers.Lowercase()),
    "gemma-like": lambda: _toy(_RAW + [dict(content="\n\n", normalized=False),
                                       dict(content="\u2581\u2581", normalized=False)],
                               tokenizers.normalizers.Replace(" ", "\u2581"), local=True),
}


@pytest.mark.parametrize("name", sorted(TOYS))
def test_toy_tight_horizon_and_split(name: str) -> None:
    enc = TOYS[name]()
    rng = random.Random(17)
    for _ in range(max(20, EXAMPLES * 2)):
        check(enc, _text(rng), rng)


@pytest.mark.parametrize("name", params(["llama3", "qwen3", "deepseek_v3", "gemma3", "gpt4o",
                                         "gptoss", "mistral_nemo"]))
def test_real_tight_horizon_and_split(name: str) -> None:
    """The tight rule's split and horizon, and the byte-level family's
    (``hf/bytelevel_file.py``: Llama 3, GPT-4o, gpt-oss, Mistral Nemo), against the general
    path of the same file."""
    enc = encoding(name)
    general = general_encoding(name)
    assert general._tight
    assert (type(enc) is ByteLevelFile) == (name in BYTE_LEVEL_FAMILY), type(enc)
    rng = random.Random(5)
    extra = [t.content for t in general.added[:20]] + ["<|", "<｜", "|>", "<|end", "'LL", "ſ"]
    for _ in range(max(10, EXAMPLES)):
        parts = [rng.choice(ATOMS + extra) for _ in range(rng.randint(0, 14))]
        if type(enc) in (ByteLevelFile, NfcByteLevelFile):
            check_pre_tokens(enc, name, "".join(parts), rng)
        else:
            check(enc, "".join(parts), rng, tries=2)


def check_pre_tokens(enc: Any, name: str, text: str, rng: random.Random) -> None:
    """:func:`check` for an encoding whose pieces are the pre-tokens themselves (the
    byte-level family: regex matches and added tokens), where the general path's pieces are
    unions of them (its cuts must also restart a fragment): the ids of the pieces are
    HuggingFace's, the split restarts at every piece, and every horizon is sound (for the
    text and variants changed at or after it, the piece at its start and the ids are the
    same) and dominated."""
    pieces = list(enc.split(text))
    assert [p for p in pieces if p[0] < p[1]] == pieces and (
        not pieces or (pieces[0][0] == 0 and pieces[-1][1] == len(text))), text
    assert all(a[1] == b[0] for a, b in zip(pieces, pieces[1:])), text
    assert [i for s, e in pieces for i in enc.encode_piece(text[s:e])] == hf_ids(name, text)
    for k, (s, _) in enumerate(pieces):
        assert list(enc.split(text, s)) == pieces[k:], ("restart", text, s)
    hs = _limits_and_dominance(enc.horizon, text, pieces, rng)
    for (s, e), h in zip(pieces, hs):
        if h > len(text):
            continue
        for t2 in _variants(text, h, rng, 2):
            full = list(enc.split(t2))
            assert (s, e) in full, ("soundness", text, s, e, h, t2)
            assert [i for a, b in full for i in enc.encode_piece(t2[a:b])] == hf_ids(name, t2)


#: the real files that load as the byte-level family
BYTE_LEVEL_FAMILY = {"llama3", "gpt4o", "gptoss", "mistral_nemo", "deepseek_v3"}


def test_a_horizon_without_the_token_reads_is_caught() -> None:
    """The pre-tokenizer's horizon alone (what the tight rule adds dropped) is unsound: a
    token completed right after it ends the segment and changes the piece."""
    enc = TOYS["raw"]()

    def loose(text: str, start: int, limit: int) -> int:
        m = enc._tok.token.match(text, start)
        if m:
            return int(m.end())
        return int(enc.pre_tokenizer.horizon(text, start, limit))

    rng = random.Random(3)
    caught = 0
    for _ in range(300):
        try:
            check(enc, _text(rng), rng, horizon=loose)
        except AssertionError:
            caught += 1
    assert caught > 0


def test_eot_reach_shortcut_equals_the_readers() -> None:
    """The one-character shortcuts of ``eot_reach`` and ``reach`` give the readers' bound."""
    data = SHARED / "data" / "splitRegexPatterns.json"
    pats = [p["pattern"] for p in json.loads(data.read_text("utf-8"))["patterns"]] \
        if data.is_file() else []
    pats.append(GPT2_PATTERN)
    rng = random.Random(9)
    alphabet = " \t\n\r'aZ1é中😀.,-_\u0301\u00a0" + "\u3000"
    for pat in pats:
        try:
            d = derive(pat)
        except ValueError:
            continue
        if d.fallback is not None:
            continue
        h = SplitHorizon(d)
        for _ in range(30):
            s = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 12)))
            end = rng.randint(0, len(s))
            for q in range(len(s) + 1):
                assert h.eot_reach(s, q, end) == h.eot_reach_slow(s, q, end), (pat, s, q, end)
                assert h.reach(s, q, end) == h.reach_slow(s, q, end), (pat, s, q, end)


@pytest.mark.parametrize("behavior, invert", [("isolated", False), ("removed", True),
                                              ("removed", False), ("isolated", True)])
def test_lazy_fast_analysis_equals_the_span_list(behavior: str, invert: bool) -> None:
    """``PreTokenizer._fast_analyze_lazy`` gives the cuts of the list-based analysis."""
    from livetok.incremental.hf.pretokenizers import build_pre_tokenizer

    rng = random.Random(11)
    pats = [GPT2_PATTERN, r"\s+(?!\S)|\s+|\p{L}+|\p{N}{1,3}|[^\s\p{L}\p{N}]+", r"\p{L}+|\s+$"]
    for pat in pats:
        pre = build_pre_tokenizer({"type": "Split", "pattern": {"Regex": pat},
                                   "behavior": behavior, "invert": invert}, source="t")
        split = pre._fast
        assert split is not None
        for _ in range(60):
            s = _text(rng, 10)
            lo = rng.randint(0, len(s))
            hi = rng.randint(lo, len(s))
            want = rng.choice([1, 2, 1 << 62])
            lazy = pre._fast_analyze_lazy(s, lo, hi, want)
            # the list-based analysis (these behaviours keep every span's end)
            spans = split.spans_in(s, lo, hi)
            assert {e for _, e, _ in split.group(spans)} == {e for _, e, _ in spans}
            h = split.horizon if split.horizon is not None and split.horizon.has_eot else None
            want_list: list[tuple[int, int]] = []
            for a, b, is_match in spans:
                real = is_match != split.invert
                inner = (range(a + 1, b + 1) if not real and behavior == "removed" and invert
                         else range(b, b + 1))
                for c in inner:
                    if c <= lo or c > hi:
                        continue
                    if h is not None and c < hi and h.eot_reach_slow(
                            s, a if real else c - 1, hi) > c:
                        continue
                    want_list.append((c, c - 1 if real else c))
            assert lazy == want_list[:want], (pat, s, lo, hi)


@pytest.mark.parametrize("name", sorted(TOYS))
def test_plain_piece_run_equals_the_pipeline(name: str) -> None:
    enc = TOYS[name]()
    rng = random.Random(23)
    for _ in range(max(40, EXAMPLES * 3)):
        text = _text(rng)
        for a, b in enc.split(text):
            piece = text[a:b]
            fast = enc._run_plain_piece(piece)
            if fast is not None:
                ids, cps = enc._run(piece, seg_start=False, text_start=False, want=True)
                assert fast == (ids, cps), piece


@pytest.mark.parametrize("name", ["llama3", "qwen3"])
def test_plain_piece_run_equals_the_pipeline_real(name: str) -> None:
    enc = general_encoding(name)
    rng = random.Random(29)
    for _ in range(max(20, EXAMPLES)):
        text = "".join(rng.choice(ATOMS) for _ in range(rng.randint(0, 14)))
        for a, b in enc.split(text):
            piece = text[a:b]
            fast = enc._run_plain_piece(piece)
            for at in (False, True):
                ids, cps = enc._run(piece, seg_start=at, text_start=at, want=True)
                assert fast is None or fast == (ids, cps), piece


def test_plain_shortcut_equals_the_general_analysis() -> None:
    """A splits-only sequence (DeepSeek's shape): the lazy analysis by the earlier steps'
    match regions (``PreTokenizer._plain_shortcut``) gives the general analysis's cuts, each
    decided at the same position or, at the end of an earlier step's match, one later (the
    sound side); where the earlier steps find nothing, exactly the general one."""
    from livetok.incremental.hf.pretokenizers import build_pre_tokenizer

    main = r"\s+(?!\S)|\s+|\p{L}+|[^\s\p{L}\p{N}]+"
    seqs = [[r"\p{N}{1,3}", r"[一-龥]+", main], [r"\p{N}{1,3}", GPT2_PATTERN]]
    rng = random.Random(31)
    for pats in seqs:
        for behavior, invert in (("Isolated", False), ("Removed", True)):
            steps = [{"type": "Split", "pattern": {"Regex": p}, "behavior": "Isolated",
                      "invert": False} for p in pats[:-1]]
            steps.append({"type": "Split", "pattern": {"Regex": pats[-1]},
                          "behavior": behavior, "invert": invert})
            pre = build_pre_tokenizer({"type": "Sequence", "pretokenizers": steps}, source="t")
            used = crossed = 0
            for _ in range(max(150, EXAMPLES * 4)):
                s = _text(rng, 10)
                for _ in range(rng.randint(0, 2)):  # digits and CJK: the earlier steps' matches
                    k = rng.randint(0, len(s))
                    s = s[:k] + rng.choice(["7", "1234", "中", "九九"]) + s[k:]
                lo = rng.randint(0, len(s))
                hi = rng.randint(lo, len(s))
                sc = pre._plain_shortcut(s, lo, hi)
                if sc is None:
                    continue
                _, ctx = pre._run_plain(s, lo, hi, want_bad=True)
                assert ctx.bad is not None and ctx.after_gap is not None
                general = [(c, c if ctx.after_gap[c - lo] else c - 1)
                           for c in range(lo + 1, hi + 1) if not ctx.bad[c - lo]]
                got = list(sc)
                assert [c for c, _ in got] == [c for c, _ in general], (pats, s, lo, hi)
                assert all(g <= at <= c for (c, at), (_, g) in zip(got, general)), (pats, s)
                quiet = all(st.regex.search(s, lo, hi) is None for st in pre._solo_before)
                if quiet:
                    assert got == general, (pats, s, lo, hi)
                used += 1
                crossed += not quiet
            assert used > 100 and crossed > 20, (used, crossed)


def _solo_pre_tokenizers() -> list[tuple[str, Any]]:
    """Pre-tokenizers with a solo split (``PreTokenizer._solo``): toy ones over the Hub's
    patterns in each lazy behaviour, and the real files' (Llama 3, gpt-oss, Tekken)."""
    from livetok.incremental.hf.pretokenizers import build_pre_tokenizer

    pats = [GPT2_PATTERN, r"\s+(?!\S)|\s+|\p{L}+|\p{N}{1,3}|[^\s\p{L}\p{N}]+", r"\p{L}+|\s+$"]
    data = SHARED / "data" / "splitRegexPatterns.json"
    if data.is_file():
        pats += [p["pattern"] for p in json.loads(data.read_text("utf-8"))["patterns"]][::7]
    out = []
    for pat in pats:
        for behavior, invert in (("Isolated", False), ("Removed", True), ("Removed", False)):
            try:
                pre = build_pre_tokenizer({"type": "Split", "pattern": {"Regex": pat},
                                           "behavior": behavior, "invert": invert}, source="t")
            except ValueError:
                continue
            if pre._solo is not None:
                out.append((f"{pat[:30]}/{behavior}/{invert}", pre))
        # a splits-only sequence (DeepSeek's shape): digits, then the pattern
        seq = build_pre_tokenizer({"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": r"\p{N}{1,3}"}, "behavior": "Isolated",
             "invert": False},
            {"type": "Split", "pattern": {"Regex": pat}, "behavior": "Isolated",
             "invert": False}]}, source="t")
        if seq._solo is not None:
            out.append((f"digits+{pat[:30]}", seq))
    for name in ("llama3", "gptoss", "mistral_nemo", "deepseek_v3"):
        try:
            enc = general_encoding(name)
        except pytest.skip.Exception:
            continue
        assert enc.pre_tokenizer._solo is not None, name
        out.append((name, enc.pre_tokenizer))
    return out


def test_solo_split_horizon_and_one_pretoken_equal_the_general_way() -> None:
    """``PreTokenizer.horizon``'s inline cases give the window loop's value at every start
    and limit, and ``one_pretoken`` is True only for a text ``pre_tokenize`` leaves whole."""
    rng = random.Random(37)
    pres = _solo_pre_tokenizers()
    assert len(pres) >= 6
    inline = calls = looped = 0
    for label, pre in pres:
        loop = pre._horizon_loop
        for _ in range(max(12, EXAMPLES // 4)):
            s = _text(rng, 24) + rng.choice(["", " " * rng.randint(1, 60), "x" * 50])
            for start in range(len(s) + 1):
                limit = rng.randint(start, len(s) + 2)
                box = [0]

                def counted(*args: Any, box: list[int] = box) -> int:
                    box[0] += 1
                    return loop(*args)  # type: ignore[no-any-return]

                pre._horizon_loop = counted
                try:
                    got = pre.horizon(s, start, limit)
                finally:
                    del pre._horizon_loop
                want = loop(s, start, limit, True, False)
                assert got == want, (label, s, start, limit)
                calls += 1
                looped += box[0]
            for a in range(0, len(s), 3):
                piece = s[a:a + rng.randint(1, 8)]
                if pre.one_pretoken(piece):
                    inline += 1
                    toks = pre.pre_tokenize(piece, first=False, text_start=False)
                    assert toks == [(piece, (0, len(piece)))], (label, piece)
    # both ways were taken: the inline cases are compared, not assumed
    assert inline > 0 and 0 < looped < calls, (inline, looped, calls)
