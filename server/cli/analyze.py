"""``livetok analyze ENCODING|FILE``: what *Formalizing BPE Tokenization* says about a dictionary.

For an explicit dictionary (a text file, one rule ``u v`` per line in priority order, ``#``
comments) the report answers, with the paper's numbering:

* is it proper (Definition 5, decided as in Remark 2)? which rules break it?
* which rules are never useful (Corollary 1)?
* can the SentencePiece and HuggingFace semantics differ (Lemma 1)? with a witness string;
* the chain-length bound of Remark 5 and the lookahead bounds (Definition 7, Theorem 2).

For a HuggingFace ``tokenizer.json`` with a BPE model the rules are the file's merges in their
order (:mod:`livetok.incremental.analysis.hf_merges`): properness, the rules ever applied
(Corollary 1) and whether they are proper, whether Definition 3 and Definition 4 can differ
(proved equal, or a witness string, or none found in a bounded search), and which of the two
the file's runtime (HuggingFace ``tokenizers``) follows. WordPiece and Unigram models have no
merge rules: one line says so.

For a BPE vocabulary (a SentencePiece ``.model`` file or a registered encoding name) the rules
are all splits of all pieces; the report gives properness, unreachable pieces and never-useful
rules (the chain bound is quadratic in the rule count and is not computed there).

The handler only loads and prints; the analysis is :mod:`livetok.incremental.analysis.merge_rules`.

The analyses cost a high power of the rule lengths (16 rules ``a a``, ``aa aa``, ... make a
rule 65,536 symbols long), so they run on a step budget, ``--max-steps`` (default
``DEFAULT_MAX_STEPS``, a few seconds; 0: no bound). When it runs out, the lines printed so far
are what was shown, and one line on stderr says where the analysis stopped and what it had
found by then; exit status 2, as for a bad file (``livetok analyze: FILE: stopped after N
steps while ...``).
"""

from __future__ import annotations

import argparse
import codecs
import os
import stat
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from livetok.incremental import Encoding, PieceEncoding
from livetok.incremental.analysis import merge_rules as mr
from livetok.incremental.vocab.readers import read_limited
from livetok.incremental.env_limits import size_limit

from livetok.server.cli.main import INPUT_ERRORS, Subparsers, input_error

if TYPE_CHECKING:
    from livetok.incremental.analysis import hf_merges

#: what a bad target raises: :data:`INPUT_ERRORS` and ``KeyError``
_INPUT_ERRORS: tuple[type[BaseException], ...] = (*INPUT_ERRORS, KeyError)

#: explicit dictionaries with more rules than this skip the O(|D|^2) chain bound
CHAIN_LIMIT = 3000
#: the default ``--max-steps``: above what the largest shipped vocabulary takes (o200k_base:
#: 24.2 M steps, 4 s here; cl100k_base 10.9 M, mistral-7b-v0.1 1.9 M), and about 4 s for the
#: worst inputs measured (16 doubling rules: 8.5 M steps a second; 2-23 M for the others);
#: also above every real tokenizer.json measured (gpt-oss: 28.5 M, Llama 3 21.6 M, Gemma 3
#: 19.5 M; docs/merge-semantics.md).
#: Steps are counted, not timed, so where an analysis stops does not depend on the machine.
DEFAULT_MAX_STEPS = 30_000_000
#: the most bytes a rule file may hold (``LIVETOK_MAX_RULES_BYTES``): rule files are small,
#: hand-written dictionaries; vocabularies come as .model files or encoding names
MAX_RULES_BYTES = 16 << 20


def add_parser(sub: Subparsers) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "analyze",
        help="analyse a BPE dictionary: proper? useful rules? SP vs HF? lookahead?",
        description="Report what 'Formalizing BPE Tokenization' says about a dictionary: "
        "TARGET is a rule file (one 'u v' per line, highest priority first), a HuggingFace "
        "tokenizer.json, a SentencePiece .model file, or an encoding name such as "
        "mistral-7b-v0.1.",
    )
    p.add_argument("target", metavar="ENCODING|FILE")
    p.add_argument("--max-len", type=int, default=10,
                   help="search strings up to this length for an SP/HF difference (default 10)")
    p.add_argument("--budget", type=int, default=20000,
                   help="at most this many candidate strings in that search (default 20000)")
    p.add_argument("--max-steps", type=int, default=DEFAULT_MAX_STEPS, metavar="N",
                   help=f"stop the analysis after N steps, saying where and what it had shown "
                   f"(default {DEFAULT_MAX_STEPS:,}, a few seconds; 0: no bound)")
    return p


#: how many bytes of a file are read to tell a rule file from a SentencePiece .model file
_SNIFF_BYTES = 64


def _is_model_file(path: Path) -> bool:
    """Whether ``path`` is a SentencePiece ``.model`` file (protobuf): named ``.model``, or its
    first bytes are not UTF-8 text or hold a NUL; else it is read as a rule file."""
    with path.open("rb") as f:
        head = f.read(_SNIFF_BYTES)
    # subtle: the cut may split a character; an incremental decoder accepts an unfinished
    # last character, unless the file ends there (a short read)
    decoder = codecs.getincrementaldecoder("utf-8")()
    try:
        decoder.decode(head, final=len(head) < _SNIFF_BYTES)
    except UnicodeDecodeError:
        return True
    return b"\x00" in head or path.suffix == ".model"


def _is_tokenizer_json(path: Path) -> bool:
    from livetok.incremental.analysis.hf_merges import looks_like_tokenizer_json

    with path.open("rb") as f:
        return looks_like_tokenizer_json(f.read(64))


def _tok(t: str) -> str:
    """A token for a report line: ``'\\n'×31`` for a long run of one symbol, else its repr."""
    return f"{t[0]!r}×{len(t)}" if len(t) > 4 and t == t[0] * len(t) else repr(t)


def _tokens(ts: tuple[str, ...]) -> str:
    return " ⋄ ".join(_tok(t) for t in ts)


def _examples(D: mr.Dictionary, viol: list[mr.Violation], out: Callable[[str], None],
              n: int = 5) -> None:
    """The first ``n`` violations, each with its rule, long runs shortened."""
    for v in viol[:n]:
        u, w = D.rules[v.rule]
        by = ("no rule produces it" if v.produced_by is None else
              f"only rule {v.produced_by + 1} (lower priority) produces it")
        out(f"  rule {v.rule + 1} ({_tok(u)} ⋄ {_tok(w)}): {v.side} token {_tok(v.token)}: {by}")
    if len(viol) > n:
        out(f"  ... and {len(viol) - n:,} more")


#: what a tokenizer.json model without merges does instead
_NO_MERGES = {
    "WordPiece": "greedy longest match, LinMaxMatch",
    "Unigram": "Viterbi over piece scores",
    "WordLevel": "one vocabulary lookup per pre-token",
}


def report_tokenizer_json(m: "hf_merges.TokenizerJsonModel", out: Callable[[str], None], *,
                          budget: int = 20000, steps: mr.StepBudget | None = None
                          ) -> "hf_merges.MergeSemantics | None":
    """Print the report for a ``tokenizer.json`` (see the module docstring) and return the
    analysis (None for a model without merges); ``steps`` bounds the work as for
    :func:`report_dictionary`."""
    from livetok.incremental.analysis import hf_merges

    D = m.rules
    if D is None:
        out(f"tokenizer.json {m.source}: model {m.model_type}; {m.n_vocab:,} vocabulary "
            "entries")
        out(f"merge semantics (Definitions 3-5, Lemma 1): do not apply: a {m.model_type} model "
            f"has no merge rules ({_NO_MERGES.get(m.model_type, 'another algorithm')}); nothing "
            "else is checked")
        return None
    out(f"tokenizer.json {m.source}: model BPE; {m.n_vocab:,} vocabulary entries; "
        f"{m.n_merges:,} merges, the dictionary's rules in priority order (Definition 1); "
        f"max |uv| = {D.max_rule_len}")
    if m.byte_level:
        out("symbols: GPT-2's byte-to-unicode characters, one per byte ('Ġ' is a space), as "
            "the merges are written; witnesses are shown with their bytes")
    if m.duplicates:
        out(f"duplicate merges: {m.duplicates:,} (HuggingFace keeps a pair's last rank, and "
            "so does this analysis: rule numbers below skip the earlier copies)")
    viol = mr.proper_violations(D)
    if not viol:
        out("proper (Definition 5): yes")
    else:
        out(f"proper (Definition 5): no: {len(viol):,} rule tokens are made only by "
            "lower-priority rules, e.g.")
        _examples(D, viol, out)
    a = hf_merges.analyze_merges(D, steps=steps, max_candidates=budget)
    if a.useful_sp is not None:
        n_useful = sum(a.useful_sp)
        hf_note = (f"HuggingFace (Definition 4) applies none of them" if not a.hf_only else
                   f"HuggingFace (Definition 4) applies {len(a.hf_only):,} of them on their own "
                   f"string, e.g. rule {a.hf_only[0] + 1} "
                   f"({_tok(D.rules[a.hf_only[0]][0])} ⋄ {_tok(D.rules[a.hf_only[0]][1])})")
        out(f"never useful (Corollary 1): {len(D) - n_useful:,} of {len(D):,} rules are never "
            f"applied (SentencePiece, Definition 3); {hf_note}")
        if not a.useful_violations:
            out(f"useful rules only ({n_useful:,}): proper (Definition 5)")
        else:
            out(f"useful rules only ({n_useful:,}): not proper: {len(a.useful_violations):,} "
                "rule tokens are made only by lower-priority useful rules, e.g.")
            _examples(D, a.useful_violations, out)
    if a.verdict == "proper":
        out("SP vs HF (Lemma 1): always equal, the dictionary is proper")
    elif a.verdict == "useful proper":
        out("SP vs HF (Lemma 1): always equal: the rules ever applied form a proper dictionary "
            "and dropping the others changes neither semantics")
    elif a.verdict == "witness" and a.witness is not None and a.sp and a.hf:
        w = a.witness
        raw = hf_merges.bytes_of(w) if m.byte_level else None
        shown = _tok(w) + (f" (bytes {raw!r})" if raw is not None else "")
        out(f"SP vs HF (Lemma 1): differ on {shown} ({len(w)} symbols): SP {_tokens(a.sp)}, "
            f"HF {_tokens(a.hf)}")
    else:
        out(f"SP vs HF (Lemma 1): may differ (not proper); no difference on the "
            f"{a.candidates:,} strings tried, built from the rules that break properness "
            "(--budget)")
    out("this file's semantics: HuggingFace tokenizers merges the highest-priority pair "
        "first, leftmost on ties: Definition 3 over the merge ranks, not Definition 4"
        + ("; with ignore_merges a pre-token that is a vocabulary entry is that entry"
           if m.ignore_merges else ""))
    return a


def report_dictionary(D: mr.Dictionary, out: Callable[[str], None], *, max_len: int = 10,
                      budget: int = 20000, steps: mr.StepBudget | None = None) -> None:
    """Print the report for an explicit dictionary (see module docstring); ``steps`` bounds
    the work (:class:`~livetok.incremental.analysis.merge_rules.AnalysisStopped` when it runs out)."""
    out(f"rules: {len(D)}; alphabet: {D.alphabet!r}; max |uv| = {D.max_rule_len}")
    viol = mr.proper_violations(D)
    if viol:
        out("proper (Definition 5): no")
        for v in viol:
            out(f"  {v}")
    else:
        out("proper (Definition 5): yes")
    for sem, label in (("sp", "SentencePiece"), ("hf", "HuggingFace")):
        useful = mr.useful_rules(D, sem, steps=steps)  # type: ignore[arg-type]
        useless = [i for i, u in enumerate(useful) if not u]
        names = ", ".join(f"{i + 1} ({D.rules[i][0]} ⋄ {D.rules[i][1]})" for i in useless)
        out(f"never useful (Corollary 1, {label}): {names or 'none'}")
    if not viol:
        out("SP vs HF (Lemma 1): always equal, the dictionary is proper")
    else:
        w = mr.find_semantics_difference(D, max_len=max_len, budget=budget, steps=steps)
        if w is None:
            out(f"SP vs HF (Lemma 1): not proper, so they may differ; no difference found "
                f"on strings up to length {max_len}")
        else:
            out(f"SP vs HF (Lemma 1): differ on {w!r}: SP {mr.show(mr.tokenize_sp(D, w))}, "
                f"HF {mr.show(mr.tokenize_hf(D, w))}")
    suff = mr.sufficient_lookahead(D)
    if len(D) > CHAIN_LIMIT:
        out(f"chain length (Remark 5): not computed (more than {CHAIN_LIMIT} rules); "
            f"c(D) <= |D| = {len(D)}")
        bound = suff
    else:
        c = mr.chain_length_bound(D, steps=steps)
        bound = c * D.max_rule_len
        out(f"chain length (Remark 5): c(D) <= {c} (|D| = {len(D)})")
    if viol:
        out(f"lookahead (Theorem 2): does not apply, the dictionary is not proper "
            f"(for a proper one: l(D) <= {bound}, Definition 7: {suff})")
    else:
        out(f"lookahead (Theorem 2, Remark 5): l(D) <= {bound} symbols "
            f"(Definition 7's sufficient lookahead: {suff})")


def _vocabulary_of(target: str,
                   steps: mr.StepBudget | None) -> tuple[str, mr.VocabularyAnalysis]:
    """The name and the analysis of a .model file's or an encoding's vocabulary, read as
    ``{piece: key}`` (lower key merges first)."""
    path = Path(target)
    if os.path.exists(target):
        from livetok.incremental.sentencepiece.encoding import load_sentencepiece

        enc: PieceEncoding = load_sentencepiece(path)
    else:
        from livetok.incremental import get_encoding

        enc = get_encoding(target)
    from livetok.incremental.sentencepiece.encoding import SentencePieceEncoding

    if isinstance(enc, SentencePieceEncoding):  # higher score first
        prio = {p: enc._neg_scores[i] for p, i in enc._piece_ids.items()}
        return enc.name, mr.analyze_vocabulary(prio, steps=steps)
    if isinstance(enc, Encoding) and not enc.tiktoken_equivalent:
        raise ValueError(
            f"{target}: a tokenizer.json file's merges (each pair its own priority): analyse "
            f"the file itself, livetok analyze {enc.source}"
        )
    if not isinstance(enc, Encoding):
        raise ValueError(
            f"{target}: this encoding is not a merge-rule BPE (WordPiece?); analyse a BPE "
            "encoding, a SentencePiece .model file or a rule file"
        )
    return enc.name, mr.analyze_vocabulary(enc.mergeable_ranks, steps=steps)


def report_vocabulary(name: str, a: mr.VocabularyAnalysis, out: Callable[[str], None]) -> None:
    """Print the report for a whole BPE vocabulary from its analysis."""
    out(f"vocabulary {name}: {a.n_pieces} pieces; {a.n_rules} rules (every split of every "
        f"piece into two tokens); max |uv| = {a.max_rule_len}")
    if a.proper:
        out("proper (Definition 5): yes")
        out("SP vs HF (Lemma 1): always equal, the dictionary is proper")
    else:
        n = sum(1 for v in a.violations if not v.startswith("..."))
        extra = a.violations[-1] if a.violations[-1].startswith("...") else ""
        total = n + (int(extra.split()[1]) if extra else 0)
        out(f"proper (Definition 5): no: {total} rule tokens are not made by a higher-priority "
            f"rule ({a.tie_violations} only because of equal scores)")
        for v in a.violations:
            out(f"  {v}")
        out("SP vs HF (Lemma 1): not guaranteed equal (not proper)")
    out(f"unreachable pieces (tokenizing the piece does not produce it): {len(a.unreachable)}"
        + (f", e.g. {a.unreachable[:5]!r}" if a.unreachable else ""))
    out(f"never useful rules (Corollary 1): {a.useless_rules} of {a.n_rules}")
    n_useful = a.n_rules - a.useless_rules
    if a.n_useful_violations == 0:
        out(f"useful rules only ({n_useful}; dropping the others changes no SentencePiece "
            "tokenization): proper, so SP and HF agree with them (Lemma 1)")
    else:
        out(f"useful rules only ({n_useful}): not proper: {a.n_useful_violations} tokens made "
            f"by a rule of lower or equal priority ({a.useful_tie_violations} equal)")
        for v in a.useful_violations:
            out(f"  {v}")
    out(f"lookahead (Definition 7): |D| · max|uv| = {a.n_rules * a.max_rule_len}; the chain "
        "bound of Remark 5 is not computed for whole vocabularies")


def _read_rules(path: Path) -> mr.Dictionary:
    """The dictionary of a rule file, read with a bound (``LIVETOK_MAX_RULES_BYTES``)."""
    env = "LIVETOK_MAX_RULES_BYTES"
    raw = read_limited(path, size_limit(env, MAX_RULES_BYTES), what="rule file", env=env,
                       error=mr.DictionaryFormatError)
    try:
        return mr.Dictionary.parse(raw.decode("utf-8"))
    except mr.DictionaryFormatError as e:
        raise mr.DictionaryFormatError(f"{path}: {e}") from None


def run(args: argparse.Namespace) -> int:
    out = print
    target = args.target
    path = Path(target)
    steps = mr.StepBudget(args.max_steps or None)
    if args.max_steps < 0:
        print("livetok analyze: --max-steps takes a number of steps, or 0 for no bound",
              file=sys.stderr)
        return 2
    try:
        if not path.exists() and os.sep in target:  # a path, not an encoding name
            raise FileNotFoundError(2, "No such file or directory", target)
        if path.exists() and not stat.S_ISREG(path.stat().st_mode):
            raise ValueError(f"{target}: not a regular file; pass a rule file, a tokenizer.json, a .model file "
                             "or an encoding name")
        if path.is_file() and _is_tokenizer_json(path):
            from livetok.incremental.analysis import hf_merges

            report_tokenizer_json(hf_merges.load_model(path), out, budget=args.budget,
                                  steps=steps)
        elif path.is_file() and not _is_model_file(path):
            D = _read_rules(path)
            out(f"dictionary {target}")
            report_dictionary(D, out, max_len=args.max_len, budget=args.budget, steps=steps)
        else:
            report_vocabulary(*_vocabulary_of(target, steps), out)
    except mr.AnalysisStopped as e:
        sys.stdout.flush()
        print(f"livetok analyze: {target}: {e}; the lines above are what it had shown "
              f"(--max-steps {args.max_steps:,}; 0 for no bound)", file=sys.stderr)
        return 2
    except BrokenPipeError:
        raise
    except _INPUT_ERRORS as e:
        sys.stdout.flush()
        return input_error("analyze", e, target if path.exists() else None)
    return 0
