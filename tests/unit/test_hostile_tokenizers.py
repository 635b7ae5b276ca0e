"""A tokenizer.json is untrusted input (issue 26): what a hostile one can make livetok do.

Each attack is built here as a small ``tokenizer.json`` in ``tmp_path`` (no attack file is
committed), loaded with ``livetok.incremental.get_encoding(path)`` and used on its hostile text
in a subprocess under an address-space limit of 1 GB and a 60 s timeout (a hang guard only):
the outcome is a :class:`~livetok.incremental.vocab.readers.VocabularyError` with a one-line message
that names the file and the limit (or a correct, bounded result), never a hang or a
``MemoryError``. Measured before the bounds (2 cores): a Split or Replace regex ``(a|aa)+$``
on 49 characters ran forever; 24 chained ``Replace "a" -> "aa"`` took 1-3.7 GB and 10-51 s;
``Replace "" -> 1000 characters`` and ``a{300}{300}{300}`` ran out of memory; a
200,000-word alternation loaded in 94 s and 1,000,000 added tokens in 190 s. The limits and
their variables are listed in docs/tokenizer-json.md, "Limits".
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from livetok.incremental.hf import reader
from livetok.incremental.vocab.readers import VocabularyError
from livetok.incremental.regex import UnsafePattern, check

#: the address space each run may use (Linux)
AS_LIMIT = 1 << 30
#: only a hang guard: every case ends in a few seconds
TIMEOUT = 60

#: what the subprocess runs: load the file, encode ``unit * times + tail``, print the outcome
#: and the CPU seconds it took (``load``, ``seconds``: the child's own CPU time, which other
#: processes on a busy machine do not lengthen as they do the wall clock)
_CHILD = r"""
import json, sys, time
from livetok.incremental import get_encoding
from livetok.incremental.vocab.readers import VocabularyError

path, spec = sys.argv[1], json.loads(sys.argv[2])
text = spec["unit"] * spec["times"] + spec["tail"]
start = time.process_time()
try:
    enc = get_encoding(path)
    loaded = time.process_time() - start
    ids = enc.encode(text)
    print(json.dumps({"ids": ids, "load": loaded, "seconds": time.process_time() - start}))
except VocabularyError as exc:
    print(json.dumps({"error": type(exc).__name__, "message": str(exc),
                      "seconds": time.process_time() - start}))
"""


def _limit_memory() -> None:  # runs in the child, before exec
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (AS_LIMIT, AS_LIMIT))


def run(path: Path, unit: str, times: int = 1, tail: str = "",
        env: dict[str, str] | None = None) -> dict[str, Any]:
    """Load ``path`` and encode ``unit * times + tail`` in a subprocess under the limits; the
    outcome as the child printed it (``ids``, or ``error`` and ``message``)."""
    cache = path.parent / "cache"
    r = subprocess.run(
        [sys.executable, "-c", _CHILD, str(path),
         json.dumps({"unit": unit, "times": times, "tail": tail})],
        capture_output=True, text=True, timeout=TIMEOUT, stdin=subprocess.DEVNULL,
        env={**os.environ, "LIVETOK_CACHE_DIR": str(cache), **(env or {})},
        preexec_fn=_limit_memory if sys.platform.startswith("linux") else None,
    )
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr[-3000:]
    out: dict[str, Any] = json.loads(r.stdout)
    return out


def refused(out: dict[str, Any], path: Path, *words: str) -> str:
    """Assert the one-line refusal naming the file (and ``words``); return the message."""
    assert "error" in out, f"not refused: {len(out['ids'])} ids in {out['seconds']:.1f} s (CPU)"
    message = str(out["message"])
    assert "\n" not in message, message
    assert message.startswith(f"{path}: "), message
    for w in words:
        assert w in message, (w, message)
    return message


#: a byte-free BPE over printable ASCII (every character of the texts is a token)
_VOCAB = {chr(c): i for i, c in enumerate(range(32, 127))}
_VOCAB["<unk>"] = len(_VOCAB)


def tokenizer(tmp_path: Path, *, pre: Any = None, norm: Any = None,
              added: list[dict[str, Any]] | None = None, name: str = "tokenizer.json") -> Path:
    """A small tokenizer.json with the given pre-tokenizer, normalizer and added tokens."""
    data = {"version": "1.0", "added_tokens": added or [], "normalizer": norm,
            "pre_tokenizer": pre,
            "model": {"type": "BPE", "vocab": _VOCAB, "merges": [], "unk_token": "<unk>"}}
    path = tmp_path / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def split(pattern: str) -> dict[str, Any]:
    return {"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Isolated",
            "invert": False}


def replace(pattern: str, content: str, kind: str = "String") -> dict[str, Any]:
    return {"type": "Replace", "pattern": {kind: pattern}, "content": content}


def hf_ids(path: Path, text: str) -> list[int]:
    """HuggingFace ``tokenizers``' ids of ``text`` with the same file."""
    tokenizers = pytest.importorskip("tokenizers")
    tok = tokenizers.Tokenizer.from_file(str(path))
    return list(tok.encode(text, add_special_tokens=False).ids)


# -- 1. catastrophic backtracking ----------------------------------------------------------


@pytest.mark.parametrize("pattern", ["(a|aa)+$", "(a+)+$", "(a*)*$", "(?:a|a)*?!",
                                     "(a{1,3}){1,50}$"])
def test_a_split_regex_that_backtracks_exponentially_is_refused_at_load(
        tmp_path: Path, pattern: str) -> None:
    path = tokenizer(tmp_path, pre=split(pattern))
    out = run(path, "a", 48, "!")
    refused(out, path, "pre-tokenizer Split pattern", "refused")
    assert out["seconds"] < 5


def test_a_replace_regex_that_backtracks_exponentially_is_refused_at_load(tmp_path: Path) -> None:
    path = tokenizer(tmp_path, norm=replace("(a|aa)+$", "x", "Regex"))
    refused(run(path, "a", 48, "!"), path, "normalizer Replace Regex", "(a|aa)+")


def test_a_decoder_regex_that_backtracks_is_refused_by_decode_only(tmp_path: Path) -> None:
    """A decoder is not run by counting: the file loads and counts, ``decode`` refuses."""
    from livetok.incremental.hf.reader import load_tokenizer_json

    hostile = "a" * 48 + "!"  # one token: the decoder runs on each token's text
    added = [{"id": len(_VOCAB), "content": hostile, "single_word": False, "lstrip": False,
              "rstrip": False, "normalized": False, "special": True}]
    data = json.loads(tokenizer(tmp_path, added=added).read_text(encoding="utf-8"))
    data["decoder"] = replace("(a|aa)+$", "x", "Regex")
    path = tmp_path / "decoder.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    enc = load_tokenizer_json(path)
    ids = enc.encode("b" + hostile)
    assert ids == [_VOCAB["b"], len(_VOCAB)]
    with pytest.raises(VocabularyError, match="decoder Replace Regex .* refused"):
        enc.decode(ids)  # type: ignore[attr-defined]  (before the bound: forever)


def test_a_polynomial_pattern_runs_under_a_time_budget(tmp_path: Path) -> None:
    """A shape the static check lets through (like the Hub's ``([^/]+\\.?)+``) but whose
    backtracking grows faster than the text: its scans run under ``LIVETOK_MAX_REGEX_MS``
    (here lowered to 100 ms a scan and per 10,000 characters). Without the budget this text
    takes minutes (cubic)."""
    path = tokenizer(tmp_path, pre=split("(?:a+b?)+$"))
    assert check("(?:a+b?)+$") is not None  # a budgeted shape
    env = {"LIVETOK_MAX_REGEX_MS": "100"}
    out = run(path, "a", 6000, "!", env=env)
    refused(out, path, "pre-tokenizer Split pattern", "time budget", "LIVETOK_MAX_REGEX_MS")
    assert out["seconds"] < 10
    # the same file on ordinary text: exact
    ok = run(path, "aab a", 200, "\n", env=env)
    assert ok["ids"] == hf_ids(path, "aab a" * 200 + "\n")


# -- 2. normalizers that multiply the text -------------------------------------------------


def test_chained_replacements_are_stopped_at_the_growth_bound(tmp_path: Path) -> None:
    path = tokenizer(tmp_path, norm={"type": "Sequence",
                                     "normalizers": [replace("a", "aa")] * 24})
    out = run(path, "a", 24_000)
    refused(out, path, "normalizer Sequence step", "LIVETOK_MAX_NORMALIZER_GROWTH")
    assert out["seconds"] < 10


def test_chained_replacements_within_the_bound_count_exactly(tmp_path: Path) -> None:
    """Four doublings (16 times the text) stay under the default bound (64): the ids are
    HuggingFace's, 384,000 of them."""
    path = tokenizer(tmp_path, norm={"type": "Sequence",
                                     "normalizers": [replace("a", "aa")] * 4})
    out = run(path, "a", 24_000)
    assert out["ids"] == hf_ids(path, "a" * 24_000)
    assert len(out["ids"]) == 16 * 24_000
    # a lower bound refuses the same file on the same text
    refused(run(path, "a", 24_000, env={"LIVETOK_MAX_NORMALIZER_GROWTH": "8"}), path,
            "LIVETOK_MAX_NORMALIZER_GROWTH")


@pytest.mark.parametrize("step", [replace("", "b" * 1000), replace("a", "b" * 1000),
                                  replace("a?", "b" * 1000, "Regex"),
                                  {"type": "Prepend", "prepend": "b" * 1000}])
def test_a_step_that_multiplies_the_text_is_refused_at_load(tmp_path: Path,
                                                            step: dict[str, Any]) -> None:
    path = tokenizer(tmp_path, norm=step)
    refused(run(path, "a", 24_000), path, "normalizer", "refused",
            "LIVETOK_MAX_NORMALIZER_GROWTH")


def test_real_normalizers_that_expand_still_work(tmp_path: Path) -> None:
    """NFKC makes U+FDFA 18 characters; with Llama 2's Prepend + Replace after it, the text is
    still under the bound and the ids are HuggingFace's."""
    norm = {"type": "Sequence", "normalizers": [
        {"type": "NFKC"}, {"type": "Prepend", "prepend": "\u2581"}, replace(" ", "\u2581")]}
    path = tokenizer(tmp_path, norm=norm)
    text = "\ufdfa a " * 500
    out = run(path, "\ufdfa a ", 500)
    assert out["ids"] == hf_ids(path, text)


# -- 3. counted repetitions ----------------------------------------------------------------


def test_nested_counted_repetitions_are_refused_before_compiling(tmp_path: Path) -> None:
    path = tokenizer(tmp_path, pre=split("a{300}{300}{300}"))
    out = run(path, "a", 100)
    refused(out, path, "unroll", "LIVETOK_MAX_REGEX_SIZE")
    assert out["seconds"] < 5


# -- 4. size of what is loaded -------------------------------------------------------------


def test_a_huge_alternation_is_refused_quickly(tmp_path: Path) -> None:
    words = "|".join(f"w{i}x" for i in range(200_000))
    path = tokenizer(tmp_path, pre=split(words))
    out = run(path, "w1x", 3)
    refused(out, path, "1,688,889 characters", "LIVETOK_MAX_REGEX_CHARS")
    assert out["seconds"] < 10


def test_an_alternation_under_the_limit_loads_fast_and_splits_exactly(tmp_path: Path) -> None:
    words = "|".join(f"w{i}x" for i in range(1_200))  # 8,089 characters
    path = tokenizer(tmp_path, pre=split(words))
    out = run(path, "w17x w1199x ", 50)
    assert out["ids"] == hf_ids(path, "w17x w1199x " * 50)
    assert out["load"] < 5


def test_many_patterns_are_bounded_in_all(tmp_path: Path) -> None:
    """Twenty patterns of 9,000 characters (10.7 s to load before the bound) exceed the
    characters a file's patterns may have in all; 2,000 steps exceed the steps."""
    many = tokenizer(tmp_path, pre={"type": "Sequence", "pretokenizers": [
        split("x" * 9000 + str(i)) for i in range(20)]})
    refused(run(many, "a b ", 10), many, "180,030 characters in all", "LIVETOK_MAX_REGEX_CHARS")
    steps = tokenizer(tmp_path, name="steps.json", pre={"type": "Sequence", "pretokenizers": [
        split(f"a{i}") for i in range(2000)]})
    refused(run(steps, "a b ", 10), steps, "2,001 steps", "LIVETOK_MAX_PIPELINE_STEPS")


def test_too_many_added_tokens_are_refused(tmp_path: Path) -> None:
    added = [{"id": len(_VOCAB) + i, "content": f"<t{i}>", "single_word": False, "lstrip": False,
              "rstrip": False, "normalized": False, "special": True} for i in range(150_000)]
    path = tokenizer(tmp_path, added=added)
    out = run(path, "a<t5>", 3)
    refused(out, path, "150,000 tokens", "LIVETOK_MAX_ADDED_TOKENS")
    assert out["seconds"] < 20
    # the variable moves the limit both ways
    small = tokenizer(tmp_path, added=added[:20], name="small.json")
    assert run(small, "a<t5>", 3)["ids"] == hf_ids(small, "a<t5>" * 3)
    refused(run(small, "a<t5>", 3, env={"LIVETOK_MAX_ADDED_TOKENS": "10"}), small,
            "20 tokens", "LIVETOK_MAX_ADDED_TOKENS")


# -- 5. the parser's own recursion ---------------------------------------------------------


@pytest.mark.parametrize("pattern", ["(" * 100 + "a" + ")" * 100, "(?i)" * 200 + "a",
                                     "[" * 100 + "a" + "]" * 100])
def test_deep_nesting_is_refused(tmp_path: Path, pattern: str) -> None:
    path = tokenizer(tmp_path, pre=split(pattern))
    refused(run(path, "a", 10), path, "nest", "refused")


@pytest.mark.parametrize("error", [RecursionError, MemoryError])
def test_recursion_and_memory_errors_name_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   error: type[BaseException]) -> None:
    """The backstop for what the bounds did not foresee: a one-line ``VocabularyError``."""
    path = tokenizer(tmp_path)

    def fail(data: Any, source: str) -> Any:
        raise error()

    monkeypatch.setattr(reader, "_prepare", fail)
    monkeypatch.setenv("LIVETOK_CACHE", "0")
    with pytest.raises(VocabularyError) as got:
        reader.load_tokenizer_json(path)
    assert str(got.value).startswith(f"{path}: ") and "\n" not in str(got.value)


# -- the static check on its own -----------------------------------------------------------


@pytest.mark.parametrize("pattern", [r"(a|ab|b)+$", r"(?:(?:a|a)b)+$", r"(?:aa?){1,40}$",
                                     r"((a+)+)+", r"(\w|\d)+$", "(?:" + "|".join(
                                         ["a"] * 100) + ")+"])
def test_the_check_refuses_exponential_shapes(pattern: str) -> None:
    with pytest.raises(UnsafePattern):
        check(pattern)


@pytest.mark.parametrize("pattern", [r"(?:ab|ac)+", r"(?:\r\n|\n)+", r"(?:\p{L}\p{M}*)+",
                                     r"(?:\p{N}{3})+", r"\s*[\r\n]+|\s+(?!\S)|\s+",
                                     "(?:" + "|".join(f"w{i}x" for i in range(500)) + ")+"])
def test_the_check_accepts_unambiguous_repetitions(pattern: str) -> None:
    assert check(pattern) is None


#: the Hub's Split patterns whose scans run under the time budget (docs/tokenizer-json.md)
BUDGETED = {"hub-014", "hub-018", "hub-031", "hub-044", "hub-061", "hub-069",
            "edge-stacked-comma-quantifier"}


def test_the_check_accepts_every_real_pattern_at_once() -> None:
    """tiktoken's patterns run free; every one of the Hub's 141 Split patterns is accepted
    (tests/unit/test_regex.py splits with them exactly as HF does), 7 of them under
    the time budget; the check takes well under a millisecond a pattern."""
    from livetok.incremental.bytelevel.pretokenize import PATTERNS
    from livetok.incremental.regex import parse

    from ..conftest import SHARED

    parse.cache_clear()
    start = time.process_time()  # CPU time: a busy machine does not lengthen it
    for p in PATTERNS.values():
        assert check(p, "fancy") is None
    data = SHARED / "data" / "splitRegexPatterns.json"
    if not data.is_file():
        pytest.skip(f"{data} is missing (the shared test data folder)")
    hub = json.loads(data.read_text(encoding="utf-8"))["patterns"]
    budgeted = {p["id"] for p in hub if check(p["pattern"]) is not None}
    assert len(hub) == 141 and budgeted == BUDGETED
    assert time.process_time() - start < 0.5
