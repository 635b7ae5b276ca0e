"""``incremental/regex/``: the 141 Split patterns found on the Hub split exactly like
HuggingFace ``tokenizers`` once translated, their derived horizons are sound, and the three
OpenAI patterns derive the readers written by hand before.

``docs/split-patterns.md`` is generated here: ``python tests/unit/test_regex.py --write``.
"""

from __future__ import annotations

import json
import random
import sys
from functools import lru_cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

if __name__ == "__main__":  # run as a script: the doc writer
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from livetok.incremental.bytelevel.pretokenize import _READERS, _SLACK, PATTERNS
from livetok.incremental.hf.pretokenizers import build_pre_tokenizer
from livetok.incremental.regex import PatternError, SplitHorizon, derive, translate

from tests._split_checks import (
    ALPHABET,
    TEXT,
    TEXT_RUNS,
    check_cuts,
    check_horizons,
    random_texts,
    real_snippets,
)
from tests.conftest import EXAMPLES, ROOT, SHARED

DATA = SHARED / "data" / "splitRegexPatterns.json"
DOC = Path(ROOT) / "docs" / "split-patterns.md"

#: the readers written by hand for tiktoken's patterns before they were derived
#: (docs/algorithms.md, section 2)
HAND_WRITTEN = {
    "r50k_base": [r" ?+\p{L}*+", r" ?+\p{N}*+", r" ?+[^\s\p{L}\p{N}]*+", r"\s*+"],
    "cl100k_base": [r"[^\r\n\p{L}\p{N}]?+\p{L}*+", r" ?+[^\s\p{L}\p{N}]*+[\r\n]*+", r"\s*+"],
    "o200k_base": [
        r"[^\r\n\p{L}\p{N}]?+[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*+",
        r" ?+[^\s\p{L}\p{N}]*+[\r\n/]*+",
        r"\s*+",
    ],
}

#: patterns whose translation still splits differently from HF (the data file marks some
#: ``knownDivergence``): none since the translation asks for full case folding under (?i), as
#: Oniguruma does (``edge-ci-full-fold``: "ss" matches "ß")
DIVERGENT: set[str] = set()


@lru_cache(maxsize=1)
def _data() -> dict[str, Any]:
    if not DATA.is_file():
        pytest.skip(f"{DATA} is missing (the shared test data folder)")
    data: dict[str, Any] = json.loads(DATA.read_text(encoding="utf-8"))
    return data


def _patterns() -> list[dict[str, Any]]:
    if not DATA.is_file():
        return []
    return list(json.loads(DATA.read_text(encoding="utf-8"))["patterns"])


PATTERN_IDS = [p["id"] for p in _patterns()]


def _pattern(pid: str) -> dict[str, Any]:
    return next(p for p in _data()["patterns"] if p["id"] == pid)


def _inputs(p: dict[str, Any]) -> list[str]:
    data = _data()
    extra = [t for case in data["additionalCases"] if case["patternId"] == p["id"]
             for t in case["inputs"]]
    return list(p.get("inputs") or data["defaults"]["inputs"]) + extra


def _hf(pattern: str, behavior: str = "isolated", invert: bool = False) -> Any:
    from tokenizers import Regex
    from tokenizers.pre_tokenizers import Split

    return Split(Regex(pattern), behavior, invert=invert)


def _mine(pattern: str, behavior: str = "Isolated", invert: bool = False) -> Any:
    spec = {"type": "Split", "pattern": {"Regex": pattern}, "behavior": behavior,
            "invert": invert}
    return build_pre_tokenizer(spec, source="splitRegexPatterns.json")


def _same(pattern: str, text: str, behavior: str = "Isolated", invert: bool = False) -> bool:
    hf_behavior = {"MergedWithPrevious": "merged_with_previous",
                   "MergedWithNext": "merged_with_next"}.get(behavior, behavior.lower())
    want = _hf(pattern, hf_behavior, invert).pre_tokenize_str(text)
    got = _mine(pattern, behavior, invert).pre_tokenize(text, first=True, text_start=True)
    return bool(want == got)


# --- the three OpenAI patterns ------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(PATTERNS))
def test_openai_patterns_derive_the_hand_written_readers(name: str) -> None:
    d = derive(PATTERNS[name], "fancy")
    assert d.fallback is None
    assert [r.pattern for r in d.readers] == HAND_WRITTEN[name] == _READERS[name]
    # what they read past the runs fits in the one slack pretokenize.py adds
    assert d.base <= _SLACK and max(r.slack for r in d.readers) <= _SLACK


def test_translation_of_tiktoken_syntax_keeps_its_meaning() -> None:
    """fancy-regex: ``$`` is the end of the text and ``{1,3}+`` possessive; Oniguruma: ``$``
    ends a line and ``{1,3}+`` repeats ``{1,3}``."""
    assert translate(r"\s++$", "fancy") == r"\s++\Z"
    assert translate(r"\p{N}{1,3}+", "fancy") == r"\p{N}{1,3}+"
    assert translate(r"\p{N}{1,3}+") == r"(?:\p{N}{1,3})+"
    assert translate(r"\s+$") == r"\s+(?m:$)"


# --- the 141 patterns of the Hub ----------------------------------------------------------


@pytest.mark.parametrize("pid", PATTERN_IDS)
def test_hub_patterns_split_like_hf(pid: str) -> None:
    p = _pattern(pid)
    texts = _inputs(p) + random_texts(40, seed=len(pid)) + real_snippets(10, seed=len(pid))
    bad = [t for t in texts if not _same(p["pattern"], t)]
    if pid in DIVERGENT:
        assert bad, f"{pid} no longer diverges: remove it from DIVERGENT"
    else:
        assert not bad, (p["pattern"], bad[:3])


#: the generated-text tests draw a pattern index; without the shared data there is none
needs_patterns = pytest.mark.skipif(not DATA.is_file(),
                                    reason=f"{DATA} is missing (the shared test data folder)")


@needs_patterns
@settings(max_examples=min(EXAMPLES, 60))
@given(k=st.integers(0, max(0, len(PATTERN_IDS) - 1)), text=st.one_of(TEXT, TEXT_RUNS),
       behavior=st.sampled_from(["Isolated", "Removed", "MergedWithPrevious", "MergedWithNext",
                                 "Contiguous"]),
       invert=st.booleans())
def test_hub_patterns_split_like_hf_on_generated_text(k: int, text: str, behavior: str,
                                                      invert: bool) -> None:
    p = _pattern(PATTERN_IDS[k])
    if p["id"] not in DIVERGENT:
        assert _same(p["pattern"], text, behavior, invert)


@pytest.mark.parametrize("pid", PATTERN_IDS)
def test_hub_patterns_horizons_are_sound(pid: str) -> None:
    """Cuts restart and a change at or after a piece's horizon leaves the piece alone."""
    p = _pattern(pid)
    pre = _mine(p["pattern"])
    rng = random.Random(pid)
    for t in random_texts(12, seed=len(pid) + 7) + real_snippets(3, 50, seed=len(pid)):
        check_cuts(pre, t)
        check_horizons(pre, t, rng, tries=1)


@needs_patterns
@settings(max_examples=min(EXAMPLES, 40))
@given(k=st.integers(0, max(0, len(PATTERN_IDS) - 1)), text=TEXT_RUNS, seed=st.integers(0, 99))
def test_hub_patterns_horizons_on_generated_text(k: int, text: str, seed: int) -> None:
    pre = _mine(_pattern(PATTERN_IDS[k])["pattern"])
    check_cuts(pre, text)
    check_horizons(pre, text, random.Random(seed), tries=2)


def test_the_reach_is_monotone() -> None:
    """``H`` never decreases along the text (the dominance property rests on it)."""
    rng = random.Random(3)
    for p in _data()["patterns"]:
        h = SplitHorizon(derive(p["pattern"]))
        if h.fallback is not None:
            continue
        for _ in range(5):
            t = "".join(rng.choice(ALPHABET) for _ in range(30))
            rs = [h.reach(t, q, len(t)) for q in range(len(t) + 1)]
            assert rs == sorted(rs), (p["id"], t)
            es = [h.eot_reach(t, q, len(t)) for q in range(len(t) + 1)]
            assert all(a <= max(b, q + 1) for q, (a, b) in enumerate(zip(es, es[1:]))), p["id"]


# --- character classes --------------------------------------------------------------------

_ATOMS = [r"\w", r"[\w]", r"\W", r"[^\w]", r"\s", r"\S", r"\d", r"\h", r"\H", r"\p{L}",
          r"\p{Word}", r"[[:alpha:]]", r"[[:digit:]]", r"[[:space:]]", r"\p{P}", r"[\W_]", r"."]


def _classify(atom: str, chars: str) -> tuple[set[str], set[str]]:
    import regex

    got = {c for c in chars if regex.fullmatch(translate(atom), c)}
    sp = _hf(atom, "removed").pre_tokenize_str(chars)
    kept = {c for piece, _ in sp for c in piece}
    return {c for c in chars if c not in kept}, got


@pytest.mark.parametrize("atom", _ATOMS)
def test_classes_match_oniguruma(atom: str) -> None:
    """Every class escape means what HF's Oniguruma means, on Latin-1, general punctuation,
    letterlike symbols and a sample of the rest (all code points: the slow test below)."""
    import unicodedata

    rng = random.Random(atom)
    cps = list(range(0x3000)) + [rng.randrange(0x3000, 0x30000) for _ in range(3000)]
    chars = "".join(chr(c) for c in cps if unicodedata.category(chr(c)) not in ("Cn", "Cs")
                    and chr(c) != "\u0295")
    want, got = _classify(atom, chars)
    assert want == got, (sorted(want - got)[:10], sorted(got - want)[:10])


@pytest.mark.slow
@pytest.mark.parametrize("atom", _ATOMS)
def test_classes_match_oniguruma_on_every_code_point(atom: str) -> None:
    import unicodedata

    chars = "".join(chr(c) for c in range(0x110000) if unicodedata.category(chr(c)) not in (
        "Cn", "Cs") and chr(c) != "\u0295")
    want, got = _classify(atom, chars)
    assert want == got, (sorted(want - got)[:10], sorted(got - want)[:10])


# --- docs/split-patterns.md ---------------------------------------------------------------

_HEAD = """# The Split patterns of the Hub: translation and horizons

Generated by `python tests/unit/test_regex.py --write` from the 141 patterns of
`../shared/data/splitRegexPatterns.json` (the HuggingFace tokenizers.js fixtures; a test keeps
this page current). Each pattern is translated from Oniguruma's syntax (what HF `tokenizers`
compiles) into the `regex` package's (`incremental/regex/`, `translate`), and
`tests/unit/test_regex.py` checks that it splits exactly like HF's
`Split(Regex(p), behavior, invert)` on the fixtures' inputs, generated text of every
character class and real text, with every behaviour and `invert`.

## How horizons are derived

The document re-splits only near an edit, so for a piece starting at `q` it must bound what
the matcher *read* to decide it (`docs/algorithms.md`, section 2). `derive` reads each
alternative as a sequence of steps from a position bound `R` (every position the matcher can
have reached is `<= R`):

| construct | step | why it is sound |
| --- | --- | --- |
| one-character set `C` repeated `{m,n}` (greedy, lazy or possessive; a literal is `{1,1}`) | run: `R := end of the C-run from R, at most n`; reads one more character | a C-run from any `q <= R` stops before `R` or continues as the run from `R` |
| bounded sub-pattern (literals, alternations of them, contractions, `\\p{N}{1,3}`, bounded look-ahead) | `R := R + width`; reads `reads - width` more | each character read is one a path of at most `width` characters would consume, or a look-ahead of known length |
| unbounded repetition of a complex sub-pattern (`(?:\\p{L}\\p{M}*)+`) | run of the union of every character it can consume, plus its look-ahead | every iteration consumes only those characters |
| alternation inside a sequence | one step list per option (up to 32, else the union run) | each path takes one option |
| look-ahead | read as if it consumed | a larger `R` is still a bound |

The steps after the last unbounded run become *slack*. The readers are the runs as possessive
patterns (`C{0,n}+`, `(?s:.{0,w}+)`), and
`H(q) = max(q + base, max over readers (end of reader at q + slack))`. Each reader's end is
a composition of non-decreasing maps of `q`, so `H` never decreases: the dominance property
the document relies on. Look-around, anchors and atomic choices are also marked
*end-of-text sensitive*: a piece ending at `c` stays the same when the text is cut at `c`
only if none of those reads reached `c` (`hf/pretokenizers.py` uses it to pick cuts).

For tiktoken's three patterns (fancy-regex syntax) this gives exactly the readers that
`bytelevel/pretokenize.py` had written by hand (a test compares them), and it now takes them
from here.

## From horizons to pre-tokenizer cuts (`incremental/hf/pretokenizers.py`)

A `Split` is not tiktoken's tiling: HF's `find_matches` yields the matches *and the gaps*
between them, then groups them by the behaviour (Removed, Isolated, MergedWithPrevious,
MergedWithNext, Contiguous; `invert` swaps which are kept). A position `c` is a *cut* when
pre-tokenizing `s[:c]` and `s[c:]` (a fragment: no prepend) gives the pre-tokens of `s`, and
each piece between two cuts pre-tokenized alone gives its part (the tests check both, and that
the tail of the cuts from any cut is the cuts from there). For one regex step `c` is kept when

- `c` is not strictly inside a match (a search restarted there finds another match), while
  inside a gap it may be (the search from `c` finds the same next match: matches read
  nothing left of their start, which is what the fallback excludes);
- no end-of-text-sensitive read of the attempts left of `c` reaches `c`: the part `s[:c]`
  ends at `c`, where `(?!\\S)` succeeds and `$` matches; a character that failed a class fails
  it as the end of the text does, so plain runs never block a cut;
- every behaviour's grouping then gives exactly the two halves of the piece holding `c` (a
  merge joins a match to a neighbour, and the first or last piece of a half has none there).

**Sequence.** Each step splits every piece the previous one left, so along the steps `c` is
first strictly inside a piece and, from some step on, a piece boundary. `c` is restartable
when every step up to the one that made it a boundary restarts at `c` as above (a character
split, Metaspace's replacement and ByteLevel without its regex always do), and no later step
*prepends* to the piece that starts at `c` (ByteLevel `add_prefix_space`, Metaspace `always`
prepend to every piece reaching them; the fragment `s[c:]` gets none) unless it already starts
with that character; finally `c` must not be strictly inside a kept pre-token. A cut strictly
inside a piece of an earlier step that a later step split is therefore allowed only when that
earlier step restarts there (inside a gap of a regex, anywhere in a character split), and the
tests compare both sides with HF for each type, each behaviour and `invert`, nested
sequences, and the real files' pipelines.

**Horizon of a cut-piece** ending at `c`: what makes `c` the next cut is decided by match
attempts left of `c` (reads below `H(c - 1)`), by `s[c]` (character splits, prepends), and
where `c - 1` lies in a gap of a regex step, by the attempt at `c` (`H(c)`): the horizon is
`max(c + 1, H(c - 1 or c))` over the regex steps, a non-decreasing function of `c`, hence
dominated by later pieces. A test replaces the horizon by `c + 1` and checks that the
soundness test then fails.

## What the fallback costs

A pattern that reads left of the piece start (a look-behind, `^`, `\\b` or `\\A` before any
character, `\\G`), uses a back-reference, or can match the empty string gets no readers. It
still splits exactly (its translation is tested like the others), but the pre-tokenizer makes
no cut inside the text it splits: the whole normalized segment (the text between two added
tokens) is one piece whose horizon is the end of the text, so every edit re-splits and
re-encodes that segment (`O(segment)` per keystroke instead of a few pieces). A fallback step
inside a `Sequence` after another split keeps that split's cuts, but its horizon is still the
end of the text.

A derived pattern can still read far: a required opener followed by a broad negated run
(`</?[^>]+>`, `\\[[^\\]]+]`) gets the reader `<?+/?+[^>]*+`, because a reader's steps must be
optional to keep `H` non-decreasing; its horizons then run to the next `>` (the document
re-splits from the previous one on each edit).

## Unicode

The translation follows Oniguruma's class definitions where they differ from the `regex`
package's by definition: `\\w` outside a set (Word plus `²³¹¼½¾`, without the joiners
U+200C/U+200D) and inside one (without those six), `\\h`/`\\H` (hex digits), `\\b`, `$`, `^`,
`\\z`, `\\Z`, POSIX brackets. Characters assigned after the Unicode version of HF's Oniguruma
tables (the `regex` package follows a newer one), and U+0295 (whose category changed), are
classified by the `regex` package's tables and may split differently; the tests generate
text without them.

## The patterns
"""


def render_doc() -> str:
    rows = ["| id | derived? | readers (slack) / reason | bounded alternatives read |",
            "| --- | --- | --- | --- |"]
    n_derived = 0
    reasons: dict[str, int] = {}
    for p in _data()["patterns"]:
        d = derive(p["pattern"])
        if d.fallback is None:
            n_derived += 1
            readers = "<br>".join(
                f"{_cell(r.pattern)} (+{r.slack}{', EOT' if r.eot else ''})" for r in d.readers
            ) or "none"
            rows.append(f"| {p['id']} | derived | {readers} | {d.base} |")
        else:
            reasons[d.fallback] = reasons.get(d.fallback, 0) + 1
            rows.append(f"| {p['id']} | **fallback** | {d.fallback} | – |")
    total = len(_data()["patterns"])
    summary = [f"{n_derived} of {total} patterns derive readers; {total - n_derived} fall back:",
               ""]
    summary += [f"- {why}: {n}" for why, n in sorted(reasons.items(), key=lambda kv: -kv[1])]
    divergent = ", ".join(f"`{pid}`" for pid in sorted(DIVERGENT)) or "none"
    summary += ["", f"Patterns whose translation still splits differently from HF: {divergent}. "
                "The fixtures' `knownDivergence` patterns split like HF here (`edge-ci-full-fold`"
                ": Oniguruma's `(?i)` folds case fully, so `ss` matches `ß`; the translation "
                "asks the `regex` package for full case folding, `(?f)`, and refuses a "
                "case-insensitive character that folds to several, such as `ß` itself).", ""]
    patterns = ["", "The patterns, by id:", ""] + [
        f"- `{p['id']}`: {_cell(p['pattern'])}" for p in _data()["patterns"]]
    return _HEAD + "\n" + "\n".join(summary + rows + patterns) + "\n"


def _cell(s: str) -> str:
    """``s`` as inline code in a table cell: invisible characters (controls, format
    characters, separators other than the space) written as escapes."""
    import unicodedata

    def visible(c: str) -> str:
        if c == "|":
            return "\\|"
        if c == " " or unicodedata.category(c) not in ("Cc", "Cf", "Zl", "Zp", "Zs", "Mn"):
            return c
        named = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
        return named.get(c) or (f"\\x{ord(c):02x}" if ord(c) < 256 else f"\\u{ord(c):04x}")

    out = "".join(map(visible, s))
    return f"`` {out} ``" if "`" in out else f"`{out}`"


def test_the_doc_is_current() -> None:
    assert DOC.is_file(), "run: python tests/unit/test_regex.py --write"
    assert DOC.read_text(encoding="utf-8") == render_doc(), (
        "docs/split-patterns.md is stale: run python tests/unit/test_regex.py --write")


if __name__ == "__main__":
    if sys.argv[1:] == ["--write"]:
        DOC.write_text(render_doc(), encoding="utf-8")
        print(f"wrote {DOC}")
    else:
        print("usage: python tests/unit/test_regex.py --write", file=sys.stderr)


def test_case_insensitive_parts_fold_fully_as_oniguruma_does() -> None:
    """HF's Oniguruma folds case fully under ``(?i)``: ``ss`` matches ``ß`` and ``ẞ``; the
    translation does too (tiktoken's fancy-regex folds simply: unchanged), and refuses a
    case-insensitive character that folds to several, which ``regex`` cannot match so."""
    tokenizers = pytest.importorskip("tokenizers")
    text = "ß ẞ ss SS K \u212a st"
    hf = tokenizers.pre_tokenizers.Split(tokenizers.Regex("(?i:ss|k)"), behavior="isolated")
    want = [span for _, span in hf.pre_tokenize_str(text)]
    mine = build_pre_tokenizer({"type": "Split", "pattern": {"Regex": "(?i:ss|k)"},
                                "behavior": "Isolated", "invert": False}, source="t")
    assert [span for _, span in mine.pre_tokenize(text, first=True, text_start=True)] == want
    assert translate("(?i:ss|k)").startswith("(?f)")
    assert "(?f)" not in translate("(?i:ss|k)", "fancy")
    assert "(?f)" not in translate(r"\p{L}+|\s+")
    for bad in ("(?i:ß)", "(?i:[ßa])", "(?i:ﬁ)"):
        with pytest.raises(PatternError, match="folds it to several"):
            derive(bad)
