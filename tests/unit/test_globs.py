"""The ``.gitignore``-style globs of :mod:`livetok.server.budgets.globs` (issue 34 rows 2 and
5): the answers ``pathspec.GitIgnoreSpec`` gives, on many random globs and paths, and a work
count that stays small where ``pathspec``'s regexes backtrack or try every glob."""

from __future__ import annotations

import re
import warnings
from typing import Any

import pathspec
import pytest
from hypothesis import given, seed, settings
from hypothesis import strategies as st

from livetok.server.budgets import globs
from livetok.server.budgets.globs import GlobRules

#: glob pieces: every kind of part pathspec reads, several times over
GLOB_PARTS = [*"ab*?/[]!\\.\n #-^", "**", "**/", "/**", "[!a]", "[a-b]", "[^b]", "[]a]", "\\*",
              "ab", "*.b"]
PATH_PARTS = [*"ab/.\n -", "ab", "a/", "/b", "b.b"]

glob_line = st.lists(st.sampled_from(GLOB_PARTS), max_size=8).map("".join)
path = st.lists(st.sampled_from(PATH_PARTS), max_size=10).map("".join)


def reference(lines: list[str]) -> Any:
    """pathspec's spec of ``lines``, or None when it refuses them."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return pathspec.GitIgnoreSpec.from_lines(lines)
        except Exception:  # its pattern errors, and re.error for a bad range
            return None


@seed(34)
@settings(max_examples=1500, deadline=None)
@given(st.lists(glob_line, min_size=1, max_size=5), st.lists(path, min_size=1, max_size=12))
def test_same_answers_as_pathspec(lines: list[str], paths: list[str]) -> None:
    ref = reference(lines)
    mine, problems = GlobRules.from_lines(lines, limit=1000)
    if ref is None:  # pathspec refuses the whole list; livetok passes over the bad line
        assert problems, lines
        return
    assert not problems, (lines, problems)
    for p in paths:
        if mine.slash_classes and "/" in p:  # the one difference (see below)
            continue
        assert mine.check(p) == ref.check_file(p).include, (lines, p)
        assert mine.match(p) == ref.match_file(p), (lines, p)


@pytest.mark.parametrize("lines, paths", [
    (["*.pyc", "!keep.pyc", "build/", "/top", "docs/**/*.md", "a/**/b", "**/x/**"],
     ["a.pyc", "d/keep.pyc", "build", "build/", "x/build/y", "top", "s/top", "docs/a.md",
      "docs/x/y/z.md", "a/b", "a/x/y/b", "a/b/c", "q/x/r", "x/"]),
    (["foo", "foo/", "!foo/bar", "*", "*/", "**", "**/", "/", "#c", " ", "\\#c", "\\!x"],
     ["foo", "foo/foo", "foo/bar", "foo/bar/", "#c", "!x", "a/b/", ""]),
    (["a\\ ", "b ", "c\\", "[z-a]", "[a", "!"], ["a ", "b", "b ", "c", "[a", "z"]),
])
def test_same_answers_on_ordinary_gitignores(lines: list[str], paths: list[str]) -> None:
    ref = reference([ln for ln in lines if reference([ln]) is not None])
    mine, _problems = GlobRules.from_lines(lines)
    for p in paths:
        assert mine.check(p) == ref.check_file(p).include, p


def test_bad_lines_are_named_not_raised() -> None:
    rules, problems = GlobRules.from_lines(["*.md", "x\\", "[z-a]", "!", "ok"])
    assert [n for n, _why in problems] == [2, 3, 4]
    assert rules.check("a.md") and rules.check("ok") and rules.check("x") is None


def test_a_bracket_never_matches_a_slash() -> None:
    """git's wildmatch never lets a bracket match "/"; pathspec's ``[!x]`` did."""
    rules, _ = GlobRules.from_lines(["a[!x]b"])
    assert rules.slash_classes
    assert rules.check("a/b") is None and rules.check("ayb") is True
    assert reference(["a[!x]b"]).check_file("a/b").include is True


class _Counting:
    """Counts the component tests and piece searches the matcher makes."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.segments = self.finds = self.rules = 0
        matches, find, match = globs._Segment.matches, globs._Piece.find, globs._Rule.match

        def counted_matches(seg: Any, s: str) -> bool:
            self.segments += 1
            return matches(seg, s)

        def counted_find(piece: Any, s: str, pos: int, end: int) -> int:
            self.finds += 1
            return find(piece, s, pos, end)

        def counted_match(rule: Any, p: str) -> Any:
            self.rules += 1
            return match(rule, p)

        monkeypatch.setattr(globs._Segment, "matches", counted_matches)
        monkeypatch.setattr(globs._Piece, "find", counted_find)
        monkeypatch.setattr(globs._Rule, "match", counted_match)


STAR_GLOB = "*a*a*a*a*a*a*a*a*b"


def test_stars_do_not_backtrack(monkeypatch: pytest.MonkeyPatch) -> None:
    """pathspec's regex for this glob took 6 s on 40 a's and ran for minutes on 200."""
    rules, _ = GlobRules.from_lines([STAR_GLOB, "!x*a*a*a*a*a*a*a*a*a*a*a*z"])
    count = _Counting(monkeypatch)
    name = "a" * 200
    assert rules.check(name) is None and rules.check(f"d/{name}/{name}") is None
    # the literal end "b" is in no component: no glob is even tried
    assert count.rules == 0
    # one that holds it: each piece searched once, left to right
    assert rules.check(f"d/{name}b") is True
    assert count.rules == 1 and count.segments <= 2 and count.finds <= 8
    assert rules.check("x" + name + "z") is False and count.finds <= 8 + 11
    assert rules.check("x" + name[:5] + "z") is None  # too few a's, found without a search


def test_many_rules_are_not_each_tried(monkeypatch: pytest.MonkeyPatch) -> None:
    """A .gitignore of 150,000 lines: a path tries the few globs whose literal part it
    holds, not every glob (pathspec: 60 ms a path)."""
    lines = [f"name{i}.txt" if i % 3 else f"*.ext{i}" for i in range(150_000)]
    lines += [f"dir{i}/" for i in range(1000)] + [f"cache{i}*" for i in range(1000)]
    rules, problems = GlobRules.from_lines(lines)
    assert not problems and not rules.passed_over
    count = _Counting(monkeypatch)
    assert rules.check("src/name7.txt") is True
    assert rules.check("src/a.ext9") is True and rules.check("src/a.ext10") is None
    assert rules.check("dir5/x.py") is True and rules.check("cache77.tmp") is True
    assert rules.check("src/main.py") is None
    assert count.rules <= 6, count.rules


def test_globs_without_a_literal_part_are_bounded() -> None:
    lines = [f"*{'?' * i}*" for i in range(1, 400)] + ["keep.md"]
    rules, _ = GlobRules.from_lines(lines, limit=256)
    assert rules.passed_over == list(range(257, 400))
    assert rules.check("keep.md") is True


def test_identical_lines_count_once(monkeypatch: pytest.MonkeyPatch) -> None:
    rules, _ = GlobRules.from_lines(["*x*"] * 100_000 + ["!*x*y"])
    assert not rules.passed_over
    count = _Counting(monkeypatch)
    assert rules.check("axb") is True and rules.check("axy") is False
    assert count.rules <= 3


def test_regex_quirks_kept() -> None:
    """pathspec's regexes: "$" matches before a final newline, "." never matches one."""
    rules, _ = GlobRules.from_lines(["foo"])
    assert rules.check("foo\n") is True == reference(["foo"]).check_file("foo\n").include
    assert re.search(".", "\n") is None
