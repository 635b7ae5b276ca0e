"""Byte-level ``tokenizer.json`` files as byte-level encodings (issue 27).

A file whose pipeline is *one regex Split + ByteLevel + BPE* (Llama 3, gpt-oss, GPT-4o's
published file, Mistral Nemo's Tekken) tokenizes exactly like a tiktoken encoding, except for
two things that are HuggingFace's:

1. **The merges.** HuggingFace applies the merge rule of lowest *index* among adjacent symbol
   pairs (priority belongs to the pair: :mod:`.bpe`), tiktoken the pair whose concatenation
   has the lowest *rank*. :class:`ByteLevelFile` keeps the file's rules and runs them through
   :func:`..pairmerge.merge` (the engine's scan, run and heap loops), in the piece cache of the byte-level
   :class:`~livetok.incremental.bytelevel.encoding.Encoding`; ``ignore_merges`` is tiktoken's
   whole-piece lookup.
2. **Added tokens.** They are cut out of the text first (a leftmost-longest scan), and the
   regex splits the segments between them, each as a text of its own
   (:class:`AddedTokenSplit`). Only tokens without ``lstrip`` / ``rstrip`` / ``single_word``
   take this route, found in one scan (:func:`route`).

Everything else is the byte-level family's: its per-token tables (the document's fast path),
Algorithm 1 inside long pieces (:meth:`ByteLevelFile.encode_bytes_piece`), the piece cache,
the stdlib ``re`` forms of the split and its horizon readers on ASCII text
(:class:`~livetok.incremental.bytelevel.pretokenize.Pretokenizer` built from the pattern's
:func:`~livetok.incremental.regex.derive` derivation).

**Horizon** of a piece: the pattern's ``H(start)`` (the derivation's readers: what the match
attempt at ``start`` reads, a non-decreasing function of ``start``), then the added-token
terms of :class:`~.encoding.TokenizerJsonEncoding`'s tight rule (``hf/encoding.py``, module
docstring, *Horizon*): a token starting inside what the regex read ends the segment there.

**Which files.** :func:`route` decides at load time, from the file's sections: a BPE model
without byte fallback, affixes or dropout whose vocabulary holds the 256 byte characters; no
normalizer (or an empty ``Sequence``; ``NFC`` goes to :mod:`.bytelevel_nfc`, around this
encoding); the pre-tokenizer ``Sequence[Split(regex, Isolated or
inverted Removed), ByteLevel(add_prefix_space=false, use_regex=false)]``; a ``ByteLevel``
decoder; a pattern that *tiles* every text (:func:`tiles`: it matches at every position, so
the behaviours agree and no gap is a piece). Any other file keeps
:class:`~.encoding.TokenizerJsonEncoding`.
"""

from __future__ import annotations

import re
from array import array
from functools import cached_property
from typing import Any, Callable, Iterator, Mapping, Sequence, Tuple

import regex

from ..bytelevel.encoding import Encoding, PieceCache
from ..bytelevel.pretokenize import Pretokenizer
from ..regex import Alt, Chars, Derivation, Group, Look, Anchor, Node, Repeat, Seq
from ..regex import Flavour, derive, parse
from ..text import sanitize
from .added import AddedToken, TokenReads
from .quiet_twins import quiet_twin, twin_margin
from ..pairmerge import merge
from .decoders import Decoder, decode_id, decode_tokens
from .model_section import bytes_to_unicode

__all__ = ["ByteLevelFile", "AddedTokenSplit", "route", "tiles", "byte_ranks", "reads_behind"]


# -- which files ------------------------------------------------------------------------------


#: :func:`tiles` looks at patterns of at most this many top-level alternatives (the real
#: files': 6-8; each costs a C pass over every code point): a file past it keeps the general
#: pipeline rather than a load of seconds
_MAX_TILE_OPTIONS = 64


def _all_code_points() -> str:
    """Every code point but the surrogates, as one string (4.4 MB; ~20 ms)."""
    cps = array("I", range(0xD800))
    cps.extend(range(0xE000, 0x110000))
    return cps.tobytes().decode("utf-32-le" if array("I", [1]).tobytes()[0] else "utf-32-be")


def _sure(node: Node) -> tuple[str, list[str]] | None:
    """``(C, prefixes)``: a single-character pattern ``C`` such that wherever the text has a
    character of ``C``, ``node`` matches there (non-empty), whatever follows, provided that
    no pattern of ``prefixes`` (possessive ones before ``C``) can take that character; None
    when no such class is known.

    Forms recognised: a class; a class repeated at least once (``lo == 1``); a group of one;
    a sequence whose items before the required one can match empty and give it back (greedy
    or lazy) or are possessive single classes (``prefixes``: :func:`tiles` checks they are
    disjoint from ``C``), and whose items after it always match (optional, no look-around or
    anchor).
    """
    if isinstance(node, Group) and node.opener in ("(", "(?:", "(?>"):
        return _sure(node.node)
    if isinstance(node, Chars):
        return node.matcher, []
    if isinstance(node, Repeat) and node.lo == 1 and isinstance(node.node, Chars):
        return node.node.matcher, []
    if not isinstance(node, Seq):
        return None
    items = list(node.items)
    for k, item in enumerate(items):
        got = _sure(item)
        if got is None:
            if not (isinstance(item, Repeat) and item.lo == 0):
                return None
            continue
        prefixes: list[str] = []
        for before in items[:k]:
            assert isinstance(before, Repeat)
            if before.mode == "possessive":
                if not isinstance(before.node, Chars):
                    return None
                prefixes.append(before.node.matcher)
        if not all(_always_matches(after) for after in items[k + 1:]):
            return None
        return got[0], prefixes + got[1]
    return None


def _always_matches(node: Node) -> bool:
    """Whether ``node`` matches (possibly empty) at every position: an optional item (zero
    repetitions always match, whatever the item holds: look-around inside it only limits the
    repetitions, as DeepSeek's compiled sequence has, :data:`_COMPILED_SEQUENCES`)."""
    if isinstance(node, Repeat):
        return node.lo == 0
    if isinstance(node, Group):
        return _always_matches(node.node)
    return False


def tiles(pattern: str, flavour: Flavour = "oniguruma") -> bool:
    """Whether ``pattern`` matches (non-empty) at every position of every text, so that its
    matches, found from a text's start, tile the text: some top-level alternative is sure to
    match on each character (:func:`_sure`), checked over every code point.

    >>> tiles(r"\\p{L}+|\\p{N}|\\s+|[^\\s\\p{L}\\p{N}]+"), tiles(r"\\p{L}+|\\s+")
    (True, False)

    False past ``_MAX_TILE_OPTIONS`` top-level alternatives (not known to tile: the file keeps
    the general pipeline).

    Runtime complexity: ``O(len(pattern))`` plus C passes over the 1.1 million code points
    (~60 ms for the real files' patterns; at most one per alternative and possessive prefix),
    done once per file and kept in the vocabulary cache with it.
    """
    tree = parse(pattern, flavour)
    while isinstance(tree, Group) and tree.opener in ("(", "(?:"):
        tree = tree.node
    options = tree.options if isinstance(tree, Alt) else (tree,)
    if len(options) > _MAX_TILE_OPTIONS:
        return False
    classes: list[str] = []
    everything = _all_code_points()
    for option in options:
        got = _sure(option)
        if got is None:
            continue
        cls, prefixes = got
        if any(regex.search(f"(?=(?:{p}))(?:{cls})", everything) for p in prefixes):
            continue  # a possessive prefix could take the character the class needs
        classes.append(cls)
    if not classes:
        return False
    union = regex.compile("(?:" + "|".join(f"(?:{c})" for c in classes) + ")++")
    return union.fullmatch(everything) is not None


def reads_behind(pattern: str) -> bool:
    """Whether the Oniguruma ``pattern`` may read left of where its match starts (a
    look-behind, or an anchor other than ``\\z`` / ``\\Z`` / ``$``): the NFC route then refuses
    it (``bytelevel_nfc`` splits a normalized chunk alone).

    >>> reads_behind(r"\\p{L}+|\\s+(?!\\S)"), reads_behind(r"(?<=a)b")
    (False, True)
    """
    def walk(node: Node) -> bool:
        if isinstance(node, Look):
            return not node.ahead or walk(node.node)
        if isinstance(node, Anchor):
            return node.kind not in ("z", "Z", "$")
        if isinstance(node, Seq):
            return any(map(walk, node.items))
        if isinstance(node, Alt):
            return any(map(walk, node.options))
        if isinstance(node, (Repeat, Group)):
            return walk(node.node)
        return False
    return walk(parse(pattern, "oniguruma"))


#: Sequences of ``Split(pattern, Isolated)`` steps compiled into one pattern whose matches,
#: found from a text's start, are the sequence's pre-tokens (issue 35: DeepSeek V3's three
#: splits, so that it takes the byte-level path): the patterns of the steps -> the one.
#:
#: DeepSeek V3: digits ``\p{N}{1,3}``, then CJK runs ``[一-龥぀-ゟ゠-ヿ]+``, then the main
#: regex, each step on every piece the one before left (HF ``PreTokenizedString.split``).
#: The compiled form: the digit groups first (no other alternative starts at or takes a
#: digit, so a digit run is met at its start and cut in threes as there); then the main
#: regex *inside a CJK run* (its alternatives restricted to the run's characters: a CJK run
#: holds punctuation ``・゠``, marks ``゙゚`` and unassigned code points that the main regex
#: cuts apart); then the main regex outside them (its classes less the digits and CJK
#: characters, which end its segment: ``\s+(?!\S)`` sees one as the segment's end); and last
#: the gaps the main regex leaves (HF keeps a gap between two matches as a pre-token): a run
#: of characters no alternative takes, up to the one an alternative takes with the letters
#: after it. ``tests/unit/test_hf_deepseek_bytelevel.py`` compares its pieces with HF's
#: ``pre_tokenize_str`` on hostile text.
_CJK = "一-龥぀-ゟ゠-ヿ"
_CJK_SPANS = ((0x4E00, 0x9FA5), (0x3040, 0x309F), (0x30A0, 0x30FF))


def _cjk_class(category: str) -> str:
    """The characters of the CJK class ``[一-龥぀-ゟ゠-ヿ]`` that match the ``regex`` class
    ``category``, as an explicit class of ranges (no set operation: the ``regex`` module
    runs ``&&`` by a look-ahead per character, ~40x slower on a long line)."""
    rx = regex.compile(category)
    spans: list[tuple[int, int]] = []
    for lo, hi in _CJK_SPANS:
        for cp in range(lo, hi + 1):
            if rx.match(chr(cp)):
                if spans and spans[-1][1] == cp - 1:
                    spans[-1] = (spans[-1][0], cp)
                else:
                    spans.append((cp, cp))
    return "[" + "".join(chr(a) if a == b else f"{chr(a)}-{chr(b)}" for a, b in spans) + "]"


#: letters and marks, and punctuation and symbols, less the CJK class (a negated class of the
#: other general categories: no set operation)
_LM_NOT_CJK = rf"[^\p{{N}}\p{{P}}\p{{S}}\p{{Z}}\p{{C}}{_CJK}]"
_PS_NOT_CJK = rf"[^\p{{L}}\p{{M}}\p{{N}}\p{{Z}}\p{{C}}{_CJK}]"
_OTHER = rf"[^\s\p{{L}}\p{{M}}\p{{P}}\p{{S}}\p{{N}}{_CJK}]"
_DEEPSEEK_MAIN = ("[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|"
                  "[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|"
                  "\\s*[\r\n]+|\\s+(?!\\S)|\\s+")


def _deepseek() -> str:
    """DeepSeek V3's three splits as one pattern (:data:`_COMPILED_SEQUENCES`)."""
    c_lm = _cjk_class(r"[\p{L}\p{M}]")
    c_pre = _cjk_class(r"[^\p{L}\p{P}\p{S}]")
    c_other = _cjk_class(r"[^\p{L}\p{M}\p{P}\p{S}]")
    c_ps = _cjk_class(r"[\p{P}\p{S}]")
    return "|".join([
        r"\p{N}{1,3}",
        rf"{c_pre}?{c_lm}+",
        rf"{c_ps}+",
        rf"{c_other}(?:{c_other}(?!{c_lm}))*",
        r"""[!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+""",
        rf"[^\r\n\p{{L}}\p{{P}}\p{{S}}\p{{N}}{_CJK}]?{_LM_NOT_CJK}+",
        rf" ?{_PS_NOT_CJK}+[\r\n]*",
        r"\s*[\r\n]+",
        rf"\s+(?![^\s\p{{N}}{_CJK}])",
        r"\s+",
        rf"{_OTHER}(?:{_OTHER}(?!{_LM_NOT_CJK}))*",
    ])


_DEEPSEEK_STEPS = ("\\p{N}{1,3}", f"[{_CJK}]+", _DEEPSEEK_MAIN)
_COMPILED_SEQUENCES: dict[tuple[str, ...], Callable[[], str]] = {_DEEPSEEK_STEPS: _deepseek}
#: the compiled patterns' twins for ASCII text (the CJK alternatives, which cannot match
#: there, left out, and the CJK characters out of the classes): their ``re`` forms split
#: ASCII text, checked against the pattern's own on probes (:func:`_ascii_twin`)
_ASCII_TWINS: dict[tuple[str, ...], str] = {
    _DEEPSEEK_STEPS: "|".join([
        r"\p{N}{1,3}",
        r"""[!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+""",
        r"[^\r\n\p{L}\p{P}\p{S}\p{N}]?[\p{L}\p{M}]+",
        r" ?[\p{P}\p{S}]+[\r\n]*",
        r"\s*[\r\n]+",
        r"\s+(?![^\s\p{N}])",
        r"\s+",
        r"[^\s\p{L}\p{M}\p{P}\p{S}\p{N}](?:[^\s\p{L}\p{M}\p{P}\p{S}\p{N}](?![\p{L}\p{M}]))*",
    ]),
}
#: compiled pattern -> the steps it was compiled from (for its ASCII twin)
_COMPILED_FROM: dict[str, tuple[str, ...]] = {}


def compiled_sequence(steps: tuple[str, ...]) -> str | None:
    """The one pattern compiled from the Isolated Split patterns ``steps`` (in order), or None
    when the sequence is not a known one (:data:`_COMPILED_SEQUENCES`).

    Runtime complexity: ``O(1)`` after the first call (~30 ms: the CJK classes).
    """
    make = _COMPILED_SEQUENCES.get(steps)
    if make is None:
        return None
    pattern = make()
    _COMPILED_FROM[pattern] = steps
    return pattern


def _ascii_twin(pattern: str, reference: Any) -> Any:
    """The ``re`` form that splits ASCII text as ``reference`` (the compiled ``regex`` of
    ``pattern``) does, from ``pattern``'s ASCII twin (:data:`_ASCII_TWINS`), or None (no
    twin, or it differs on the probes).

    Runtime complexity: ``O(probe characters)``, once per encoding.
    """
    from ..bytelevel.pretokenize import ascii_checked

    steps = _COMPILED_FROM.get(pattern)
    twin = _ASCII_TWINS.get(steps) if steps is not None else None
    if twin is None:
        return None
    got = ascii_checked([derive(twin, "oniguruma").regex_form], [reference], match=False)
    return got[0] if got is not None else None


def _isolated_pattern(split: Any) -> str | None:
    """The pattern of a ``Split(regex, Isolated)`` step (or None)."""
    if not isinstance(split, Mapping) or split.get("type") != "Split":
        return None
    pattern = split.get("pattern")
    if not isinstance(pattern, Mapping) or split.get("invert", False):
        return None
    regex_str = pattern.get("Regex")
    if not isinstance(regex_str, str) or str(split.get("behavior", "")).lower() != "isolated":
        return None
    return regex_str


def _split_pattern(pre: Any) -> str | None:
    """The Split pattern of ``Sequence[Split, ByteLevel]`` as :func:`route` wants it, or the
    compiled pattern of a known sequence of Splits before the ``ByteLevel``
    (:data:`_COMPILED_SEQUENCES`)."""
    if not isinstance(pre, Mapping) or pre.get("type") != "Sequence":
        return None
    steps = pre.get("pretokenizers")
    if isinstance(steps, list) and len(steps) > 2:
        bl = steps[-1]
        patterns = tuple(_isolated_pattern(x) for x in steps[:-1])
        compiled = None if None in patterns else compiled_sequence(patterns)  # type: ignore[arg-type]
        if compiled is None or not isinstance(bl, Mapping) or bl.get("type") != "ByteLevel" \
                or bl.get("add_prefix_space") or bl.get("use_regex", True):
            return None
        return compiled
    if not isinstance(steps, list) or len(steps) != 2:
        return None
    split, bl = steps
    if not (isinstance(split, Mapping) and isinstance(bl, Mapping)):
        return None
    if bl.get("type") != "ByteLevel" or bl.get("add_prefix_space") or bl.get("use_regex", True):
        return None
    pattern = split.get("pattern")
    if split.get("type") != "Split" or not isinstance(pattern, Mapping):
        return None
    regex_str = pattern.get("Regex")
    behavior = str(split.get("behavior", "")).lower()
    invert = bool(split.get("invert", False))
    if not isinstance(regex_str, str) or (behavior, invert) not in (
            ("isolated", False), ("removed", True)):
        return None
    return regex_str


def route(data: Mapping[str, Any], tables: Mapping[str, Any],
          added: Sequence[AddedToken]) -> dict[str, Any] | None:
    """What :class:`ByteLevelFile` needs of a parsed ``tokenizer.json`` (``tables``: the BPE
    model's, :func:`.bpe.bpe_tables`; ``added``: its added tokens), or None when the file is
    not of the family (module docstring, *Which files*). Plain values: the vocabulary cache
    keeps them.

    Runtime complexity: ``O(V)`` for ``V`` tokens, plus :func:`tiles`.
    """
    norm = data.get("normalizer")
    nfc = norm == {"type": "NFC"}
    if norm is not None and norm != {"type": "Sequence", "normalizers": []} and not nfc:
        return None
    decoder = data.get("decoder")
    if not isinstance(decoder, Mapping) or decoder.get("type") != "ByteLevel":
        return None
    if tables.get("type") != "BPE" or tables["byte_fallback"] or tables["prefix"] is not None \
            or tables["suffix"] is not None or tables["merged_specials"]:
        return None
    if any(t.lstrip or t.rstrip or t.single_word for t in added):
        return None
    contents = [t.content for t in added if t.content]
    firsts = {c[0] for c in contents}
    if len({t.normalized for t in added}) > 1 and (
            any(ch in firsts for c in contents for ch in c[1:])
            or any(x != y and x.startswith(y) for x in contents for y in contents)):
        return None  # two passes that one scan would not reproduce
    pattern = _split_pattern(data.get("pre_tokenizer"))
    if pattern is None:
        return None
    try:
        d = derive(pattern, "oniguruma")
    except (regex.error, ValueError):
        return None
    if d.fallback is not None or d.min_width == 0 or d.budget is not None:
        return None
    vocab = tables["vocab"]
    ranks = byte_ranks(vocab)
    if ranks is None or not tiles(pattern):
        return None
    if nfc and (reads_behind(pattern) or not all(c.isascii() and c not in _NFC_ASCII
                                                  for c in "".join(contents))):
        # ``bytelevel_nfc`` splits a normalized chunk alone, and the normal form of text
        # between added tokens must spell none: NFC's only ASCII outputs from other
        # characters are these singletons' images
        return None
    # a token of no bytes must be an added token (its string is then its content)
    added_ids = {t.id for t in added}
    if len(ranks) < len(vocab) and any(
            i not in added_ids for tok, i in vocab.items() if _FOREIGN.search(tok) or not tok):
        return None
    return {"pattern": pattern, "ranks": ranks, "normalizer": "NFC" if nfc else None}


#: the ASCII characters NFC makes of other characters (U+037E, U+1FEF, U+212A)
_NFC_ASCII = frozenset(";`K")
#: GPT-2's byte characters: byte -> character, character -> byte (for ``str.translate``),
#: and any character that is none of them
_TO_CHAR = bytes_to_unicode()
_UNMAP = {ord(c): b for b, c in _TO_CHAR.items()}
_FOREIGN = re.compile("[^" + "".join(re.escape(c) for c in _TO_CHAR.values()) + "]")


def byte_ranks(vocab: Mapping[str, int]) -> dict[bytes, int] | None:
    """The byte-level vocabulary as ``bytes -> id`` (tokens not spelled in GPT-2's byte
    characters are left out: no merge of byte symbols makes them), or None when a byte has no
    token.

    Runtime complexity: ``O(total length of the tokens)``, C calls.
    """
    out: dict[bytes, int] = {}
    for tok, i in vocab.items():
        if tok and _FOREIGN.search(tok) is None:
            out[tok.translate(_UNMAP).encode("latin-1")] = i
    if any(bytes([b]) not in out for b in range(256)):
        return None
    return out


# -- the encoding -----------------------------------------------------------------------------


class _Span(Tuple[int, int]):
    """A ``(start, end)`` pair with ``span()``, what the byte-level encoder reads of a match."""

    __slots__ = ()

    def span(self) -> tuple[int, int]:
        return self


class AddedTokenSplit(Pretokenizer):
    """The regex split of a derived pattern, with added tokens cut out first (module
    docstring): each segment between two tokens is split as a text of its own (``pos`` /
    ``endpos``: look-ahead and ``\\z`` see the segment's end).

    Runtime complexity: :meth:`split` ``O(len(text) - pos)``; :meth:`horizon` as the
    pattern's, plus one C scan of what it read for a token's first character.
    """

    def __init__(self, name: str, derivation: Derivation, contents: Sequence[str]) -> None:
        super().__init__(name, derivation=derivation)
        self._tok = TokenReads(list(contents)) if contents else None
        #: the tiktoken pre-tokenizer whose quiet runs the pattern shares (:meth:`quiet`)
        self._twin = quiet_twin(derivation.pattern)
        self.quiet_margin = twin_margin(self._twin, derivation, contents)

    def quiet(self, text: str, regex_text: str | None = None) -> bool:
        """``QuietEncoding.quiet`` for a pattern with a quiet twin
        (:mod:`.quiet_twins`, which says why the stretch is exact): ``text`` holds no added
        token's first character and is quiet for the twin (``regex_text``: what the regex
        sees of it, when a normalizer maps characters one for one: ``hf/bytelevel_nfc``).

        Runtime complexity: ``O(len(text))``, C scans.
        """
        twin, tk = self._twin, self._tok
        return twin is not None and (tk is None or tk.first_re.search(text) is None) and (
            twin.quiet(text if regex_text is None else regex_text))

    def _form(self, text: str) -> Any:
        """The split regex for ``text``: its ``re`` form when both exist and ``text`` is
        ASCII, else the ``regex`` one."""
        return self._ascii_split if (
            self._ascii_split is not None and text.isascii()) else self.regex

    def _parts(self, text: str, pos: int) -> Iterator[tuple[int, int, bool]] | None:
        """``(start, end, is_token)`` from ``pos``: the added tokens (leftmost-longest) and
        the segments between them, in order; None when no token can be there (no token's
        first character from ``pos`` on: one segment).

        Runtime complexity: ``O(len(text) - pos)``, C scans.
        """
        tk = self._tok
        if tk is None or tk.first_re.search(text, pos) is None:
            return None
        return self._cut(text, pos, tk)

    @staticmethod
    def _cut(text: str, pos: int, tk: TokenReads) -> Iterator[tuple[int, int, bool]]:
        a = pos
        for m in tk.token.finditer(text, pos):
            if m.start() > a:
                yield a, m.start(), False
            yield m.start(), m.end(), True
            a = m.end()
        if a < len(text):
            yield a, len(text), False

    def split(self, text: str, pos: int = 0) -> Iterator[tuple[int, int]]:
        form = self._form(text)
        parts = self._parts(text, pos)
        if parts is None:
            return (m.span() for m in form.finditer(text, pos))
        return self._split_parts(text, form, parts)

    @staticmethod
    def _split_parts(text: str, form: Any, parts: Iterator[tuple[int, int, bool]]
                     ) -> Iterator[tuple[int, int]]:
        for a, b, token in parts:
            if token:
                yield a, b
            else:
                yield from (m.span() for m in form.finditer(text, a, b))

    def finditer(self, text: str, pos: int = 0) -> Iterator[Any]:
        return map(_Span, self.split(text, pos))

    def piece_strings(self, text: str) -> list[str]:
        """The pieces of ``text`` as strings, the regex's part by ``findall`` (C calls per
        segment between added tokens): what a document's build and a whole encode read.

        Runtime complexity: ``O(len(text))``.
        """
        form = self._form(text)
        if form.groups:
            def find(a: int, b: int) -> list[str]:
                return [m.group() for m in form.finditer(text, a, b)]
        else:
            def find(a: int, b: int) -> list[str]:
                return list(form.findall(text, a, b))
        parts = self._parts(text, 0)
        if parts is None:
            return find(0, len(text))
        out: list[str] = []
        for a, b, token in parts:
            if token:
                out.append(text[a:b])
            else:
                out += find(a, b)
        return out

    def horizon(self, text: str, start: int, limit: int | None = None) -> int:
        tk = self._tok
        n = len(text)
        if tk is None:
            return super().horizon(text, start, limit)
        if start >= n:
            return n + 1
        return self.token_horizon(text, start, n if limit is None else limit,
                                  super().horizon(text, start, limit))

    def token_horizon(self, text: str, start: int, lim: int, y: int) -> int:
        """The horizon of the piece at ``start`` (``start < len(text)``) whose regex reads
        ``text[start:y]``: ``y`` with the added-token terms of the tight rule (a token
        starting in what the regex read ends the segment there). :mod:`.bytelevel_nfc` gives
        the reads of the normalized text's regex, mapped back.

        Runtime complexity: one C scan of ``text[start:y]`` for a token's first character,
        plus a trie walk at each.
        """
        tk = self._tok
        if tk is None:
            return y
        n = len(text)
        if text[start] not in tk.first and tk.first_re.search(
                text, start, min(n, y + 1, lim + 1)) is None:
            # the usual case, inline: no token starts in what the regex read, so the tight
            # rule's value is max(b, y + 1) (``TokenReads.bound`` without candidates)
            infix = tk.infix
            return max(y + 1, infix.match(text, start).end() + 1  # type: ignore[union-attr]
                       if infix is not None else start + 1)
        b, whole = tk.lead(text, start)
        if whole is not None:
            return whole
        return tk.bound(text, start, lim, b, y)


class _MergeCache(PieceCache):
    """The byte-level piece cache with HuggingFace's merge rules in place of ranks: an added
    token's content is its id; with ``ignore_merges`` a piece that is a token is that token;
    else the rules on the piece's byte symbols (:func:`..pairmerge.merge`)."""

    __slots__ = ("_added", "_ignore", "_bytes", "_rules", "_m")

    def __init__(self, ranks: dict[bytes, int], added: dict[str, int], ignore_merges: bool,
                 rules: dict[int, int], m: int) -> None:
        super().__init__(ranks)
        self._added = added
        self._ignore = ignore_merges
        self._bytes = [ranks[bytes([b])] for b in range(256)]
        self._rules = rules
        self._m = m

    def encode_new(self, piece: str) -> tuple[int, ...]:
        t = self._added.get(piece)
        if t is not None:
            return (t,)
        data = piece.encode()
        if self._ignore:
            r = self._rget(data)
            if r is not None:
                return (r,)
        return tuple(self.merge(data))

    def merge(self, data: bytes) -> list[int]:
        """The rules applied to the bytes ``data`` (no whole-piece lookup), by the engine
        (:func:`..pairmerge.merge`: the scan, runs in bulk, chunks glued, or the heap).

        Runtime complexity: ``O(n log n)`` for ``n`` bytes (``O(n^2)`` C work when short).
        """
        ids = list(map(self._bytes.__getitem__, data))
        merge(ids, self._rules, self._m)
        return ids


class ByteLevelFile(Encoding):
    """A byte-level ``tokenizer.json`` (module docstring) as a byte-level encoding: ids equal
    HuggingFace's ``Tokenizer.encode(text, add_special_tokens=False).ids``, and :meth:`decode`
    its ``decode(ids, skip_special_tokens=False)``.

    Built by :func:`.reader.from_prepared` when :func:`route` accepts the file.
    """

    specials_in_text = True
    tiktoken_equivalent = False

    def __init__(self, name: str, *, source: str, pattern: str, ranks: Mapping[bytes, int],
                 rules: dict[int, int], m: int, ignore_merges: bool,
                 added: Sequence[AddedToken], decoder: Decoder | None) -> None:
        d = derive(pattern, "oniguruma")
        contents = [t.content for t in added if t.content]
        specials: dict[str, int] = {}
        for t in added:
            specials.setdefault(t.content, t.id)
        self._split = AddedTokenSplit(name, d, contents)
        twin = _ascii_twin(pattern, self._split.regex)
        if twin is not None:  # plain classes: faster than the set operations' ``re`` form
            self._split._ascii_split = twin
        super().__init__(name, mergeable_ranks=ranks, special_tokens=specials, source=source,
                         pretokenizer=self._split)
        self._merges = self._cache = _MergeCache(
            self.mergeable_ranks, {c: specials[c] for c in contents}, ignore_merges, rules, m)
        self.decoder = decoder
        self.ignore_merges = ignore_merges
        self._added = list(added)

    @cached_property
    def _strings(self) -> list[str | None]:
        """id -> HuggingFace's token string (an added token's content over the model's
        entry, which is its bytes in GPT-2's characters), built on the first decode.

        Runtime complexity: ``O(vocabulary bytes)``.
        """
        strings: list[str | None] = [None] * (self.max_token_value + 1)
        for data, i in self.mergeable_ranks.items():
            strings[i] = "".join(map(_TO_CHAR.__getitem__, data))
        for t in self._added:
            strings[t.id] = t.content
        return strings

    def _encode_ordinary(self, text: str) -> list[int]:
        return self.encode_piece_strings(self._split.piece_strings(text))

    def encode_by_piece(self, text: str) -> list[Sequence[int]]:
        """Token ids of each piece of ``text`` (sanitized): the pieces by ``findall``, their
        ids through the piece cache (``map``, a Python call per new piece only).

        Runtime complexity: as :meth:`encode`.
        """
        cache = self._cache
        try:
            return list(map(cache.__getitem__, self._split.piece_strings(sanitize(text))))
        finally:
            cache.end_call()

    def encode_bytes_piece(self, data: bytes) -> list[int]:
        """The merge rules on the bytes ``data`` (a window inside one piece: Algorithm 1).
        The whole-piece lookup of ``ignore_merges`` is not applied: a window is not a piece
        (the document encodes a whole piece with :meth:`encode_piece`)."""
        return self._merges.merge(data)

    def decode(self, ids: Sequence[int], errors: str = "replace") -> str:
        """Text of ``ids`` as HuggingFace's ``decode(ids, skip_special_tokens=False)``: each
        id's token string through the file's ``ByteLevel`` decoder (an id no token has is
        skipped, as HF skips it)."""
        strings = self._strings
        toks: list[str] = []
        for i in map(decode_id, ids):
            s = strings[i] if i < len(strings) else None
            if s is not None:
                toks.append(s)
        return decode_tokens(self.decoder, toks)

    def __repr__(self) -> str:
        return f"<ByteLevelFile {self.name!r} n_vocab={self.n_vocab}>"
