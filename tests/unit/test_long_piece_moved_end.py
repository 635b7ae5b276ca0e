"""An edit inside a long piece that moves where the piece ends far from the edit (issue 35,
the byte-level CJK outlier): Algorithm 1 still glues near the edit, at an old token boundary,
instead of re-encoding the rest of the piece.

Under ``o200k_base`` a line of CJK letters (``Lo``, in both of the pattern's cased runs) with
an upper-case letter in it is one piece; a lower-case letter typed before that upper-case one
ends the piece there (``[Lu Lt Lm Lo M]*[Ll Lm Lo M]+`` cannot take the upper-case letter after
a lower-case one). The new piece's end was no old piece end, so its old tokens were not
offered to Algorithm 1 and the whole tail of the piece was encoded (330-528 ms per edit at
100,000 characters). Counted here as work (bytes encoded), not time."""

from __future__ import annotations

from typing import Any

import pytest

from livetok.incremental import Document, get_encoding

CJK = "日本語の文章を書きます中国语言文字한국어"  # letters only (Lo): one piece


def _encoded_bytes(monkeypatch: pytest.MonkeyPatch, enc: Any) -> list[int]:
    sizes: list[int] = []
    real_bytes, real_piece = enc.encode_bytes_piece, enc.encode_piece

    def bytes_piece(data: bytes) -> Any:
        sizes.append(len(data))
        return real_bytes(data)

    def piece(text: str, *args: Any, **kwargs: Any) -> Any:
        sizes.append(len(text.encode()))
        return real_piece(text, *args, **kwargs)

    monkeypatch.setattr(enc, "encode_bytes_piece", bytes_piece)
    monkeypatch.setattr(enc, "encode_piece", piece)
    return sizes


@pytest.mark.parametrize("name", ["o200k_base", "cl100k_base"])
def test_lowercase_before_uppercase_in_cjk_glues_near_the_edit(
        monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    tiktoken = pytest.importorskip("tiktoken")
    enc = get_encoding(name)
    line = (CJK * 400)[:6_000]
    text = "Some prose.\n" + line[:4_000] + "Y" + line[4_000:] + "\nMore prose.\n"
    doc = Document(text, encoding=enc)
    sizes = _encoded_bytes(monkeypatch, enc)
    at = len("Some prose.\n") + 500
    doc.edit(at, at, "t")  # the piece now ends before "Y", 3,500 letters (10 KB) away
    text = text[:at] + "t" + text[at:]
    ref = tiktoken.Encoding(f"ref-{name}", pat_str=enc.pat_str,
                            mergeable_ranks=enc.mergeable_ranks, special_tokens={})
    assert doc.token_ids() == ref.encode_ordinary(text)
    assert sum(sizes) < 2_000, sizes  # windows near the edit, not the piece's 10 KB tail
    doc.edit(at, at + 1, "")  # and back: the piece runs through "Y" again
    assert doc.token_ids() == ref.encode_ordinary(text[:at] + text[at + 1:])


def test_a_token_glued_at_inside_an_old_piece_starts_the_new_one() -> None:
    """The old token Algorithm 1 glues at (clean, inside an old piece) starts the new piece:
    it is kept with the piece-start flag, so the structure equals a full build's (before, its
    ids were right and its flag was not: ``_check`` failed)."""
    enc = get_encoding("o200k_base")
    text = "中文字符测试" * 12
    doc = Document(text, enc)
    for at, ins in ((1, "ÀÉÎ" * 28), (49, " ")):
        doc.edit(at, at, ins)
        text = text[:at] + ins + text[at:]
        doc._check()
    assert doc.token_ids() == enc.encode(text)


@pytest.mark.parametrize("name", ["o200k_base", "cl100k_base"])
def test_random_edits_of_cased_runs_keep_the_structure(name: str) -> None:
    """Seeded edits mixing CJK, upper- and lower-case runs (where edits move piece ends far
    from themselves): after each, the document equals a full build, flags included."""
    import random

    enc = get_encoding(name)
    rng = random.Random(1)
    chars = ["中", "文", "字", "À", "É", "Î", "a", "b", "Q", " ", "1", "\n", "é", "ß"]
    for _ in range(120):
        text = "".join(rng.choice(["中文字符测试", "ÀÉÎ", "abc", "XYZ", " "])
                       for _ in range(rng.randint(5, 60)))
        doc = Document(text, enc)
        for _ in range(30):
            a = rng.randint(0, len(text))
            b = min(len(text), a + rng.choice([0, 0, 0, 1, 2, 5, 40]))
            ins = ("".join(rng.choice(chars) for _ in range(rng.choice([0, 1, 1, 1, 2, 30])))
                   if rng.random() < 0.9 else "ÀÉÎ" * rng.randint(1, 30))
            doc.edit(a, b, ins)
            text = text[:a] + ins + text[b:]
            doc._check()
