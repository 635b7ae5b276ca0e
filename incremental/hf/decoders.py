"""HuggingFace ``tokenizer.json`` decoders: token strings back to text, as ``tokenizers`` does.

``Tokenizer::decode`` (``tokenizers/src/tokenizer/mod.rs``) maps each id to its token string
(an added token's content, else the model's vocabulary entry; an id neither holds is dropped),
then hands the whole list to the file's ``decoder``; without one, it joins the strings with
spaces. Every decoder is a ``decode_chain``: a list of strings in, a list of strings out
(``tokenizers/src/decoders/*.rs``), so that a ``Sequence`` can feed one into the next; the
text is the final list joined (:func:`decode_tokens`). Added tokens go through the chain like
any other token (Llama 2's ``Strip`` leaves ``<s> Hello`` alone; XLM-R's ``Metaspace`` drops
the first token's ``▁`` only when that token is the first of the list).

:func:`build_decoder` reads a ``decoder`` section: ``ByteLevel``, ``Metaspace``, ``Replace``,
``ByteFallback``, ``Fuse``, ``Strip``, ``WordPiece``, ``BPEDecoder``, ``CTC`` and ``Sequence``
of them. Anything else raises :class:`.errors.UnsupportedComponent`; the reader keeps such a
file loadable (counting never decodes) and gives the encoding a :class:`Refused` decoder,
which raises that error when ``decode`` is called.

``tests/unit/test_hf_decoders.py`` compares each decoder with ``tokenizers.decoders`` on
generated token lists, and each real file's ``decode`` with ``Tokenizer.decode``.
"""

from __future__ import annotations

import functools
import operator
from dataclasses import dataclass
from typing import Any, Mapping, Protocol

import regex

from ..regex import BoundedRegex
from .errors import UnboundedComponent, UnsupportedComponent

__all__ = ["Decoder", "ByteLevel", "Metaspace", "Replace", "ByteFallback", "Fuse", "Strip",
           "WordPiece", "BPEDecoder", "CTC", "DecoderSequence", "Refused", "build_decoder",
           "decode_tokens", "decode_id"]


class Decoder(Protocol):
    """A step of HF's decoder chain (``Decoder::decode_chain``)."""

    def decode_chain(self, tokens: list[str]) -> list[str]:
        """The token strings after this step (a new list; ``tokens`` is left as it is)."""
        ...


def decode_id(token_id: object) -> int:
    """``token_id`` as the id ``decode`` looks up: ``TypeError`` for a non-integer,
    ``ValueError`` for one outside HF's ``u32``.

    >>> decode_id(7)
    7

    Runtime complexity: ``O(1)``.
    """
    try:
        i = operator.index(token_id)  # type: ignore[arg-type]
    except TypeError:
        raise TypeError(f"decode: token ids are ints, not {type(token_id).__name__} "
                        f"({token_id!r})") from None
    if not 0 <= i < 1 << 32:
        raise ValueError(f"decode: token id {i} is outside 0..2**32 - 1")
    return i


def decode_tokens(decoder: Decoder | None, tokens: list[str]) -> str:
    """The text of the token strings ``tokens`` under ``decoder``: the tail of HF's
    ``Tokenizer::decode`` (the chain's strings joined; without a decoder, the tokens joined
    with spaces).

    >>> decode_tokens(Metaspace("▁", "always"), ["▁Hello", "▁world"])
    'Hello world'
    >>> decode_tokens(None, ["▁Hello", "▁world"])
    '▁Hello ▁world'

    Runtime complexity: the decoder's, ``O(total length)`` for every decoder here.
    """
    if decoder is None:
        return " ".join(tokens)
    return "".join(decoder.decode_chain(tokens))


@functools.lru_cache(maxsize=1)
def _byte_of_char() -> dict[str, int]:
    """GPT-2's printable stand-in characters -> the bytes they stand for."""
    from .model_section import bytes_to_unicode

    return {c: b for b, c in bytes_to_unicode().items()}


@dataclass(frozen=True)
class ByteLevel:
    """``ByteLevel`` (``pre_tokenizers/byte_level.rs``): each token's characters as GPT-2's
    byte stand-ins, its own UTF-8 bytes when one of them is not a stand-in (an added token
    such as ``<｜User｜>``); all the bytes decoded as one string, invalid UTF-8 as U+FFFD
    (Rust's ``from_utf8_lossy``: one per maximal invalid subpart, as Python's ``replace``).

    >>> ByteLevel().decode_chain(["ĠHello", "Ġw", "orld", "Ċ"])
    [' Hello world\\n']

    Runtime complexity: ``O(total length)``.
    """

    def decode_chain(self, tokens: list[str]) -> list[str]:
        table = _byte_of_char()
        out = bytearray()
        for tok in tokens:
            try:
                out += bytes([table[c] for c in tok])
            except KeyError:
                out += tok.encode("utf-8")
        return [out.decode("utf-8", errors="replace")]


@dataclass(frozen=True)
class Metaspace:
    """``Metaspace`` (``pre_tokenizers/metaspace.rs``): the replacement character becomes a
    space, except in the list's first token when ``prepend_scheme`` is not ``never``, where
    every replacement character is dropped (not only a leading one: HF's own rule).

    >>> Metaspace("▁", "always").decode_chain(["▁Hey", "▁▁friend"])
    ['Hey', '  friend']

    Runtime complexity: ``O(total length)``.
    """

    replacement: str
    prepend_scheme: str

    def decode_chain(self, tokens: list[str]) -> list[str]:
        rep = self.replacement
        out = [t.replace(rep, " ") for t in tokens]
        if out and self.prepend_scheme != "never":
            out[0] = tokens[0].replace(rep, "")
        return out


@dataclass(frozen=True)
class Replace:
    """``Replace`` (``normalizers/replace.rs``, its ``Decoder`` impl): in each token, every
    non-overlapping match, left to right, becomes ``content``. ``pattern`` is a literal, or a
    compiled regular expression (an Oniguruma pattern in ``regex`` form that cannot match the
    empty string, see :func:`build_decoder`).

    >>> Replace("▁", " ").decode_chain(["▁Hello", "▁▁"])
    [' Hello', '  ']

    Runtime complexity: ``O(total length)`` for a literal; the regex engine's otherwise.
    """

    pattern: str | BoundedRegex
    content: str

    def decode_chain(self, tokens: list[str]) -> list[str]:
        pat, content = self.pattern, self.content
        if isinstance(pat, str):
            # subtle: HF finds no match in an empty token, even of an empty pattern
            return [t.replace(pat, content) if t else t for t in tokens]
        return [pat.sub(lambda _m: content, t) for t in tokens]


def _fallback_byte(tok: str) -> int | None:
    """The byte of a ``<0xXX>`` token as Rust reads it (``u8::from_str_radix(&tok[3..5],
    16)``: ASCII hex digits, or ``+`` and one), else None."""
    if len(tok) != 6 or not tok.startswith("<0x") or not tok.endswith(">"):
        return None
    digits = tok[3:5]
    if digits[0] == "+":
        digits = digits[1:]
    if not all(c in "0123456789abcdefABCDEF" for c in digits):
        return None  # (also refuses what int() would take: spaces, underscores)
    return int(digits, 16)


@dataclass(frozen=True)
class ByteFallback:
    """``ByteFallback`` (``decoders/byte_fallback.rs``): each run of ``<0xXX>`` tokens becomes
    the string its bytes spell, or one U+FFFD per byte when they are not valid UTF-8 (the
    whole run, not a maximal subpart).

    >>> ByteFallback().decode_chain(["<0xE5>", "<0x8F>", "<0xAB>", "a", "<0xE5>", "<0x8F>"])
    ['叫', 'a', '�', '�']

    Runtime complexity: ``O(total length)``.
    """

    def decode_chain(self, tokens: list[str]) -> list[str]:
        out: list[str] = []
        run = bytearray()
        for tok in tokens:
            b = _fallback_byte(tok)
            if b is not None:
                run.append(b)
                continue
            if run:
                out.extend(_run_text(run))
                run.clear()
            out.append(tok)
        if run:
            out.extend(_run_text(run))
        return out


def _run_text(run: bytearray) -> list[str]:
    """A run of byte-fallback bytes as ByteFallback gives it (one string, or U+FFFD each)."""
    try:
        return [run.decode("utf-8")]
    except UnicodeDecodeError:
        return ["\ufffd"] * len(run)


@dataclass(frozen=True)
class Fuse:
    """``Fuse`` (``decoders/fuse.rs``): all tokens as one string.

    >>> Fuse().decode_chain(["Hey", " friend!"]), Fuse().decode_chain([])
    (['Hey friend!'], [''])

    Runtime complexity: ``O(total length)``.
    """

    def decode_chain(self, tokens: list[str]) -> list[str]:
        return ["".join(tokens)]


@dataclass(frozen=True)
class Strip:
    """``Strip`` (``decoders/strip.rs``): from each token, up to ``start`` leading and then up
    to ``stop`` trailing ``content`` characters. The trailing cut stops where the leading one
    ended (``tokenizers`` 0.23 panics there instead: a token of ``content`` only, shorter than
    ``start + stop``, which real files, ``Strip(" ", 1, 0)``, never give it).

    >>> Strip(" ", 1, 0).decode_chain(["  Hello", " world"])
    [' Hello', 'world']

    Runtime complexity: ``O(total length)``.
    """

    content: str
    start: int
    stop: int

    def decode_chain(self, tokens: list[str]) -> list[str]:
        return [self._strip(t) for t in tokens]

    def _strip(self, tok: str) -> str:
        c = self.content
        a = 0
        while a < min(self.start, len(tok)) and tok[a] == c:
            a += 1
        b = len(tok)
        while len(tok) - b < min(self.stop, len(tok) - a) and tok[b - 1] == c:
            b -= 1
        return tok[a:b]


def _cleanup(text: str) -> str:
    """``wordpiece::cleanup``: spaces before punctuation and English contractions removed
    (the WordPiece family's table of them, in HF's order; CTC uses it too)."""
    from ..wordpiece.encoding import CLEANUPS

    for a, b in CLEANUPS:
        text = text.replace(a, b)
    return text


@dataclass(frozen=True)
class WordPiece:
    """``WordPiece`` (``decoders/wordpiece.rs``): a token after the first loses its ``prefix``
    (the first occurrence, when it starts with it) or gets a space in front; with ``cleanup``,
    each token is then cleaned on its own (:func:`_cleanup`).

    >>> WordPiece("##", True).decode_chain(["hello", "##s", ",", "world", "!"])
    ['hello', 's', ',', ' world', '!']

    Runtime complexity: ``O(total length)``.
    """

    prefix: str
    cleanup: bool

    def decode_chain(self, tokens: list[str]) -> list[str]:
        out = []
        for i, tok in enumerate(tokens):
            if i:
                tok = tok.replace(self.prefix, "", 1) if tok.startswith(self.prefix) else " " + tok
            out.append(_cleanup(tok) if self.cleanup else tok)
        return out


@dataclass(frozen=True)
class BPEDecoder:
    """``BPEDecoder`` (``decoders/bpe.rs``): the end-of-word ``suffix`` becomes a space, or
    nothing in the last token.

    >>> BPEDecoder("</w>").decode_chain(["hel", "lo</w>", "world</w>"])
    ['hel', 'lo ', 'world']

    Runtime complexity: ``O(total length)``.
    """

    suffix: str

    def decode_chain(self, tokens: list[str]) -> list[str]:
        last = len(tokens) - 1
        return [t.replace(self.suffix, "" if i == last else " ") for i, t in enumerate(tokens)]


@dataclass(frozen=True)
class CTC:
    """``CTC`` (``decoders/ctc.rs``): repeats collapsed, the pad token removed; with
    ``cleanup``, :func:`_cleanup` and the word delimiter as a space; empty tokens dropped.

    >>> CTC("<pad>", "|", True).decode_chain("<pad> h e e l l <pad> l o | w".split())
    ['h', 'e', 'l', 'l', 'o', ' ', 'w']

    Runtime complexity: ``O(total length)``.
    """

    pad_token: str
    word_delimiter_token: str
    cleanup: bool

    def decode_chain(self, tokens: list[str]) -> list[str]:
        out = []
        for i, tok in enumerate(tokens):
            if i and tok == tokens[i - 1]:
                continue  # Itertools::dedup: consecutive repeats
            t = tok.replace(self.pad_token, "")
            if self.cleanup:
                t = _cleanup(t).replace(self.word_delimiter_token, " ")
            if t:
                out.append(t)
        return out


@dataclass(frozen=True)
class DecoderSequence:
    """``Sequence`` (``decoders/sequence.rs``): each decoder's output is the next one's input.

    >>> DecoderSequence((Replace("▁", " "), ByteFallback(), Fuse(), Strip(" ", 1, 0))
    ...                 ).decode_chain(["▁Hello", "<0x21>"])
    ['Hello!']

    Runtime complexity: the sum of its decoders'.
    """

    decoders: tuple[Decoder, ...]

    def decode_chain(self, tokens: list[str]) -> list[str]:
        for d in self.decoders:
            tokens = d.decode_chain(tokens)
        return tokens


@dataclass(frozen=True)
class Refused:
    """The decoder of a file whose ``decoder`` section livetok does not implement: the file
    still loads and counts; decoding raises :class:`.errors.UnsupportedComponent` with
    ``message`` (which names the component and the file).

    Runtime complexity: ``O(1)``.
    """

    message: str

    def decode_chain(self, tokens: list[str]) -> list[str]:
        raise UnsupportedComponent(self.message)


def build_decoder(spec: Mapping[str, Any] | None, *, source: str) -> Decoder | None:
    """The decoder of a ``tokenizer.json`` ``decoder`` section (None for null: HF then joins
    the tokens with spaces).

    >>> build_decoder({"type": "Sequence", "decoders": [{"type": "ByteFallback"},
    ...     {"type": "Fuse"}]}, source="x.json")
    DecoderSequence(decoders=(ByteFallback(), Fuse()))

    Raises :class:`.errors.UnsupportedComponent` naming the component and ``source`` for a type
    or option not implemented.

    Runtime complexity: ``O(size of the section)``; a ``Replace`` regex is compiled.
    """
    if spec is None:
        return None
    if not isinstance(spec, Mapping):
        raise _unsupported(source, f"{spec!r}", "a decoder section is a JSON object or null")
    kind = spec.get("type")
    if kind == "Sequence":
        steps = spec.get("decoders")
        if not isinstance(steps, list):
            raise _unsupported(source, "Sequence", "its 'decoders' must be a list")
        built = [build_decoder(s, source=source) for s in steps]
        return DecoderSequence(tuple(d for d in built if d is not None))
    if kind == "ByteLevel":
        return ByteLevel()
    if kind == "Metaspace":
        return _metaspace(spec, source)
    if kind == "Replace":
        return _replace(spec, source)
    if kind == "ByteFallback":
        return ByteFallback()
    if kind == "Fuse":
        return Fuse()
    if kind == "Strip":
        content = spec.get("content", " ")
        if not _one_char(content):
            raise _unsupported(source, f"Strip content={content!r}", "one character expected")
        return Strip(content, _count(spec, "start", source), _count(spec, "stop", source))
    if kind == "WordPiece":
        prefix = spec.get("prefix", "##")
        if not isinstance(prefix, str):
            raise _unsupported(source, f"WordPiece prefix={prefix!r}", "a string expected")
        return WordPiece(prefix, _flag(spec, "cleanup", True, source))
    if kind == "BPEDecoder":
        suffix = spec.get("suffix", "</w>")
        if not isinstance(suffix, str):
            raise _unsupported(source, f"BPEDecoder suffix={suffix!r}", "a string expected")
        return BPEDecoder(suffix)
    if kind == "CTC":
        pad, delim = spec.get("pad_token", "<pad>"), spec.get("word_delimiter_token", "|")
        if not isinstance(pad, str) or not isinstance(delim, str):
            raise _unsupported(source, "CTC", "pad_token and word_delimiter_token are strings")
        return CTC(pad, delim, _flag(spec, "cleanup", True, source))
    raise _unsupported(source, f"{kind!r}" if kind is not None else "(no type)", "unknown type")


def _metaspace(spec: Mapping[str, Any], source: str) -> Metaspace:
    """A ``Metaspace`` section; ``prepend_scheme`` wins over the legacy ``add_prefix_space``
    (read as the pre-tokenizer reads it: false is ``never``)."""
    rep = spec.get("replacement", "\u2581")
    if not _one_char(rep):
        raise _unsupported(source, f"Metaspace replacement={rep!r}", "one character expected")
    scheme = spec.get("prepend_scheme")
    if scheme is None:
        scheme = "always" if spec.get("add_prefix_space", True) else "never"
    if scheme not in ("always", "first", "never"):
        raise _unsupported(source, f"Metaspace prepend_scheme={scheme!r}",
                           "always, first or never expected")
    return Metaspace(rep, scheme)


def _replace(spec: Mapping[str, Any], source: str) -> Replace:
    """A ``Replace`` section: a ``String`` pattern, or a ``Regex`` one whose ``regex`` form
    (:func:`..regex.derive`, Oniguruma's syntax) cannot match the empty string."""
    pattern, content = spec.get("pattern"), spec.get("content")
    if not isinstance(content, str) or not isinstance(pattern, Mapping) or len(pattern) != 1:
        raise _unsupported(source, f"Replace {pattern!r} -> {content!r}",
                           'expected {"pattern": {"String" or "Regex": ...}, "content": ...}')
    ((kind, value),) = pattern.items()
    from .normalizers import check_growth, replace_growth

    if kind == "String" and isinstance(value, str):
        check_growth(source, f"Replace String {value[:60]!r}",
                     *replace_growth(len(value), len(content)), part="decoder")
        return Replace(value, content)
    if kind == "Regex" and isinstance(value, str):
        from ..regex import PatternError, UnsafePattern, compile_bounded, derive

        what = f"Replace Regex {value[:60]!r}"
        try:
            d = derive(value, "oniguruma")
        except UnsafePattern as e:
            raise UnboundedComponent(
                f"{source}: decoder {what}: refused: {e} (livetok runs a tokenizer.json's "
                "regexes only when their work is bounded; counting is unaffected)") from None
        except (regex.error, PatternError) as e:
            raise _unsupported(source, what, f"not understood ({e})") from None
        if d.min_width == 0:
            # (Oniguruma's and Python's scans step past an empty match differently)
            raise _unsupported(source, what, "it can match the empty "
                               "string, where HF's scan is not reproduced exactly")
        check_growth(source, what, *replace_growth(d.min_width, len(content)), part="decoder")
        return Replace(compile_bounded(d.regex_form, d.budget, what=f"{source}: decoder {what}",
                                       error=UnboundedComponent), content)
    raise _unsupported(source, f"Replace pattern {pattern!r}", "String or Regex expected")


def _one_char(value: object) -> bool:
    return isinstance(value, str) and len(value) == 1


def _count(spec: Mapping[str, Any], key: str, source: str) -> int:
    value = spec.get(key, 0)
    if type(value) is not int or value < 0:
        raise _unsupported(source, f"Strip {key}={value!r}", "a count >= 0 expected")
    return value


def _flag(spec: Mapping[str, Any], key: str, default: bool, source: str) -> bool:
    value = spec.get(key, default)
    if not isinstance(value, bool):
        raise _unsupported(source, f"{spec.get('type')} {key}={value!r}", "true or false expected")
    return value


def _unsupported(source: str, what: str, why: str) -> UnsupportedComponent:
    return UnsupportedComponent(
        f"{source}: decoder {what}: not implemented; {why} (livetok decodes with ByteLevel, "
        "Metaspace, Replace, ByteFallback, Fuse, Strip, WordPiece, BPEDecoder, CTC and "
        "Sequence; counting is unaffected; use HF tokenizers to decode with this file)")
