"""Counting and verdicts: every budget that applies to a file checked on its text
(:func:`check_text`: the whole file, each section, each retrieval chunk, the file's cost), and
a rule's ``total`` and ``total_cost`` over its set of files (:func:`total_verdicts`), each as
a :class:`Verdict` with the message both the command line and the editor show.

One pure module used by both ``livetok check`` (:mod:`livetok.server.cli.check`) and the
language server (:mod:`livetok.server.lsp.budget_watch`), so that the command line and the
editor give the same verdicts with the same messages. Nothing here walks directories, prints
or speaks LSP; counts come from a :class:`Counter` the caller passes (the command line encodes
text, the server asks its live ``Document``). A ``total`` is checked from the counts the
caller gathers (``livetok check`` walks the budget file's folder, the server adds the open
documents' live counts to the files on disk).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from decimal import Decimal
from pathlib import Path
from typing import Any, Literal, Mapping, Protocol

from livetok.incremental import get_encoding

from livetok.server.budgets.config import Budget, BudgetConfig, ChunkRule
from livetok.server.budgets.frontmatter import MARKDOWN_SUFFIXES, front_matter
from livetok.server.budgets.limits import shown
from livetok.server.budgets.markdown import BudgetSection, budget_sections
from livetok.server.budgets.money import DEFAULT_CURRENCY, cost_of, money, tokens_for

__all__ = [
    "TOP_CONTRIBUTORS",
    "Counter",
    "TextCounter",
    "Verdict",
    "VerdictKind",
    "budget_for",
    "check_text",
    "total_verdicts",
]

#: contributors a total's verdict keeps (the message names the first three)
TOP_CONTRIBUTORS = 5


class Counter(Protocol):
    """Counts the tokens of ``text[start_cp:end_cp]`` alone, in the named encoding."""

    def __call__(self, encoding: str, start_cp: int, end_cp: int) -> int: ...


class TextCounter:
    """A :class:`Counter` that encodes slices of one text (what ``livetok check`` uses).

    >>> TextCounter("hello world")("o200k_base", 0, 11)
    2

    Runtime complexity: as ``Encoding.encode`` of the slice; a repeated span is free.
    """

    def __init__(self, text: str) -> None:
        self.text = text
        self._memo: dict[tuple[str, int, int], int] = {}

    def __call__(self, encoding: str, start_cp: int, end_cp: int) -> int:
        key = (encoding, start_cp, end_cp)
        n = self._memo.get(key)
        if n is None:
            n = self._memo[key] = len(get_encoding(encoding).encode(self.text[start_cp:end_cp]))
        return n


#: what a verdict measures: a span's tokens (``file``, ``section``, ``chunk``), a set's tokens
#: (``total``), or the cost of a file or a set (``file_cost``, ``total_cost``)
VerdictKind = Literal["file", "section", "chunk", "total", "file_cost", "total_cost"]


@dataclass(frozen=True)
class Verdict:
    """One budget applied to one span of a file (the whole file, a section or a chunk), to
    the cost of a file, or to a set of files (a rule's ``total`` and ``total_cost``).

    For the cost kinds, ``cost_budget`` is the budget in money and ``budget`` the most whole
    tokens it pays for (:func:`tokens_for`; the count itself at a price of 0), so that ``over``
    and the editor's "first token past the budget" compare tokens for every kind. A total's
    ``path`` is its budget file and ``line`` its key's; ``files`` counts the set and ``top``
    holds its largest files (paths relative to the budget file's folder), largest first.
    """

    path: str
    line: int  # 1-based line where the span starts
    kind: VerdictKind
    title: str  # "## Tools" for sections and chunks, "budget #2" for totals, "" for the file
    tokens: int
    budget: int
    encoding: str
    start_cp: int
    end_cp: int
    source: str  # which rule(s) set the budget, or "front matter"
    baseline: int | None = None
    #: the span's key in the baseline file (several sections may share a title)
    key: str = "file"
    #: currency units per million tokens of ``encoding`` (None: no price applies)
    price: Decimal | None = None
    currency: str = DEFAULT_CURRENCY
    #: the budget in money (the cost kinds only)
    cost_budget: Decimal | None = None
    #: the number of files of a total, and its largest ones: ``(path, tokens)``
    files: int | None = None
    top: tuple[tuple[str, int], ...] = ()

    @property
    def over(self) -> bool:
        return self.tokens > self.budget

    @property
    def fails(self) -> bool:
        """Over budget and, when the baseline records this span, grown past its count."""
        return self.over and (self.baseline is None or self.tokens > self.baseline)

    @property
    def cost(self) -> Decimal | None:
        """What the span's tokens cost at :attr:`price`, or None without a price."""
        return cost_of(self.tokens, self.price) if self.price is not None else None

    @property
    def message(self) -> str:
        """The text ``livetok check`` prints after ``path:line:`` and the editor shows.

        >>> Verdict("CLAUDE.md", 1, "file", "", 3412, 3000, "o200k_base", 0, 9, "x").message
        '3,412 tokens (o200k_base), 412 over the budget of 3,000'
        >>> Verdict("a.md", 1, "file_cost", "", 3412, 2000, "o200k_base", 0, 9, "x",
        ...         price=Decimal("2.50"), cost_budget=Decimal("0.005")).message
        '3,412 tokens (o200k_base) cost 0.00853 USD at 2.50 USD per million tokens, 0.00353 USD over the cost budget of 0.005 USD'

        Runtime complexity: ``O(len(top))``.
        """
        what = "" if self.kind in ("file", "file_cost") else (
            f'{self.kind.split("_")[0]} "{self.title}" ')  # total_cost: 'total "budget #2" '
        counted = f"{self.tokens:,} tokens ({self.encoding})"
        if self.files is not None:
            counted += f" in {self.files:,} file" + ("" if self.files == 1 else "s")
        origin = " (front matter)" if self.source == "front matter" else ""
        if self.cost_budget is not None and self.price is not None:
            cost = cost_of(self.tokens, self.price)
            head = (f"{what}{counted} cost {money(cost, self.currency)} at "
                    f"{money(self.price, self.currency)} per million tokens, ")
            of = f"the cost budget of {money(self.cost_budget, self.currency)}"
            gap, unit = money(cost - self.cost_budget, self.currency), " tokens"
        else:
            of = "the chunk budget" if self.kind == "chunk" else "the budget"
            head, of = f"{what}{counted}, ", f"{of} of {self.budget:,}"
            gap, unit = f"{self.tokens - self.budget:,}", ""
        if not self.over:
            return f"{head}within {of}{origin}"
        msg = f"{head}{gap} over {of}{origin}"
        if self.baseline is not None:
            grew = "grew past" if self.tokens > self.baseline else "within"
            msg += f"; {grew} the baseline of {self.baseline:,}{unit}"
        if self.top:
            msg += "; largest: " + ", ".join(f"{_path_shown(p)} {n:,}" for p, n in self.top[:3])
        return msg

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"

    def to_json(self) -> dict[str, Any]:
        """The verdict as ``livetok check --format json`` lists it (amounts as numbers;
        ``cost``, ``price`` and ``currency`` null without a price; ``cost_budget`` null but
        for the cost kinds; ``files`` and ``top`` for totals only)."""
        cost = self.cost
        return {
            "path": self.path, "line": self.line, "kind": self.kind, "title": self.title,
            "tokens": self.tokens, "budget": self.budget, "encoding": self.encoding,
            "over": self.over, "fails": self.fails, "baseline": self.baseline,
            "key": self.key, "source": self.source, "message": self.message,
            "cost": float(cost) if cost is not None else None,
            "price": float(self.price) if self.price is not None else None,
            "currency": self.currency if self.price is not None else None,
            "cost_budget": float(self.cost_budget) if self.cost_budget is not None else None,
            "files": self.files,
            "top": [{"path": p, "tokens": n} for p, n in self.top] if self.files is not None
            else None,
        }


def _path_shown(path: str) -> str:
    """A path of a repository in a message: as it is, unless it is long or holds a control
    character (a file named with a line break could forge a line of ``livetok check``)."""
    return path if len(path) <= 80 and path.isprintable() else shown(path)


def budget_for(path: Path, text: str, config: BudgetConfig | None) -> Budget | None:
    """The budgets that apply to ``path``: its config's matching rules, then its front matter
    (Markdown files only). None when nothing applies.

    Runtime complexity: ``O(total globs)`` plus :func:`front_matter`.
    """
    budget = config.rule_budget(path) if config is not None else None
    if path.suffix.lower() in MARKDOWN_SUFFIXES:
        fm = front_matter(text, str(path))
        if fm.tokens is not None:
            base = budget or (Budget(encoding=config.encoding, price=config.price,
                                     currency=config.currency) if config else Budget())
            budget = replace(base, max=fm.tokens, max_from_front_matter=True)
    return None if budget is None or budget.empty else budget


#: one line and its terminator (the last line may have none; an empty match ends the text)
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n|$)")


def _breaks(text: str, start_cp: int, end_cp: int) -> int:
    """Line breaks (``\\n``, ``\\r\\n``, ``\\r``) in ``text[start_cp:end_cp]``, where
    ``end_cp`` starts a line."""
    return (text.count("\n", start_cp, end_cp) + text.count("\r", start_cp, end_cp)
            - text.count("\r\n", start_cp, end_cp))


def _chunks(text: str, body_cp: int, rule: ChunkRule,
            secs: list[BudgetSection]) -> list[tuple[str, int, int]]:
    """``(title, start_cp, end_cp)`` of the retrieval chunks of the body."""
    if rule.by == "paragraph":
        # runs of lines holding a non-space character, by one scan of the lines (a regex
        # ``(?:[^\r\n]*\S[^\r\n]*(?:\r\n|\r|\n|$))+`` backtracked quadratically on
        # lines of spaces: 8,000 spaces took 1.1 s)
        spans: list[tuple[int, int]] = []
        start = end = -1
        for m in _LINE.finditer(text, body_cp):
            if not m.group():
                break  # the empty match at the end of the text
            if m.group().isspace():
                if start >= 0:
                    spans.append((start, end))
                    start = -1
            else:
                if start < 0:
                    start = m.start()
                end = m.end()
        if start >= 0:
            spans.append((start, end))
        out = []
        for a, b in spans:
            first = text[a:b].strip().splitlines()[0]
            out.append((first[:40] + ("…" if len(first) > 40 else ""), a, b))
        return out
    starts = [(s.start_cp, s.heading) for s in secs if s.level <= rule.level]
    bounds = [(body_cp, "(before the first heading)")] + starts
    out = []
    for i, (start, title) in enumerate(bounds):
        end = bounds[i + 1][0] if i + 1 < len(bounds) else len(text)
        if text[start:end].strip():
            out.append((title, start, end))
    return out


def check_text(
    path: Path,
    text: str,
    config: BudgetConfig | None,
    *,
    label: str | None = None,
    counter: Counter | None = None,
    baseline: Mapping[str, int] | None = None,
) -> list[Verdict]:
    """Every budget that applies to ``path`` checked on ``text``: the file, each section of
    the budget's level, each chunk, in that order. Raises :class:`ConfigError` for a bad
    front matter budget.

    ``label`` is the path shown in messages (default ``str(path)``); ``counter`` counts spans
    (default: :class:`TextCounter`); ``baseline`` maps this file's keys (``file``,
    ``file_cost``, ``section ## Tools``, ...) to recorded counts (the ratchet). When a price
    applies, every verdict counted in the budget's encoding carries it (a chunk counted in
    another encoding has none), and ``max_cost`` gives a ``file_cost`` verdict.

    >>> from livetok.server.budgets.config import parse_config
    >>> cfg = parse_config('[[budget]]\\nfiles = ["*.md"]\\nmax = 3\\nsection = 2',
    ...                    Path("/r/livetok.toml"))
    >>> [str(v) for v in check_text(Path("/r/a.md"), "# A\\n## B\\nsome words\\n", cfg,
    ...                               label="a.md")]  # doctest: +NORMALIZE_WHITESPACE
    ['a.md:1: 9 tokens (o200k_base), 6 over the budget of 3',
     'a.md:2: section "## B" 6 tokens (o200k_base), 4 over the budget of 2']

    Runtime complexity: one count of the file, of each section and of each chunk.
    """
    budget = budget_for(path, text, config)
    if budget is None:
        return []
    count = counter or TextCounter(text)
    label = label if label is not None else str(path)
    base = baseline or {}
    source = "front matter" if budget.max_from_front_matter else budget.source
    out: list[Verdict] = []
    if budget.max is not None:
        n = count(budget.encoding, 0, len(text))
        out.append(Verdict(label, 1, "file", "", n, budget.max, budget.encoding, 0, len(text),
                           source, base.get("file"), "file", price=budget.price,
                           currency=budget.currency))
    if budget.max_cost is not None and budget.price is not None:
        n = count(budget.encoding, 0, len(text))
        most = tokens_for(budget.max_cost, budget.price)
        out.append(Verdict(label, 1, "file_cost", "", n, n if most is None else most,
                           budget.encoding, 0, len(text), budget.source, base.get("file_cost"),
                           "file_cost", cost_budget=budget.max_cost, price=budget.price,
                           currency=budget.currency))
    if budget.section is None and budget.chunk is None:
        return out
    body = front_matter(text, label).end_cp if path.suffix.lower() in MARKDOWN_SUFFIXES else 0
    secs = budget_sections(text, body)
    seen: dict[str, int] = {}

    def key_of(kind: str, title: str) -> str:
        k = f"{kind} {title}"
        seen[k] = seen.get(k, 0) + 1
        return k if seen[k] == 1 else f"{k} ({seen[k]})"

    if budget.section is not None:
        for s in secs:
            if s.level != budget.section_level:
                continue
            key = key_of("section", s.heading)
            n = count(budget.encoding, s.start_cp, s.end_cp)
            out.append(Verdict(label, s.line, "section", s.heading, n,
                               budget.section, budget.encoding, s.start_cp, s.end_cp,
                               budget.source, base.get(key), key, price=budget.price,
                               currency=budget.currency))
    if budget.chunk is not None:
        enc = budget.chunk.encoding or budget.encoding
        # the price is the budget's encoding's: a chunk counted by an embedding model has none
        chunk_price = budget.price if enc == budget.encoding else None
        for title, start, end in _chunks(text, body, budget.chunk, secs):
            key = key_of("chunk", title)
            n = count(enc, start, end)
            out.append(Verdict(label, 1 + _breaks(text, 0, start), "chunk", title, n, budget.chunk.max,
                               enc, start, end, budget.source, base.get(key), key,
                               price=chunk_price, currency=budget.currency))
    return out


def total_verdicts(config: BudgetConfig, counts: Mapping[int, Mapping[str, int]], *,
                   label: str | None = None,
                   baseline: Mapping[str, int] | None = None) -> list[Verdict]:
    """The verdicts of the budget file's ``total`` and ``total_cost`` rules whose index is in
    ``counts``, which maps it to the tokens of each file of the rule's set (in the rule's
    encoding, by path relative to the budget file's folder); rules not in ``counts`` are not
    checked. ``label`` is the budget file's path in messages; ``baseline`` maps ``total #N`` and
    ``total_cost #N`` to recorded totals.

    >>> from livetok.server.budgets.config import parse_config
    >>> cfg = parse_config('[[budget]]\\nfiles = ["*.md"]\\ntotal = 5', Path("/r/livetok.toml"))
    >>> [str(v) for v in total_verdicts(cfg, {1: {"a.md": 4, "b.md": 3}}, label="livetok.toml")]
    ['livetok.toml:3: total "budget #1" 7 tokens (o200k_base) in 2 files, 2 over the budget of 5; largest: a.md 4, b.md 3']

    Runtime complexity: ``O(f log f)`` for a set of ``f`` files (its largest are sorted out).
    """
    label = label if label is not None else str(config.path)
    base = baseline or {}
    out: list[Verdict] = []
    for rule in config.total_rules:
        files = counts.get(rule.index)
        if files is None:
            continue
        n = sum(files.values())
        top = tuple(sorted(files.items(), key=lambda item: (-item[1], item[0]))[:TOP_CONTRIBUTORS])
        price = config.rule_price(rule)
        common: dict[str, Any] = {
            "title": f"budget #{rule.index}", "tokens": n, "encoding": config.rule_encoding(rule),
            "start_cp": 0, "end_cp": 0, "source": f"{config.path.name} budget #{rule.index}",
            "price": price, "currency": config.currency, "files": len(files), "top": top}
        if rule.total is not None:
            key = f"total #{rule.index}"
            out.append(Verdict(label, rule.lines.get("total", 1), "total", budget=rule.total,
                               baseline=base.get(key), key=key, **common))
        if rule.total_cost is not None and price is not None:
            key = f"total_cost #{rule.index}"
            most = tokens_for(rule.total_cost, price)
            out.append(Verdict(label, rule.lines.get("total_cost", 1), "total_cost",
                               budget=n if most is None else most, baseline=base.get(key),
                               key=key, cost_budget=rule.total_cost, **common))
    return out
