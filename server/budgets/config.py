"""The budget file: its schema, its parsing into a :class:`BudgetConfig` (one
:class:`BudgetRule` per ``[[budget]]`` table), what the rules give one file
(:class:`Budget`), and the error (:class:`ConfigError`, a list of :class:`ConfigProblem`)
that says what is wrong and where.

The budget file is ``livetok.toml`` (top-level keys) or ``[tool.livetok]`` in
``pyproject.toml``; :mod:`.discovery` reads it from disk and finds the one that governs a
file. Schema (``docs/budgets.md``)::

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
    include = ["src/**", "docs/**"]    # the workspace map: only these files (default: all)
    exclude = ["**/*.lock"]            # the workspace map: never these files

Prices and costs are read as exact decimals (:mod:`.money`). An ``encoding`` is a name
livetok knows, ``hf:ORG/NAME`` (a model whose ``tokenizer.json`` is in the local Hugging Face
cache) or the path of a ``tokenizer.json``, relative to the budget file's folder. When several
rules match a file their keys are merged in order (a later rule's key wins); Markdown front
matter (:mod:`.frontmatter`) then sets the file's ``max``.

A budget file comes with a repository, so it is untrusted input (``docs/security.md``): its
baseline and its ``tokenizer.json`` paths must lie inside its folder, a ``tokenizer.json`` it
names is loaded only when the caller trusts it (``trust_tokenizers``), its globs are bounded
(:mod:`.limits`), at most :data:`~.limits.MAX_PROBLEMS` problems are listed, and no message
quotes more than a few dozen characters of a value.
"""

from __future__ import annotations

import difflib
import os
import re
import sys
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any, Literal, Mapping


from livetok.incremental import list_encodings
from livetok.incremental.names.catalog import model_encoding
from livetok.incremental.vocab.find import find_hf_tokenizer
from livetok.incremental.vocab.readers import VocabularyError
from livetok.incremental.names.registry import ALIASES, is_file_name, tokenizer_json_path

from livetok.server import trust
from livetok.server.budgets.globs import GlobRules
from livetok.server.budgets.limits import (
    GLOBS_ENV,
    MAX_PROBLEMS,
    glob_problem,
    glob_stars_limit,
    globs_limit,
    shown,
)
from livetok.server.budgets.money import DEFAULT_CURRENCY, MONEY_DECIMALS, MONEY_MAX

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

__all__ = [
    "DEFAULT_BASELINE",
    "DEFAULT_ENCODING",
    "TRUST_TOKENIZERS_ENV",
    "Budget",
    "BudgetConfig",
    "BudgetRule",
    "ChunkRule",
    "ConfigError",
    "ConfigProblem",
    "parse_config",
]

DEFAULT_ENCODING = "o200k_base"
DEFAULT_BASELINE = ".livetok-baseline.json"

_TOP_KEYS = ("encoding", "baseline", "price", "currency", "budget", "include", "exclude")
_RULE_KEYS = ("files", "max", "section", "section_level", "encoding", "chunk", "total", "price",
              "max_cost", "total_cost")
#: the keys of a rule that are amounts of money, and need a price
_COST_KEYS = ("max_cost", "total_cost")
_CHUNK_KEYS = ("max", "encoding", "by", "level")
_CHUNK_BY = ("section", "paragraph")
#: the environment variable that makes ``livetok check`` trust tokenizer files (as
#: ``--trust-tokenizers``)
TRUST_TOKENIZERS_ENV = "LIVETOK_TRUST_TOKENIZERS"
_UNTRUSTED_TOKENIZER = (
    "pass --trust-tokenizers to livetok check (or set LIVETOK_TRUST_TOKENIZERS=1), or set "
    "livetok.trustWorkspaceTokenizers in the editor; a name livetok knows or hf:ORG/NAME needs "
    "no trust")


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
    spec: GlobRules | None = field(default=None, compare=False, repr=False)
    #: 1-based line of its ``total`` and ``total_cost`` keys in the budget file (their verdicts')
    lines: Mapping[str, int] = field(default_factory=dict, compare=False, repr=False)

    def matches(self, rel_path: str) -> bool:
        """Whether the rule's globs match ``rel_path`` (POSIX, relative to the config's folder).

        Runtime complexity: as :meth:`.globs.GlobRules.check` (never a backtracking search).
        """
        return self.spec is not None and self.spec.match(rel_path)


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
    #: the workspace map's ``include`` and ``exclude`` globs (``.gitignore`` style, relative
    #: to the folder); None: every file, no file
    include: GlobRules | None = field(default=None, compare=False, repr=False)
    exclude: GlobRules | None = field(default=None, compare=False, repr=False)

    @property
    def root(self) -> Path:
        return self.path.parent

    def excluded(self, path: Path) -> str | None:
        """Why the workspace map leaves ``path`` out by the ``include``/``exclude`` globs
        (None: it is in, as is a path outside the config's folder).

        >>> cfg = parse_config('exclude = ["*.lock"]', Path("/r/livetok.toml"))
        >>> cfg.excluded(Path("/r/a/b.lock")), cfg.excluded(Path("/r/a.md"))
        ('excluded by /r/livetok.toml (exclude)', None)

        Runtime complexity: as :meth:`.globs.GlobRules.check`.
        """
        rel = self.relative(path) if self.include or self.exclude else None
        if rel is None:
            return None
        if self.include is not None and not self.include.match(rel):
            return f"not included by {self.path} (include)"
        if self.exclude is not None and self.exclude.match(rel):
            return f"excluded by {self.path} (exclude)"
        return None

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
        if isinstance(value, Decimal) and value.is_finite() and 0 <= value <= MONEY_MAX:
            exponent = value.as_tuple().exponent
            if isinstance(exponent, int) and exponent >= -MONEY_DECIMALS:
                return value if value != 0 else Decimal(0)  # not -0
        unit = "currency units per million tokens" if key == "price" else "currency units"
        self.problem(f"{what}.{key}", f"{what}: {key!r} must be a number from 0 to "
                     f"{MONEY_MAX:,} with at most {MONEY_DECIMALS} decimals ({unit}), "
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
        :func:`~livetok.incremental.names.registry.tokenizer_json_path`), which is loaded only when
        the caller trusts the repository's tokenizers."""
        try:
            if value.startswith("hf:"):
                find_hf_tokenizer(value)
                return value
            if os.path.isabs(value) or value.startswith("~"):
                raise VocabularyError(f"{shown(value)} is not inside {self.path.name}'s folder; "
                                      "name a tokenizer.json by a path relative to it")
            p = tokenizer_json_path(os.path.abspath(self.path.parent / value))
            # the one trust rule (docs/security.md): a tokenizer.json inside this folder,
            # trusted, a regular file
            why = trust.tokenizer_refusal(p, trusted=self.trust_tokenizers,
                                          relative_to=self.path.parent,
                                          how_to_trust=_UNTRUSTED_TOKENIZER)
            if why is not None:
                raise VocabularyError(why.replace(repr(p), shown(value), 1))
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
    livetok.server.budgets.config.ConfigError: livetok.toml:3: budget #1: unknown key 'maxx' (allowed: files, max, section, section_level, encoding, chunk, total, price, max_cost, total_cost); did you mean 'max'?

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
    limit = globs_limit()
    if globs > limit:
        v.problem(f"{top}.budget", f"{top}: {len(raw_rules):,} rules with {globs:,} globs in all, "
                  f"more than the {limit:,} globs livetok reads from a budget file; merge "
                  f"rules, or set {GLOBS_ENV}", line=1)
        raw_rules = []
    # a top-level price that is there but wrong is its own problem, not a missing price
    priced = "price" in data
    rules = [r for i, raw in enumerate(raw_rules, 1) if (r := _parse_rule(v, raw, i, priced))]
    include, exclude = (_map_globs(v, data[k], k, top) if k in data else None
                        for k in ("include", "exclude"))
    if v.problems:
        raise ConfigError(v.all_problems())
    return BudgetConfig(path=path, encoding=encoding, baseline=baseline, rules=tuple(rules),
                        price=price, currency=currency, include=include, exclude=exclude)


def _map_globs(v: _Validator, raw: Any, key: str, what: str) -> GlobRules | None:
    """The workspace map's ``include`` or ``exclude``: ``.gitignore``-style globs, bounded as
    a rule's ``files`` are."""
    globs = [raw] if isinstance(raw, str) else raw
    if not isinstance(globs, list) or not all(isinstance(g, str) and g for g in globs) or \
            len(globs) > globs_limit():
        v.problem(f"{what}.{key}", f"{what}: {key!r} must be a list of at most "
                  f"{globs_limit():,} globs such as [\"src/**\", \"docs/*.md\"], got "
                  f"{shown(raw)}")
        return None
    bad = next((p for g in globs if (p := glob_problem(g, v.glob_stars))), None)
    if bad is not None:
        v.problem(f"{what}.{key}", f"{what}: {key!r} has a glob livetok does not match: {bad}")
        return None
    spec, problems = GlobRules.from_lines(globs, limit=len(globs))
    if problems:
        n, why = problems[0]
        v.problem(f"{what}.{key}", f"{what}: {key!r} has a bad glob ({shown(globs[n - 1], 24)}: "
                  f"{why})")
        return None
    return spec


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
        spec, problems = GlobRules.from_lines(files, limit=len(files))
        if problems:
            n, why = problems[0]
            v.problem(f"{what}.files", f"{what}: 'files' has a bad glob "
                      f"({shown(files[n - 1], 24)}: {why})", rule=i)
            spec = None
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
