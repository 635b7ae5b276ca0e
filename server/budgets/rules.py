"""Token budgets as code: the budget file, its rules, front matter, and the verdicts.

One pure module used by both ``livetok check`` (:mod:`.cmd_check`) and the language server
(:mod:`.budget_watch`), so that the command line and the editor give the same verdicts with
the same messages. Nothing here walks directories, prints or speaks LSP; counts come from a
:class:`Counter` the caller passes (the command line encodes text, the server asks its live
``Document``).

The budget file is ``livetok.toml`` (top-level keys) or ``[tool.livetok]`` in
``pyproject.toml``, found by walking up from a file's folder; the closest one wins and is
not merged with others (as ruff and black find theirs). Schema (``docs/budgets.md``)::

    encoding = "o200k_base"            # default encoding of every rule
    baseline = ".livetok-baseline.json"  # the ratchet's file, beside this one
    price = 2.50                       # currency units per million tokens (no default)
    currency = "USD"                   # the label shown after amounts
    [[budget]]
    files = ["skills/**/SKILL.md", "!skills/old/**"]   # .gitignore-style globs
    max = 5000                         # tokens in the whole file
    section = 1500                     # tokens in each section of level section_level
    section_level = 2                  # "##" (default)
    encoding = "cl100k_base"
    chunk = { max = 512, encoding = "bert-base-uncased", by = "section", level = 6 }
    total = 20000                      # tokens of all the files the rule matches, summed
    price = 3                          # this rule's price (else the top-level one)
    max_cost = 0.05                    # cost of each file, at the price
    total_cost = 1.00                  # cost of all the files the rule matches

Prices and costs are read as exact decimals (TOML floats parsed as :class:`~decimal.Decimal`)
and compared exactly: a cost budget is the most whole tokens it pays for
(:func:`tokens_for`). A ``total`` is checked by :func:`total_verdicts` from the counts the
caller gathers (``livetok check`` walks the budget file's folder, the server adds the open
documents' live counts to the files on disk).

An ``encoding`` is a name livetok knows, ``hf:ORG/NAME`` (a model whose ``tokenizer.json`` is
in the local Hugging Face cache) or the path of a ``tokenizer.json``, relative to the budget
file's folder. When several rules match a file their keys are merged in order (a later rule's key wins);
Markdown front matter ``tokens: N`` (or ``token_budget: N``) then sets the file's ``max``.

A budget file comes with a repository, so it is untrusted input (``docs/security.md``): it is
read through :mod:`.trust` (a regular file inside its folder, bounded), its baseline and its
``tokenizer.json`` paths must lie inside its folder, a ``tokenizer.json`` it names is loaded
only when the caller trusts it (``trust_tokenizers``), globs hold at most
``$LIVETOK_MAX_GLOB_STARS`` ``**`` segments, at most :data:`MAX_PROBLEMS` problems are listed,
front matter is read up to ``$LIVETOK_MAX_FRONT_MATTER_BYTES`` with YAML aliases refused, and
no message quotes more than a few dozen characters of a value.
"""

from __future__ import annotations

import difflib
import functools
import json
import os
import re
import sys
from dataclasses import dataclass, field, replace
from decimal import ROUND_HALF_UP, Context, Decimal
from pathlib import Path
from typing import Any, Iterable, Literal, Mapping, NamedTuple, Protocol

import pathspec

from livetok.incremental import get_encoding, list_encodings
from livetok.incremental.catalog import model_encoding
from livetok.incremental.find import find_hf_tokenizer
from livetok.incremental.load import VocabularyError, size_limit
from livetok.incremental.registry import ALIASES, is_file_name, tokenizer_json_path

from livetok.server import trust
from livetok.server.budgets.markdown import FRONT_MATTER, sections

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

__all__ = [
    "CONFIG_NAMES",
    "DEFAULT_BASELINE",
    "DEFAULT_CURRENCY",
    "DEFAULT_ENCODING",
    "MAX_CHECK_BYTES_ENV",
    "Budget",
    "BudgetConfig",
    "BudgetSection",
    "BudgetRule",
    "ChunkRule",
    "ConfigError",
    "ConfigFinder",
    "ConfigProblem",
    "Counter",
    "FrontMatter",
    "MARKDOWN_SUFFIXES",
    "TextCounter",
    "Verdict",
    "VerdictKind",
    "baseline_entries",
    "budget_for",
    "budget_sections",
    "check_bytes_limit",
    "check_text",
    "cost_of",
    "front_matter",
    "load_baseline",
    "load_config",
    "money",
    "parse_config",
    "shown",
    "tokens_for",
    "total_verdicts",
    "write_baseline",
]

#: file names of a budget file, in the order they win when both are in one folder
CONFIG_NAMES = ("livetok.toml", "pyproject.toml")
DEFAULT_ENCODING = "o200k_base"
DEFAULT_BASELINE = ".livetok-baseline.json"
#: Markdown files: the ones whose front matter may set a budget
MARKDOWN_SUFFIXES = frozenset({".md", ".markdown", ".mdx", ".mdc"})

DEFAULT_CURRENCY = "USD"

_TOP_KEYS = ("encoding", "baseline", "price", "currency", "budget")
_RULE_KEYS = ("files", "max", "section", "section_level", "encoding", "chunk", "total", "price",
              "max_cost", "total_cost")
#: the keys of a rule that are amounts of money, and need a price
_COST_KEYS = ("max_cost", "total_cost")
_CHUNK_KEYS = ("max", "encoding", "by", "level")
_CHUNK_BY = ("section", "paragraph")
_FRONT_MATTER_KEYS = ("token_budget", "tokens")
#: problems listed per budget file; the rest are counted in one more line
MAX_PROBLEMS = 50
#: ``**`` segments a glob may hold: each one more multiplies what a match may try by the path's
#: depth (six of them against an 80-deep path: 36 s; two: 0.3 ms)
GLOB_STARS_ENV = "LIVETOK_MAX_GLOB_STARS"
_GLOB_STARS = 2
#: globs in one budget file (each is compiled to a regex: ~0.6 ms, so 8,000 rules took 5 s)
GLOBS_ENV = "LIVETOK_MAX_BUDGET_GLOBS"
_GLOBS = 1000
#: front matter is looked for in this many code points at the top of a Markdown file
FRONT_MATTER_ENV = "LIVETOK_MAX_FRONT_MATTER_BYTES"
_FRONT_MATTER_MAX = 64 << 10
#: the largest file counted for a budget (a 200 MB Markdown file took 3.3 GB to check)
MAX_CHECK_BYTES_ENV = "LIVETOK_MAX_CHECK_BYTES"
_MAX_CHECK_BYTES = 64 << 20
#: prices and costs: at most this much, with at most this many decimals, so that every product
#: of a count and a price is exact in :data:`_MONEY`'s 60 digits
_MONEY_MAX = Decimal(10) ** 9
_MONEY_DECIMALS = 12
_MONEY = Context(prec=60, rounding=ROUND_HALF_UP)
#: contributors a total's verdict keeps (the message names the first three)
TOP_CONTRIBUTORS = 5
#: the environment variable that makes ``livetok check`` trust tokenizer files (as
#: ``--trust-tokenizers``)
TRUST_TOKENIZERS_ENV = "LIVETOK_TRUST_TOKENIZERS"
_UNTRUSTED_TOKENIZER = (
    "a tokenizer.json named by a budget file comes with the repository, and livetok loads one "
    "only when you trust it (its regexes and normalizers are programs): pass "
    "--trust-tokenizers to livetok check (or set LIVETOK_TRUST_TOKENIZERS=1), or set "
    "livetok.trustWorkspaceTokenizers in the editor; a name livetok knows or hf:ORG/NAME needs "
    "no trust")


def shown(value: Any, limit: int = 60) -> str:
    """``repr(value)`` cut to about ``limit`` characters, for messages: a value from a file
    never makes a message long (a YAML alias bomb's value has a repr of hundreds of MB).

    >>> shown("x" * 100, 10)
    "'xxxxxxxx… (102 characters)"

    Runtime complexity: ``O(limit)`` for strings and numbers; a container's repr is built from
    at most ``limit`` of its items.
    """
    if isinstance(value, (dict, list, tuple, set)):
        head = f"{type(value).__name__} of {len(value):,} items"
        return head
    if isinstance(value, Decimal):  # a TOML float, read exactly: shown as written
        text = str(value)
        return text if len(text) <= limit else f"{text[:limit - 1]}… ({len(text):,} characters)"
    text = repr(value) if not isinstance(value, str) or len(value) <= 4 * limit else repr(
        value[:4 * limit])
    if len(text) <= limit:
        return text
    size = len(value) + 2 if isinstance(value, str) else len(text)
    return f"{text[:limit - 1]}… ({size:,} characters)"


def glob_stars_limit() -> int:
    """The most ``**`` segments a glob may hold (``$LIVETOK_MAX_GLOB_STARS``, default 2).

    Runtime complexity: ``O(1)``.
    """
    return size_limit(GLOB_STARS_ENV, _GLOB_STARS, "segments")


def glob_problem(glob: str, limit: int) -> str | None:
    """Why ``glob`` is refused (too many ``**`` segments, or too long), or None.

    >>> glob_problem("docs/**/*.md", 2) is None, glob_problem("**/a/**/b/**/c", 2) is not None
    (True, True)

    Runtime complexity: ``O(len(glob))``.
    """
    if len(glob) > 1024:
        return f"a glob of {len(glob):,} characters (at most 1,024)"
    stars = len(re.findall(r"\*\*", glob))
    if stars > limit:
        return (f"{shown(glob)} has {stars} '**' segments, more than the {limit} livetok "
                f"matches (each one more multiplies the work by the path's depth); write "
                f"fewer, or set {GLOB_STARS_ENV}")
    return None


def check_bytes_limit() -> int:
    """The largest file counted for a budget, in bytes (``$LIVETOK_MAX_CHECK_BYTES``, default
    64 MiB): ``livetok check`` and the server's totals refuse a larger one unread.

    Runtime complexity: ``O(1)``.
    """
    return size_limit(MAX_CHECK_BYTES_ENV, _MAX_CHECK_BYTES)


# -- money -----------------------------------------------------------------------------------


def cost_of(tokens: int, price: Decimal) -> Decimal:
    """What ``tokens`` cost at ``price`` currency units per million tokens, exactly.

    >>> cost_of(3412, Decimal("2.50"))
    Decimal('0.00853000')

    Runtime complexity: ``O(1)`` (numbers of a few dozen digits).
    """
    return _MONEY.multiply(Decimal(tokens), price).scaleb(-6, _MONEY)


def tokens_for(cost: Decimal, price: Decimal) -> int | None:
    """The most whole tokens ``cost`` pays for at ``price`` per million tokens, or None at a
    price of 0 (any number of tokens). A count is over a cost budget exactly when it is over
    this number: ``n * price / 10**6 > cost`` holds for a whole ``n`` iff ``n > tokens_for``.

    >>> tokens_for(Decimal("0.05"), Decimal("2.50")), tokens_for(Decimal("0.07"), Decimal("3"))
    (20000, 23333)

    Runtime complexity: ``O(1)``.
    """
    if price == 0:
        return None
    return int(_MONEY.divide_int(cost.scaleb(6, _MONEY), price))


def money(amount: Decimal, currency: str = "") -> str:
    """An amount for messages: at least two decimals, at most eight (rounded half up),
    thousands separated, then the currency.

    >>> money(Decimal("0.0085300"), "USD"), money(Decimal(1234)), money(Decimal("1E-9"), "EUR")
    ('0.00853 USD', '1,234.00', '0.00000000 EUR')

    Runtime complexity: ``O(digits)``.
    """
    d = amount.normalize(_MONEY)
    exponent = d.as_tuple().exponent
    assert isinstance(exponent, int), amount  # amounts are finite (validated)
    if exponent > -2:
        d = d.quantize(Decimal("0.01"), context=_MONEY)
    elif exponent < -8:
        d = d.quantize(Decimal("1E-8"), context=_MONEY)
    text = f"{d:,f}"
    return f"{text} {currency}" if currency else text


# -- configuration ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ConfigProblem:
    """One thing wrong in a budget file (or in a file's front matter).

    ``line`` is 1-based, or None when the key could not be located.
    """

    path: str
    line: int | None
    key: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line or 1}: {self.message}"

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "line": self.line, "key": self.key, "message": self.message}


class ConfigError(ValueError):
    """A budget file (or front matter) that cannot be used; ``problems`` lists every fault."""

    def __init__(self, problems: list[ConfigProblem]) -> None:
        super().__init__("\n".join(str(p) for p in problems))
        self.problems = problems


@dataclass(frozen=True)
class ChunkRule:
    """Retrieval chunks: each chunk of a file must fit in ``max`` tokens of ``encoding``.

    ``by="section"``: a chunk starts at each heading of level ``level`` or higher (the text
    before the first heading is a chunk too); ``by="paragraph"``: runs of non-blank lines.
    """

    max: int
    encoding: str | None = None
    by: Literal["section", "paragraph"] = "section"
    level: int = 6


@dataclass(frozen=True)
class BudgetRule:
    """One ``[[budget]]`` table: globs and the budgets for the files they match."""

    index: int  # 1-based position in the budget file, for messages
    files: tuple[str, ...]
    max: int | None = None
    section: int | None = None
    section_level: int | None = None
    encoding: str | None = None
    chunk: ChunkRule | None = None
    #: tokens of all the files the rule matches, summed (each counted in the rule's encoding)
    total: int | None = None
    #: currency units per million tokens (None: the budget file's top-level ``price``)
    price: Decimal | None = None
    #: the cost of each file, and of all the files the rule matches, at the price
    max_cost: Decimal | None = None
    total_cost: Decimal | None = None
    spec: pathspec.GitIgnoreSpec | None = field(default=None, compare=False, repr=False)
    #: 1-based line of its ``total`` and ``total_cost`` keys in the budget file (their verdicts')
    lines: Mapping[str, int] = field(default_factory=dict, compare=False, repr=False)

    def matches(self, rel_path: str) -> bool:
        """Whether the rule's globs match ``rel_path`` (POSIX, relative to the config's folder).

        Runtime complexity: ``O(number of globs)`` regex matches.
        """
        return self.spec is not None and self.spec.match_file(rel_path)


@dataclass(frozen=True)
class BudgetConfig:
    """A parsed budget file. ``root`` is its folder: globs and the baseline are relative to it."""

    path: Path
    encoding: str = DEFAULT_ENCODING
    baseline: str = DEFAULT_BASELINE
    rules: tuple[BudgetRule, ...] = ()
    #: currency units per million tokens, for every rule that names no price
    price: Decimal | None = None
    currency: str = DEFAULT_CURRENCY

    @property
    def root(self) -> Path:
        return self.path.parent

    @property
    def baseline_path(self) -> Path:
        return self.root / self.baseline

    def relative(self, path: Path) -> str | None:
        """``path`` relative to the config's folder in POSIX form, or None when outside it
        (both made absolute, symbolic links kept: a config is found by walking up the same
        way)."""
        try:
            return path.absolute().relative_to(self.root.absolute()).as_posix()
        except ValueError:
            return None

    def rule_budget(self, path: Path) -> Budget | None:
        """What the matching rules give ``path`` (merged in order), or None when none match.

        >>> cfg = parse_config('[[budget]]\\nfiles = ["*.md"]\\nmax = 10\\n'
        ...                    '[[budget]]\\nfiles = ["CLAUDE.md"]\\nmax = 3', Path("/r/livetok.toml"))
        >>> cfg.rule_budget(Path("/r/CLAUDE.md")).max, cfg.rule_budget(Path("/r/x.txt"))
        (3, None)

        Runtime complexity: ``O(total globs)``.
        """
        rel = self.relative(path)
        if rel is None:
            return None
        merged: dict[str, Any] = {}
        sources: list[str] = []
        for rule in self.rules:
            if not rule.matches(rel):
                continue
            sources.append(f"{self.path.name} budget #{rule.index}")
            for key in ("max", "section", "section_level", "encoding", "chunk", "price",
                        "max_cost"):
                value = getattr(rule, key)
                if value is not None:
                    merged[key] = value
        if not sources:
            return None
        return Budget(
            encoding=merged.get("encoding", self.encoding),
            max=merged.get("max"),
            section=merged.get("section"),
            section_level=merged.get("section_level", 2),
            chunk=merged.get("chunk"),
            source=", ".join(sources),
            price=merged.get("price", self.price),
            currency=self.currency,
            max_cost=merged.get("max_cost"),
        )

    @property
    def total_rules(self) -> tuple[BudgetRule, ...]:
        """The rules with a ``total`` or a ``total_cost``, in order."""
        return tuple(r for r in self.rules if r.total is not None or r.total_cost is not None)

    def totals_for(self, path: Path) -> tuple[BudgetRule, ...]:
        """The :attr:`total_rules` whose globs match ``path`` (its sets).

        >>> cfg = parse_config('[[budget]]\\nfiles = ["docs/*.md"]\\ntotal = 9',
        ...                    Path("/r/livetok.toml"))
        >>> [r.index for r in cfg.totals_for(Path("/r/docs/a.md"))], cfg.totals_for(Path("/r/a.md"))
        ([1], ())

        Runtime complexity: ``O(globs of those rules)``.
        """
        rules = self.total_rules
        rel = self.relative(path) if rules else None
        return () if rel is None else tuple(r for r in rules if r.matches(rel))

    def rule_encoding(self, rule: BudgetRule) -> str:
        """The encoding a rule's ``total`` counts in: its own, else the budget file's."""
        return rule.encoding or self.encoding

    def rule_price(self, rule: BudgetRule) -> Decimal | None:
        """The price of a rule's ``total``: its own, else the budget file's (or None)."""
        return rule.price if rule.price is not None else self.price


@dataclass(frozen=True)
class Budget:
    """Everything that applies to one file once rules and front matter are merged."""

    encoding: str = DEFAULT_ENCODING
    max: int | None = None
    section: int | None = None
    section_level: int = 2
    chunk: ChunkRule | None = None
    source: str = ""
    #: ``max`` came from the file's front matter
    max_from_front_matter: bool = False
    #: currency units per million tokens of ``encoding`` (None: no price declared)
    price: Decimal | None = None
    currency: str = DEFAULT_CURRENCY
    #: the cost of the whole file, at ``price``
    max_cost: Decimal | None = None

    @property
    def empty(self) -> bool:
        return (self.max is None and self.section is None and self.chunk is None
                and self.max_cost is None)


def _known_encodings() -> list[str]:
    return sorted({*list_encodings(), *ALIASES})


class _Validator:
    """Collects the problems of one budget file (at most :data:`MAX_PROBLEMS`, the rest
    counted); locates keys in its text for line numbers.

    Runtime complexity: ``O(len(text))`` to index the tables once; each located problem scans
    its own table only, so reporting is linear in the file whatever it holds.
    """

    def __init__(self, text: str, path: Path, prefix: str, *,
                 trust_tokenizers: bool = False) -> None:
        self.text = text
        self.lines = text.splitlines()
        self.path = path
        self.prefix = prefix  # "tool.livetok." in pyproject.toml, "" in livetok.toml
        self.trust_tokenizers = trust_tokenizers
        self.problems: list[ConfigProblem] = []
        #: problems past MAX_PROBLEMS, counted and not listed
        self.unlisted = 0
        self.glob_stars = glob_stars_limit()
        self._known: list[str] | None = None
        header = re.compile(r"\s*\[\[\s*" + re.escape(prefix) + r"budget\s*\]\]")
        top = re.compile(r"\s*\[\s*" + re.escape(prefix.rstrip(".")) + r"\s*\]") \
            if prefix else None
        #: 0-based lines of each [[budget]] header, in order
        self._rule_lines = [i for i, line in enumerate(self.lines) if header.match(line)]
        #: where the top table's keys start (None: no such table)
        self._top_line: int | None = 0 if top is None else next(
            (i + 1 for i, line in enumerate(self.lines) if top.match(line)), None)

    def problem(self, key: str, message: str, *, rule: int | None = None,
                line: int | None = None) -> None:
        if len(self.problems) >= MAX_PROBLEMS:
            self.unlisted += 1
            return
        if line is None:
            line = self.locate(key.rsplit(".", 1)[-1], rule)
        self.problems.append(ConfigProblem(str(self.path), line, key, message))

    def all_problems(self) -> list[ConfigProblem]:
        """The problems listed, and one more line counting those that were not."""
        if not self.unlisted:
            return self.problems
        return [*self.problems, ConfigProblem(str(self.path), None, "", (
            f"and {self.unlisted:,} more problem(s), not listed: fix the ones above first"))]

    def known_encodings(self) -> list[str]:
        if self._known is None:
            self._known = _known_encodings()
        return self._known

    def where(self, rule: int | None) -> str:
        return f"{self.prefix or ''}budget #{rule}" if rule else (self.prefix.rstrip(".") or "top level")

    def locate(self, key: str, rule: int | None) -> int | None:
        """1-based line of ``key`` in the top table or in the ``rule``-th ``[[budget]]``.

        Runtime complexity: ``O(lines of that table)``.
        """
        if rule is None:
            start = self._top_line
        else:
            start = self._rule_lines[rule - 1] if rule <= len(self._rule_lines) else None
        if start is None:
            return None
        key_re = re.compile(r"\s*[\"']?" + re.escape(key) + r"[\"']?\s*=")
        for i in range(start, len(self.lines)):
            line = self.lines[i]
            if i > start and line.lstrip().startswith("[[") and rule is not None:
                break
            if key_re.match(line):
                return i + 1
            if rule is None and i > start and line.lstrip().startswith("["):
                break
        return min(start + 1, max(len(self.lines), 1))

    def unknown_keys(self, table: Mapping[str, Any], allowed: tuple[str, ...], rule: int | None,
                     what: str) -> None:
        for key in table:
            if key not in allowed:
                close = difflib.get_close_matches(key[:100], allowed, n=1)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                self.problem(f"{what}.{key[:100]}", f"{what}: unknown key {shown(key)} (allowed: "
                             f"{', '.join(allowed)}){hint}", rule=rule)

    def integer(self, value: Any, key: str, what: str, rule: int | None, *, minimum: int = 0,
                maximum: int | None = None) -> int | None:
        if isinstance(value, int) and not isinstance(value, bool) and value >= minimum and (
                maximum is None or value <= maximum):
            return value
        bound = f"from {minimum} to {maximum}" if maximum is not None else f">= {minimum}"
        self.problem(f"{what}.{key}", f"{what}: {key!r} must be an integer {bound}, "
                     f"got {shown(value)}", rule=rule)
        return None

    def money(self, value: Any, key: str, what: str, rule: int | None) -> Decimal | None:
        """A price or a cost: a number from 0 to 10**9 with at most 12 decimals (read exactly:
        TOML floats are parsed as decimals), else a problem."""
        if isinstance(value, int) and not isinstance(value, bool):
            value = Decimal(value)
        if isinstance(value, Decimal) and value.is_finite() and 0 <= value <= _MONEY_MAX:
            exponent = value.as_tuple().exponent
            if isinstance(exponent, int) and exponent >= -_MONEY_DECIMALS:
                return value if value != 0 else Decimal(0)  # not -0
        unit = "currency units per million tokens" if key == "price" else "currency units"
        self.problem(f"{what}.{key}", f"{what}: {key!r} must be a number from 0 to "
                     f"{_MONEY_MAX:,} with at most {_MONEY_DECIMALS} decimals ({unit}), "
                     f"got {shown(value)}", rule=rule)
        return None

    def encoding(self, value: Any, key: str, what: str, rule: int | None) -> str | None:
        if isinstance(value, str) and is_file_name(value):
            return self.tokenizer_file(value, key, what, rule)
        known = self.known_encodings()
        if isinstance(value, str) and value not in known:
            try:  # a model's name (livetok models): exact counts only
                if model_encoding(value) is not None:
                    return value
            except VocabularyError as exc:
                self.problem(f"{what}.{key}", f"{what}: {key!r}: {exc}", rule=rule)
                return None
        if not isinstance(value, str) or value not in known:
            close = difflib.get_close_matches(str(value)[:100], known, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            self.problem(f"{what}.{key}", f"{what}: {key!r} must be one of {', '.join(known)} "
                         f"or a model's name (livetok models), got {shown(value)}{hint}",
                         rule=rule)
            return None
        return value

    def tokenizer_file(self, value: str, key: str, what: str, rule: int | None) -> str | None:
        """A tokenizer.json encoding: ``hf:ORG/NAME`` found in the local Hugging Face cache,
        or a path inside the budget file's folder, relative to it (returned absolute; a model's
        folder as its tokenizer.json,
        :func:`~livetok.incremental.registry.tokenizer_json_path`), which is loaded only when
        the caller trusts the repository's tokenizers."""
        try:
            if value.startswith("hf:"):
                find_hf_tokenizer(value)
                return value
            if os.path.isabs(value) or value.startswith("~"):
                raise VocabularyError(f"{shown(value)} is not inside {self.path.name}'s folder; "
                                      "name a tokenizer.json by a path relative to it")
            p = tokenizer_json_path(os.path.abspath(self.path.parent / value))
            if not trust.inside(p, self.path.parent):
                raise VocabularyError(f"{shown(value)} resolves to a file outside "
                                      f"{self.path.name}'s folder; a budget file names "
                                      "tokenizer files inside its own folder")
            if not self.trust_tokenizers:
                raise VocabularyError(f"{shown(value)}: not loaded: {_UNTRUSTED_TOKENIZER}")
            if not os.path.isfile(p):
                raise VocabularyError(f"no tokenizer.json at {p}")
            return p
        except (VocabularyError, OSError) as exc:
            self.problem(f"{what}.{key}", f"{what}: {key!r}: {exc}", rule=rule)
            return None


def parse_config(text: str, path: Path, *, trust_tokenizers: bool = False) -> BudgetConfig:
    """A budget file's text (``livetok.toml``, or ``pyproject.toml`` with ``[tool.livetok]``)
    as a :class:`BudgetConfig`; raises :class:`ConfigError` naming the file, the key, the
    line and what is allowed.

    >>> parse_config('[[budget]]\\nfiles = ["*.md"]\\nmaxx = 3', Path("livetok.toml"))
    Traceback (most recent call last):
    ...
    livetok.server.budgets.rules.ConfigError: livetok.toml:3: budget #1: unknown key 'maxx' (allowed: files, max, section, section_level, encoding, chunk, total, price, max_cost, total_cost); did you mean 'max'?

    ``trust_tokenizers``: whether a ``tokenizer.json`` path the file names may be loaded
    (else each such ``encoding`` is a problem saying how to trust it).

    Runtime complexity: ``O(len(text))``.
    """
    try:
        # floats as exact decimals: a price of 2.50 and a cost of 0.05 are compared exactly
        data = tomllib.loads(text, parse_float=Decimal)
    except tomllib.TOMLDecodeError as exc:
        m = re.search(r"at line (\d+)", str(exc))
        raise ConfigError([ConfigProblem(str(path), int(m.group(1)) if m else None, "",
                                         f"not valid TOML: {exc}")]) from None
    except (RecursionError, MemoryError) as exc:
        raise ConfigError([ConfigProblem(str(path), None, "", (
            "nested too deeply to read" if isinstance(exc, RecursionError)
            else "too large to read") + "; a budget file is a few flat tables")]) from None
    prefix = ""
    if path.name == "pyproject.toml":
        prefix = "tool.livetok."
        tool = data.get("tool", {})
        data = tool.get("livetok", {}) if isinstance(tool, dict) else {}
    v = _Validator(text, path, prefix, trust_tokenizers=trust_tokenizers)
    if not isinstance(data, dict):
        v.problem("tool.livetok", "tool.livetok must be a table")
        raise ConfigError(v.problems)
    top = v.where(None)
    v.unknown_keys(data, _TOP_KEYS, None, top)
    encoding = DEFAULT_ENCODING
    if "encoding" in data:
        encoding = v.encoding(data["encoding"], "encoding", top, None) or DEFAULT_ENCODING
    baseline = data.get("baseline", DEFAULT_BASELINE)
    if not isinstance(baseline, str) or not _inside_name(baseline):
        v.problem(f"{top}.baseline", f"{top}: 'baseline' must be a file name inside "
                  f"{path.name}'s folder (relative to it, without '..'), got {shown(baseline)}")
        baseline = DEFAULT_BASELINE
    price = v.money(data["price"], "price", top, None) if "price" in data else None
    currency = data.get("currency", DEFAULT_CURRENCY)
    if not isinstance(currency, str) or not re.fullmatch(r"[^\s\x00-\x1f\x7f]{1,12}", currency):
        v.problem(f"{top}.currency", f"{top}: 'currency' must be a short label shown after "
                  f"amounts, such as \"USD\" or \"€\" (1 to 12 characters, no spaces), got "
                  f"{shown(currency)}")
        currency = DEFAULT_CURRENCY
    raw_rules = data.get("budget", [])
    if not isinstance(raw_rules, list):
        v.problem(f"{top}.budget", f"{top}: 'budget' must be an array of tables: write each "
                  f"rule under [[{prefix}budget]]")
        raw_rules = []
    globs = sum(len(r["files"]) if isinstance(r, dict) and isinstance(r.get("files"), list)
                else 1 for r in raw_rules)
    limit = size_limit(GLOBS_ENV, _GLOBS, "globs")
    if globs > limit:
        v.problem(f"{top}.budget", f"{top}: {len(raw_rules):,} rules with {globs:,} globs in all, "
                  f"more than the {limit:,} globs livetok reads from a budget file; merge "
                  f"rules, or set {GLOBS_ENV}", line=1)
        raw_rules = []
    # a top-level price that is there but wrong is its own problem, not a missing price
    priced = "price" in data
    rules = [r for i, raw in enumerate(raw_rules, 1) if (r := _parse_rule(v, raw, i, priced))]
    if v.problems:
        raise ConfigError(v.all_problems())
    return BudgetConfig(path=path, encoding=encoding, baseline=baseline, rules=tuple(rules),
                        price=price, currency=currency)


def _inside_name(name: str) -> bool:
    """Whether ``name`` is a relative path that stays in its folder (no ``..``, not absolute,
    no ``~``).

    >>> _inside_name(".livetok-baseline.json"), _inside_name("../.bash_profile")
    (True, False)

    Runtime complexity: ``O(len(name))``.
    """
    if not name or "\0" in name or name.startswith("~") or os.path.isabs(name):
        return False
    parts = name.replace("\\", "/").split("/")
    return ".." not in parts and parts[-1] not in ("", ".")


def _parse_rule(v: _Validator, raw: Any, i: int, priced: bool = False) -> BudgetRule | None:
    """The ``i``-th ``[[budget]]`` table, or None; ``priced``: the top level has a price."""
    what = v.where(i)
    if not isinstance(raw, dict):
        v.problem(what, f"{what} must be a table with 'files' and budgets", rule=i)
        return None
    v.unknown_keys(raw, _RULE_KEYS, i, what)
    files = raw.get("files")
    if isinstance(files, str):
        files = [files]
    spec = None
    bad = next((p for f in files if isinstance(f, str) and (p := glob_problem(f, v.glob_stars))),
               None) if isinstance(files, list) else None
    if not isinstance(files, list) or not files or not all(isinstance(f, str) and f for f in files):
        v.problem(f"{what}.files", f"{what}: 'files' must be a list of globs such as "
                  f"[\"CLAUDE.md\", \"docs/**/*.md\"], got {shown(files)}", rule=i)
        files = []
    elif bad is not None:
        v.problem(f"{what}.files", f"{what}: 'files' has a glob livetok does not match: {bad}",
                  rule=i)
        files = []
    else:
        try:
            spec = pathspec.GitIgnoreSpec.from_lines(files)
        except Exception as exc:  # pathspec's own pattern error
            v.problem(f"{what}.files", f"{what}: 'files' has a bad glob ({exc})", rule=i)
    out: dict[str, Any] = {}
    for key in ("max", "section", "total"):
        if key in raw:
            out[key] = v.integer(raw[key], key, what, i)
    for key in ("price", *_COST_KEYS):
        if key in raw:
            out[key] = v.money(raw[key], key, what, i)
    for key in _COST_KEYS:
        if key in raw and not priced and "price" not in raw:
            v.problem(f"{what}.{key}", f"{what}: {key!r} is an amount of money and needs a "
                      "price: declare price = 2.50 (currency units per million tokens of the "
                      "rule's encoding) at the top level or in this rule", rule=i)
    if "section_level" in raw:
        out["section_level"] = v.integer(raw["section_level"], "section_level", what, i,
                                         minimum=1, maximum=6)
    if "encoding" in raw:
        out["encoding"] = v.encoding(raw["encoding"], "encoding", what, i)
    if "chunk" in raw:
        out["chunk"] = _parse_chunk(v, raw["chunk"], i, f"{what}.chunk")
    if not any(k in raw for k in ("max", "section", "chunk", "encoding", "total", "price",
                                  *_COST_KEYS)) and set(raw) <= set(_RULE_KEYS):
        v.problem(what, f"{what}: give it a budget: 'max', 'section', 'chunk', 'total', "
                  "'max_cost' or 'total_cost' (or only an 'encoding' or a 'price' for "
                  "front-matter budgets)", rule=i, line=v.locate("files", i))
    lines = {key: v.locate(key, i) or 1 for key in ("total", "total_cost") if key in raw}
    return BudgetRule(index=i, files=tuple(files), spec=spec, lines=lines, **out)


def _parse_chunk(v: _Validator, raw: Any, i: int, what: str) -> ChunkRule | None:
    if isinstance(raw, int) and not isinstance(raw, bool):
        raw = {"max": raw}
    if not isinstance(raw, dict):
        v.problem(what, f"{what} must be a table such as {{ max = 512, by = \"section\" }}, "
                  f"got {shown(raw)}", rule=i, line=v.locate("chunk", i))
        return None
    v.unknown_keys(raw, _CHUNK_KEYS, i, what)
    if "max" not in raw:
        v.problem(f"{what}.max", f"{what}: 'max' (tokens per chunk) is required", rule=i,
                  line=v.locate("chunk", i))
        return None
    top = v.integer(raw["max"], "max", what, i)
    enc = v.encoding(raw["encoding"], "encoding", what, i) if "encoding" in raw else None
    by = raw.get("by", "section")
    if by not in _CHUNK_BY:
        v.problem(f"{what}.by", f"{what}: 'by' must be one of {', '.join(_CHUNK_BY)}, got "
                  f"{shown(by)}", rule=i, line=v.locate("chunk", i))
    level = v.integer(raw.get("level", 6), "level", what, i, minimum=1, maximum=6)
    if top is None or level is None or by not in _CHUNK_BY:
        return None
    return ChunkRule(max=top, encoding=enc, by=by, level=level)


def read_config_text(path: Path) -> str:
    """The text of the budget file ``path``: a regular file inside its own folder (a link to
    a file elsewhere is refused), at most ``$LIVETOK_MAX_CONFIG_BYTES``; else
    :class:`ConfigError`.

    Runtime complexity: ``O(min(file size, limit))``.
    """
    try:
        return trust.read_text(path, root=path.parent, limit=trust.config_limit(),
                               what="budget file")
    except trust.UntrustedFile as exc:
        raise ConfigError([ConfigProblem(str(path), None, "", str(exc).split(": ", 1)[-1])]
                          ) from None


def load_config(path: Path, *, trust_tokenizers: bool = False) -> BudgetConfig:
    """Read and parse the budget file at ``path`` (see :func:`read_config_text` and
    :func:`parse_config`).

    Runtime complexity: ``O(file size)``.
    """
    return parse_config(read_config_text(path), path, trust_tokenizers=trust_tokenizers)


def _declares_livetok(pyproject: Path) -> bool:
    """Whether a ``pyproject.toml`` has a ``[tool.livetok]`` table (others are skipped; one
    that cannot be read is taken as ours, so that :func:`load_config` reports why)."""
    try:
        text = read_config_text(pyproject)
    except ConfigError:
        return True
    if "livetok" not in text:  # cheap test first: most pyproject.toml files are not ours
        return False
    try:
        tool = tomllib.loads(text).get("tool", {})
        return isinstance(tool, dict) and "livetok" in tool
    except (tomllib.TOMLDecodeError, RecursionError, MemoryError):
        return bool(re.search(r"^\s*\[\[?\s*tool\.livetok\b", text, re.M))


class ConfigFinder:
    """Finds the budget file that governs a path, walking up from its folder; caches per
    folder and per file, so a thousand files in a few folders cost a few lookups.

    Runtime complexity: ``O(depth)`` file tests for a new folder, ``O(1)`` afterwards.
    """

    def __init__(self, *, trust_tokenizers: bool = False) -> None:
        #: whether the budget files' tokenizer.json paths may be loaded (:func:`parse_config`)
        self.trust_tokenizers = trust_tokenizers
        self._by_dir: dict[Path, Path | None] = {}
        self._parsed: dict[Path, BudgetConfig | ConfigError] = {}

    def config_path(self, folder: Path) -> Path | None:
        """The budget file for files in ``folder`` (an absolute path), or None."""
        trail: list[Path] = []
        found: Path | None = None
        d: Path | None = folder
        while d is not None:
            if d in self._by_dir:
                found = self._by_dir[d]
                break
            trail.append(d)
            for name in CONFIG_NAMES:
                p = d / name
                # subtle: lexists, not is_file: a FIFO or a link to a device is a budget file
                # that load_config refuses with a message, not one silently passed over
                if os.path.lexists(p) and not p.is_dir() and (
                        name != "pyproject.toml" or _declares_livetok(p)):
                    found = p
                    break
            if found is not None:
                break
            d = d.parent if d.parent != d else None
        for t in trail:
            self._by_dir[t] = found
        return found

    def config_for(self, path: Path) -> BudgetConfig | None:
        """The parsed budget file for ``path``; raises :class:`ConfigError` if it is invalid."""
        cfg_path = self.config_path(path.absolute().parent)
        if cfg_path is None:
            return None
        cfg = self._parsed.get(cfg_path)
        if cfg is None:
            try:
                cfg = load_config(cfg_path, trust_tokenizers=self.trust_tokenizers)
            except ConfigError as exc:
                cfg = exc
            self._parsed[cfg_path] = cfg
        if isinstance(cfg, ConfigError):
            raise cfg
        return cfg

    def clear(self) -> None:
        """Forget everything (a budget file appeared, changed or went away)."""
        self._by_dir.clear()
        self._parsed.clear()


# -- front matter ----------------------------------------------------------------------------


@dataclass(frozen=True)
class FrontMatter:
    """A Markdown file's front matter: where the body starts, and the budget it sets."""

    end_cp: int
    tokens: int | None = None
    line: int = 1


def front_matter(text: str, path: str = "<text>") -> FrontMatter:
    """The YAML front matter at the top of ``text`` (``end_cp == 0`` when there is none) and
    the budget it sets with ``token_budget:`` or ``tokens:``.

    >>> front_matter("---\\ntitle: x\\ntokens: 1200\\n---\\n# Hi\\n")
    FrontMatter(end_cp=30, tokens=1200, line=3)
    >>> front_matter("# no front matter\\n").end_cp
    0

    Runtime complexity: ``O(size of the front matter)``; YAML is parsed only when a budget
    key appears in it.
    """
    m = FRONT_MATTER.match(text, 0, front_matter_limit())
    if m is None:
        return FrontMatter(0)
    body = m.group("body")
    if not re.search(r"^(?:token_budget|tokens)\s*:", body, re.M):
        return FrontMatter(m.end())
    tokens, line, problem = _front_matter_budget(body)
    if problem is not None:
        raise ConfigError([ConfigProblem(path, line, problem[0], problem[1])])
    return FrontMatter(m.end(), tokens, line) if tokens is not None else FrontMatter(m.end())


def front_matter_limit() -> int:
    """How far into a Markdown file its front matter may end, in code points
    (``$LIVETOK_MAX_FRONT_MATTER_BYTES``, default 64 Ki): a longer block is not front matter.

    Runtime complexity: ``O(1)``.
    """
    return size_limit(FRONT_MATTER_ENV, _FRONT_MATTER_MAX)


@functools.lru_cache(maxsize=64)
def _front_matter_budget(body: str) -> tuple[int | None, int, tuple[str, str] | None]:
    """``(tokens, line, problem)`` of a front matter block that names a budget key; cached,
    so that a keystroke below the front matter does not parse it again.

    Runtime complexity: ``O(len(body))`` the first time, ``O(len(body))`` to hash it after.
    """
    import yaml  # PyYAML: imported only for files whose front matter names a budget

    try:
        data = yaml.load(body, Loader=_no_alias_loader())  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        return None, 2, ("front matter", f"front matter is not valid YAML: {shown(str(exc), 300)}")
    except RecursionError:
        return None, 2, ("front matter", "front matter is nested too deeply to read")
    if not isinstance(data, dict):
        return None, 1, None
    for key in _FRONT_MATTER_KEYS:
        if key in data:
            value = data[key]
            km = re.search(rf"^{key}\s*:", body, re.M)
            line = 2 + body.count("\n", 0, km.start()) if km else 2
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                return None, line, (f"front matter.{key}", (
                    f"front matter {key!r} must be a whole number of tokens (an integer >= 0), "
                    f"got {shown(value)}"))
            return value, line, None
    return None, 1, None


@functools.cache
def _no_alias_loader() -> type:
    """PyYAML's ``SafeLoader`` that refuses aliases (made once, on first use)."""
    import yaml

    class NoAliasLoader(yaml.SafeLoader):
        """PyYAML's safe loader without aliases: ``*name`` is refused, so nine nested anchors
        of nine references each (a few hundred bytes) cannot become a billion nodes."""

        def compose_node(self, parent: Any, index: Any) -> Any:
            if self.check_event(yaml.AliasEvent):
                event = self.peek_event()  # type: ignore[no-untyped-call]
                raise yaml.composer.ComposerError(
                    None, None, "YAML aliases (*name) are not allowed in front matter",
                    event.start_mark)
            return super().compose_node(parent, index)

    return NoAliasLoader



# -- Markdown sections -----------------------------------------------------------------------


class BudgetSection(NamedTuple):
    """A heading's section: ``[start_cp, end_cp)`` from its heading (on 1-based ``line``) to
    the next heading of the same or a higher level."""

    level: int
    title: str
    start_cp: int
    end_cp: int
    line: int

    @property
    def heading(self) -> str:
        """The heading as ATX markers and title, whatever its style: ``"## Tools"``."""
        return "#" * self.level + " " + self.title


def budget_sections(text: str, body_cp: int = 0) -> list[BudgetSection]:
    """Sections of the Markdown in ``text[body_cp:]`` (after the front matter), with offsets
    into ``text``: :func:`.markdown.sections` (ATX and setext headings), lines from 1.

    >>> [(s.level, s.title, s.line) for s in budget_sections("A\\n===\\n## B\\n```\\n# no\\n```\\n")]
    [(1, 'A', 1), (2, 'B', 3)]

    Runtime complexity: ``O(len(text))``.
    """
    return [BudgetSection(s.level, s.title, s.start_cp, s.end_cp, s.line + 1)
            for s in sections(text, body_cp)]


# -- counting and verdicts -------------------------------------------------------------------


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


# -- the baseline (ratchet) ------------------------------------------------------------------


def load_baseline(path: Path, root: Path | None = None) -> dict[str, dict[str, int]]:
    """The recorded counts of a baseline file, by file (relative to its folder) and key; an
    empty map when the file does not exist. Raises :class:`ConfigError` when it is unreadable,
    not a regular file, larger than ``$LIVETOK_MAX_CONFIG_BYTES``, or (``root`` given) outside
    ``root``.

    Runtime complexity: ``O(file size)``.
    """
    if not os.path.lexists(path):
        return {}
    try:
        raw = json.loads(trust.read_text(path, root=root, limit=trust.config_limit(),
                                         what="baseline"))
    except trust.UntrustedFile as exc:
        raise ConfigError([ConfigProblem(str(path), None, "",
                                         str(exc).split(": ", 1)[-1])]) from None
    except (ValueError, RecursionError) as exc:
        raise ConfigError([ConfigProblem(str(path), None, "", f"not a livetok baseline "
                                         f"({shown(str(exc), 200)}); delete it or rewrite it "
                                         "with --update-baseline")]) from None
    files = raw.get("files") if isinstance(raw, dict) else None
    if not isinstance(files, dict) or not all(
        isinstance(v, dict) and all(isinstance(n, int) for n in v.values()) for v in files.values()
    ):
        raise ConfigError([ConfigProblem(str(path), None, "files", "not a livetok baseline "
                                         "(expected {\"files\": {path: {key: tokens}}}); "
                                         "rewrite it with --update-baseline")])
    return files


def write_baseline(path: Path, files: Mapping[str, Mapping[str, int]],
                   root: Path | None = None) -> None:
    """Write a baseline file (sorted, one key per line, so that its diffs read well), only
    inside ``root`` when given, never through a symbolic link and never over a file that is
    not a baseline (:func:`.trust.write_baseline_file`); raises :class:`ConfigError` saying why.

    Runtime complexity: ``O(entries log entries)``.
    """
    data = {"livetok-baseline": 1,
            "files": {f: dict(sorted(files[f].items())) for f in sorted(files) if files[f]}}
    try:
        trust.write_baseline_file(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n",
                                  root=root)
    except (trust.UntrustedFile, OSError) as exc:
        message = str(exc).split(": ", 1)[-1] if isinstance(exc, trust.UntrustedFile) else (
            f"cannot write it: {exc.strerror or exc}")
        raise ConfigError([ConfigProblem(str(path), None, "", message)]) from None


def baseline_entries(verdicts: Iterable[Verdict]) -> dict[str, int]:
    """The baseline entries a file's verdicts record: the count of each span over budget."""
    return {v.key: v.tokens for v in verdicts if v.over}
