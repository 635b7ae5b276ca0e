"""A ``tokenizer.json`` BPE model read as a merge-rule dictionary, and what *Formalizing BPE
Tokenization* says about it (``livetok analyze tokenizer.json``).

A HuggingFace BPE model lists its merges in priority order (``model.merges``, ``"a b"`` strings
or ``[a, b]`` pairs): rule ``i`` is the pair, its priority is its index. That is exactly the
paper's dictionary (Definition 1), so :mod:`.merge_rules` applies as it is:
:func:`read_model` turns the file's model into a :class:`~.merge_rules.Dictionary` and
:func:`analyze_merges` answers, in order and each as cheaply as it can:

1. is it proper (Definition 5)? ``O(||D||)``;
2. if not, which rules are ever applied (Corollary 1, for both semantics): dropping the others
   changes no tokenization, so when the SentencePiece-useful rules form a proper dictionary
   and HuggingFace applies no rule outside them, Lemma 1 still proves the two semantics equal
   on every string (``SP_D = SP_U = HF_U = HF_D``);
3. otherwise, a witness: a string built from the rules that break properness (Lemma 1's proof:
   a lower-priority rule makes the token of a higher-priority one), on which Definition 3 and
   Definition 4 give different tokenizations, both computed by :mod:`.merge_rules`.

**Which semantics a tokenizer.json file has.** HuggingFace ``tokenizers`` (the library that runs
these files) does *not* implement Definition 4: its ``Word::merge_all``
(``tokenizers/src/models/bpe/word.rs``) keeps a heap of candidate pairs ordered by (rank,
position) and always merges the highest-priority pair, leftmost on ties, which is Definition 3,
the paper's SentencePiece semantics, over the merge ranks (``tests/unit/test_analyze_tokenizer_json.py``
checks it on the paper's Example 3, and the docs' table on each real file's witnesses). Duplicate
merges keep their *last* rank there (the pairs go into a hash map in order), and
:func:`read_model` does the same. With ``ignore_merges`` a pre-token that is a vocabulary entry
is that entry without merging, which neither semantics models.

Symbols: for byte-level models (a ``ByteLevel`` pre-tokenizer) the merges are written in GPT-2's
byte-to-unicode characters, one character per byte; the analysis works on those characters
(``Ġ`` is a space), which is the same dictionary over another alphabet. Other models' symbols
are the text's characters. A non-empty ``continuing_subword_prefix`` or ``end_of_word_suffix``
makes merge results other than ``a + b`` or base symbols longer than one character; no file
we know uses them and :func:`read_model` refuses them by name.
"""

from __future__ import annotations

import itertools
import json
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Mapping, Sequence

from . import merge_rules as mr

__all__ = [
    "TokenizerJsonModel",
    "MergeSemantics",
    "read_model",
    "load_model",
    "looks_like_tokenizer_json",
    "analyze_merges",
    "witness_candidates",
    "bytes_of",
]

#: the bytes a tokenizer.json may hold (``LIVETOK_MAX_VOCAB_BYTES``, as vocabularies)
_LIMIT_ENV = "LIVETOK_MAX_VOCAB_BYTES"


@dataclass(frozen=True)
class TokenizerJsonModel:
    """The part of a ``tokenizer.json`` the analysis reads: the model, and for BPE its merges
    as a dictionary (rule ``i`` = the file's ``i``-th merge, duplicates dropped as HF does)."""

    source: str
    model_type: str  # "BPE", "WordPiece", "Unigram", "WordLevel"
    n_vocab: int
    rules: mr.Dictionary | None = None  # BPE only
    #: merges in the file; duplicates: earlier copies of a pair listed again later
    n_merges: int = 0
    duplicates: int = 0
    byte_level: bool = False
    ignore_merges: bool = False
    byte_fallback: bool = False


def looks_like_tokenizer_json(head: bytes) -> bool:
    """Whether a file starting with ``head`` is JSON (a ``tokenizer.json``), not a rule file.

    >>> looks_like_tokenizer_json(b'\\xef\\xbb\\xbf {"version": "1.0"'), looks_like_tokenizer_json(b"a b")
    (True, False)

    Runtime complexity: ``O(len(head))``.
    """
    return head.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"{")


def _has_byte_level(spec: Any) -> bool:
    """A ``ByteLevel`` step anywhere in a pre-tokenizer spec (a ``Sequence`` included)."""
    if isinstance(spec, Mapping):
        if spec.get("type") == "ByteLevel":
            return True
        return any(_has_byte_level(s) for s in spec.get("pretokenizers") or ())
    return False


def _merge_pair(m: Any, k: int, source: str) -> tuple[str, str]:
    """Merge number ``k`` (0-based) of the file as ``(a, b)``, as HF reads it."""
    if isinstance(m, str):
        parts = m.split(" ")
        if len(parts) == 2 and all(parts):
            return parts[0], parts[1]
    elif (isinstance(m, Sequence) and len(m) == 2
          and all(isinstance(x, str) and x for x in m)):
        return m[0], m[1]
    raise ValueError(f"{source}: model.merges[{k}] is {m!r}: a merge is \"a b\" (one space) or "
                     "[\"a\", \"b\"]; HuggingFace tokenizers refuses this file too")


def read_model(data: Mapping[str, Any], *, source: str) -> TokenizerJsonModel:
    """The model of an already-parsed ``tokenizer.json`` (see :class:`TokenizerJsonModel`).

    >>> m = read_model({"model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2},
    ...                           "merges": ["a b", ["a", "b"]]}}, source="t.json")
    >>> m.rules.rules, m.n_merges, m.duplicates
    ((('a', 'b'),), 2, 1)

    Raises ``ValueError`` naming ``source`` for what HuggingFace refuses too (a merge whose
    parts or result are not in the vocabulary) and for BPE options the analysis does not model.

    Runtime complexity: ``O(Σ |ab|)`` over the merges.
    """
    model = data.get("model") if isinstance(data, Mapping) else None
    if not isinstance(model, Mapping):
        raise ValueError(f"{source}: no \"model\" object: not a tokenizer.json (pass a "
                         "HuggingFace tokenizer.json, a rule file or a .model file)")
    vocab = model.get("vocab")
    mtype = model.get("type")
    if mtype is None and isinstance(vocab, Mapping) and "merges" in model:
        mtype = "BPE"  # old files omit the type
    if not isinstance(mtype, str):
        raise ValueError(f"{source}: model.type is {mtype!r}: expected BPE, WordPiece, Unigram "
                         "or WordLevel")
    n_vocab = len(vocab) if isinstance(vocab, (Mapping, list)) else 0
    if mtype != "BPE":
        return TokenizerJsonModel(source, mtype, n_vocab)
    if not isinstance(vocab, Mapping):
        raise ValueError(f"{source}: model.vocab is not an object of token -> id")
    for opt in ("continuing_subword_prefix", "end_of_word_suffix"):
        if model.get(opt):
            raise ValueError(f"{source}: model.{opt} is {model[opt]!r}: merges then do not "
                             "concatenate their parts; analyze does not implement it")
    merges = model.get("merges") or []
    pairs = [_merge_pair(m, k, source) for k, m in enumerate(merges)]
    for k, (a, b) in enumerate(pairs):
        for tok in (a, b, a + b):
            if tok not in vocab:
                raise ValueError(f"{source}: model.merges[{k}] {a!r} {b!r}: {tok!r} is not in "
                                 "model.vocab; HuggingFace tokenizers refuses this file too")
    last = {p: k for k, p in enumerate(pairs)}  # HF's merge map: a later copy overwrites
    kept = [k for k, p in enumerate(pairs) if last[p] == k]
    return TokenizerJsonModel(
        source, "BPE", n_vocab, mr.Dictionary.of(pairs[k] for k in kept), n_merges=len(pairs),
        duplicates=len(pairs) - len(kept), byte_level=_has_byte_level(data.get("pre_tokenizer")),
        ignore_merges=bool(model.get("ignore_merges")),
        byte_fallback=bool(model.get("byte_fallback")),
    )


def load_model(path: str | os.PathLike[str]) -> TokenizerJsonModel:
    """:func:`read_model` of the file ``path``, read with the vocabulary size bound
    (``LIVETOK_MAX_VOCAB_BYTES``) and the JSON depth bound of :mod:`livetok.incremental.vocab.readers`.

    Runtime complexity: ``O(file size)``.
    """
    from ..vocab.readers import MAX_JSON_DEPTH, check_json_depth, read_limited, vocabulary_limit

    name = os.fspath(path)
    raw = read_limited(path, vocabulary_limit(), what="tokenizer.json", env=_LIMIT_ENV,
                       error=ValueError)
    check_json_depth(raw, MAX_JSON_DEPTH, name, ValueError)
    try:
        data = json.loads(raw.decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"{name}: not a JSON tokenizer.json: {e}") from None
    return read_model(data, source=name)


# --- the analysis ---------------------------------------------------------------------------


@dataclass
class MergeSemantics:
    """What :func:`analyze_merges` found; rule numbers are 0-based indices into the dictionary."""

    n_rules: int
    #: Definition 5's violations, all of them
    violations: list[mr.Violation]
    #: Corollary 1, SentencePiece semantics (None: not needed, the dictionary is proper)
    useful_sp: list[bool] | None = None
    #: rules HuggingFace (Definition 4) applies on their own string that SentencePiece never applies
    hf_only: list[int] = field(default_factory=list)
    #: Definition 5's violations of the SentencePiece-useful rules, in the numbering of the
    #: whole dictionary
    useful_violations: list[mr.Violation] = field(default_factory=list)
    #: "proper", "useful proper", "witness" or "not found"
    verdict: str = "proper"
    witness: str | None = None
    sp: mr.Tokenization | None = None
    hf: mr.Tokenization | None = None
    candidates: int = 0

    @property
    def proper(self) -> bool:
        return not self.violations


def witness_candidates(D: mr.Dictionary, violations: Sequence[mr.Violation]) -> Iterator[str]:
    """Strings where Lemma 1's situation can show: for each violation, rule ``j = u ⋄ v`` whose
    token is made by the lower-priority rule ``i = a ⋄ b``, the concatenations of two and three
    of ``u, v, a, b`` (the paper's Example 3 is ``u b ... = ab·ab``, Example 2 ``v u v``), each
    string once.

    >>> D = mr.Dictionary.of([("ab", "a"), ("a", "b")])  # Example 3
    >>> next(w for w in witness_candidates(D, mr.proper_violations(D))
    ...      if mr.tokenize_sp(D, w) != mr.tokenize_hf(D, w))
    'abab'

    Runtime complexity: ``O(|violations|)`` strings of at most ``3 · max |uv|`` symbols.
    """
    seen: set[str] = set()
    for x in violations:
        if x.produced_by is None:
            continue  # the rule can never apply: its token is never made
        parts = list(dict.fromkeys((*D.rules[x.rule], *D.rules[x.produced_by])))
        for n in (2, 3):
            for combo in itertools.product(parts, repeat=n):
                w = "".join(combo)
                if w not in seen:
                    seen.add(w)
                    yield w


def _remap(v: mr.Violation, index: Sequence[int]) -> mr.Violation:
    return mr.Violation(index[v.rule], v.side, v.token,
                        None if v.produced_by is None else index[v.produced_by])


def analyze_merges(D: mr.Dictionary, *, steps: mr.StepBudget | None = None,
                   max_candidates: int = 20_000) -> MergeSemantics:
    """Can Definition 3 (SentencePiece) and Definition 4 (HuggingFace) tokenize differently
    with ``D``? (see the module docstring for the three stages).

    >>> analyze_merges(mr.Dictionary.of([("a", "b"), ("ab", "c")])).verdict
    'proper'
    >>> a = analyze_merges(mr.Dictionary.of([("ab", "a"), ("a", "b")]))  # Example 3
    >>> a.verdict, a.witness, mr.show(a.sp), mr.show(a.hf)
    ('witness', 'abab', 'aba ⋄ b', 'ab ⋄ ab')

    ``steps`` bounds the work (:class:`~.merge_rules.AnalysisStopped` says where it stopped);
    the witness search tries at most ``max_candidates`` strings.

    Runtime complexity: ``O(||D||)`` when proper; else ``O(Σ |uv|^2)`` for Corollary 1 plus
    ``O(max_candidates · max|uv|^2)`` for the search.
    """
    out = MergeSemantics(len(D), mr.proper_violations(D))
    if out.proper:
        return out
    done = 0

    def where_sp() -> str:
        return (f"checking which rules are useful (Corollary 1, SentencePiece): {done:,} of "
                f"{len(D):,} checked")

    useful: list[bool] = []
    for i in range(len(D)):
        useful.append(mr.applied_on_own_string(D, i, "sp", steps=steps, where=where_sp))
        done = i + 1
    out.useful_sp = useful
    done = 0
    rest = [i for i, ok in enumerate(useful) if not ok]

    def where_hf() -> str:
        return (f"checking that HuggingFace (Definition 4) applies none of the {len(rest):,} "
                f"rules SentencePiece never applies (Corollary 1): {done:,} checked")

    for done, i in enumerate(rest):
        if mr.applied_on_own_string(D, i, "hf", steps=steps, where=where_hf):
            out.hf_only.append(i)
    index = [i for i, ok in enumerate(useful) if ok]
    U = mr.Dictionary(tuple(D.rules[i] for i in index))
    out.useful_violations = [_remap(v, index) for v in mr.proper_violations(U)]
    if not out.useful_violations and not out.hf_only:
        out.verdict = "useful proper"
        return out
    # a witness: Lemma 1's proof needs a violation among the rules that are applied
    search = out.useful_violations or out.violations

    def where_w() -> str:
        return (f"searching for a string where SentencePiece and HuggingFace differ (Lemma 1): "
                f"none among the first {out.candidates:,} candidates")

    for w in itertools.islice(witness_candidates(D, search), max_candidates):
        sp = mr._last(mr._sp_steps(D, w, steps, where_w), w)
        hf = mr._last(mr._hf_steps(D, w, steps, where_w), w)
        out.candidates += 1
        if sp != hf:
            w = _shrink(D, w, steps, where_w)
            out.verdict, out.witness = "witness", w
            out.sp, out.hf = mr.tokenize_sp(D, w), mr.tokenize_hf(D, w)
            return out
    out.verdict = "not found"
    return out


def _shrink(D: mr.Dictionary, w: str, steps: mr.StepBudget | None,
            where: Callable[[], str]) -> str:
    """A shorter witness: drop single symbols (left to right, repeatedly) while the
    SentencePiece and HuggingFace tokenizations still differ (``ab...`` of 60 newlines in
    Gemma 3 becomes 32). Runtime complexity: ``O(len(w)^2)`` tokenizations at most."""
    changed = True
    while changed:
        changed = False
        for k in range(len(w)):
            t = w[:k] + w[k + 1:]
            if (mr._last(mr._sp_steps(D, t, steps, where), t)
                    != mr._last(mr._hf_steps(D, t, steps, where), t)):
                w, changed = t, True
                break
    return w


def bytes_of(s: str) -> bytes | None:
    """The bytes a byte-level string (GPT-2's byte-to-unicode characters) stands for, or None
    when it has other characters.

    >>> bytes_of("ĠhelloĊ")
    b' hello\\n'

    Runtime complexity: ``O(len(s))``.
    """
    from ..hf.model_section import bytes_to_unicode

    table = {c: b for b, c in bytes_to_unicode().items()}
    try:
        return bytes(table[c] for c in s)
    except KeyError:
        return None
