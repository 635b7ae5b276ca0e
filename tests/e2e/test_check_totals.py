"""``livetok check``: budgets over sets of files (``total``, ``total_cost``) and in money
(``price``, ``max_cost``): the verdicts and their exact counts against tiktoken, the JSON
fields, exit codes, what a total means when only some paths are named (pre-commit), the
baseline of totals, and the validation of the new keys.

Expected counts come from tiktoken on the files' texts, and expected costs from
:class:`fractions.Fraction` arithmetic, not from livetok's own helpers.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import pytest

from livetok.server.budgets.config import ConfigError, parse_config
from livetok.server.budgets.money import tokens_for
from livetok.server.budgets.verdicts import check_text

from .._refs import tiktoken_ref
from .test_check import check as check_in_process
from .test_check import write_repo

ROOT_TOML = """\
price = 2.50
currency = "EUR"

[[budget]]
files = ["CLAUDE.md"]
max = 1000
max_cost = 0.00004

[[budget]]
files = ["docs/**/*.md", "!docs/drafts/**"]
total = 40

[[budget]]
files = ["SKILL.md"]
encoding = "cl100k_base"
price = 3
total_cost = 0.00005
"""

SUB_TOML = """\
[[budget]]
files = ["*.md"]
max = 500
"""

CLAUDE = ("# Project notes\n\nAlways run the tests before you commit. Keep functions small, "
          "name them well, and write a docstring for each public one.\n")
DOCS = {
    "docs/intro.md": "# Intro\n\nThis page introduces the project and what it is for.\n",
    "docs/guide/install.md": ("# Install\n\nRun pip install livetok, then write a livetok.toml "
                              "beside your prompts and run livetok check in CI.\n"),
    "docs/guide/usage.md": "# Usage\n\nCount tokens while you type.\n",
}
SKILLS = {
    "skills/pdf/SKILL.md": ("# PDF\n\nFill in forms with pdftk and qpdf; flatten the result "
                            "and keep the original beside it.\n"),
    "skills/csv/SKILL.md": "# CSV\n\nRead and write comma-separated files.\n",
}
OTHER = {
    "docs/drafts/wip.md": "# Draft\n\n" + "not counted: excluded by its glob. " * 20,
    "docs/build/out.md": "# Built\n\n" + "not counted: ignored by .gitignore. " * 20,
    "sub/livetok.toml": SUB_TOML,
    "sub/skills/x/SKILL.md": "# Nested\n\n" + "governed by sub/livetok.toml. " * 20,
    ".gitignore": "docs/build/\n",
}


def ref(text: str, encoding: str = "o200k_base") -> int:
    return len(tiktoken_ref(encoding).encode_ordinary(text))


def cost(tokens: int, price: str) -> Fraction:
    """What ``tokens`` cost at ``price`` per million, exactly."""
    return Fraction(tokens) * Fraction(price) / 10**6


def amount(value: Fraction, currency: str) -> str:
    """How messages write an amount: its exact decimals (the fixture's have at most eight),
    trailing zeros dropped but two kept."""
    whole, frac = divmod(value, 1)
    digits = f"{int(frac * 10**8):08d}".rstrip("0").ljust(2, "0")
    return f"{int(whole):,}.{digits} {currency}"


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return write_repo(tmp_path / "repo", {"livetok.toml": ROOT_TOML, "CLAUDE.md": CLAUDE, **DOCS,
                                          **SKILLS, **OTHER}, monkeypatch)


def check(*args: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """``livetok check -j 1 ARGS`` in this process: (exit status, stdout, stderr)."""
    return check_in_process("-j", "1", *args, capsys=capsys)


def check_json(*args: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, dict]:
    rc, out, _ = check("--format", "json", *args, capsys=capsys)
    return rc, json.loads(out)


def by_kind(data: dict, kind: str) -> list[dict]:
    return [v for v in data["verdicts"] if v["kind"] == kind]


def docs_total() -> tuple[int, list[tuple[str, int]]]:
    counts = {name: ref(text) for name, text in DOCS.items()}
    top = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return sum(counts.values()), top


def skills_total() -> int:
    return sum(ref(text, "cl100k_base") for text in SKILLS.values())


# -- verdicts --------------------------------------------------------------------------------


def test_totals_and_costs_match_the_references(repo, capsys):
    rc, data = check_json(capsys=capsys)
    assert rc == 1 and data["status"] == 1 and data["errors"] == []
    n, top = docs_total()
    assert n > 40, "fixture: the docs should be over their total"
    [total] = by_kind(data, "total")
    assert (total["path"], total["line"], total["title"]) == ("livetok.toml", 11, "budget #2")
    assert (total["tokens"], total["budget"], total["files"]) == (n, 40, 3)
    assert total["top"] == [{"path": p, "tokens": t} for p, t in top]
    assert total["over"] and total["fails"] and total["key"] == "total #2"
    # the top-level price applies to the total: cost in the JSON, not in a tokens message
    assert total["cost"] == pytest.approx(float(cost(n, "2.50")))
    assert (total["price"], total["currency"], total["cost_budget"]) == (2.5, "EUR", None)
    largest = ", ".join(f"{p} {t:,}" for p, t in top)
    assert total["message"] == (f'total "budget #2" {n:,} tokens (o200k_base) in 3 files, '
                                f"{n - 40:,} over the budget of 40; largest: {largest}")

    # the skills' total cost, in the rule's encoding and at the rule's price; the nested
    # budget file's SKILL.md is not in the root's set
    s = skills_total()
    [total_cost] = by_kind(data, "total_cost")
    assert (total_cost["line"], total_cost["tokens"], total_cost["files"]) == (17, s, 2)
    assert total_cost["encoding"] == "cl100k_base" and total_cost["price"] == 3
    assert total_cost["cost"] == pytest.approx(float(cost(s, "3")))
    assert total_cost["cost_budget"] == pytest.approx(0.00005)
    assert cost(s, "3") > Fraction("0.00005"), "fixture: the skills should cost too much"
    assert total_cost["over"] and total_cost["budget"] == 16  # the whole tokens 0.00005 pays for
    assert total_cost["message"].startswith(
        f'total "budget #3" {s:,} tokens (cl100k_base) in 2 files cost '
        f"{amount(cost(s, '3'), 'EUR')} at 3.00 EUR per million tokens, "
        f"{amount(cost(s, '3') - Fraction('0.00005'), 'EUR')} over the cost budget of "
        "0.00005 EUR; largest: skills/pdf/SKILL.md ")

    # the per-file cost: CLAUDE.md within max = 1000 but over max_cost = 0.00004 EUR
    c = ref(CLAUDE)
    [fc] = by_kind(data, "file_cost")
    assert cost(c, "2.50") > Fraction("0.00004"), "fixture: CLAUDE.md should cost too much"
    assert (fc["path"], fc["tokens"], fc["fails"], fc["budget"]) == ("CLAUDE.md", c, True, 16)
    over = cost(c, "2.50") - Fraction("0.00004")
    assert fc["message"] == (f"{c:,} tokens (o200k_base) cost {amount(cost(c, '2.50'), 'EUR')} "
                             f"at 2.50 EUR per million tokens, {amount(over, 'EUR')} over the "
                             "cost budget of 0.00004 EUR")
    # every verdict a price applies to reports its cost; the nested budget file has none
    for v in data["verdicts"]:
        if v["path"].startswith("sub/"):
            assert v["cost"] is None and v["price"] is None
        else:
            assert v["cost"] == pytest.approx(v["tokens"] * v["price"] / 1e6)

    # the text output: one line per budget exceeded, on the budget file's key line
    rc, out, err = check(capsys=capsys)
    assert rc == 1
    assert f"livetok.toml:11: {total['message']}" in out.splitlines()
    assert f"CLAUDE.md:1: {fc['message']}" in out.splitlines()


def test_within_budgets_exit_zero(repo, capsys):
    n, _ = docs_total()
    (repo / "livetok.toml").write_text(ROOT_TOML.replace("total = 40", f"total = {n}")
                                       .replace("max_cost = 0.00004", "max_cost = 1")
                                       .replace("total_cost = 0.00005", "total_cost = 1.00"))
    rc, out, err = check(capsys=capsys)
    assert (rc, out) == (0, ""), err
    rc, data = check_json(capsys=capsys)
    [total] = by_kind(data, "total")
    assert rc == 0 and total["tokens"] == n and not total["over"]
    assert total["message"] == f'total "budget #2" {n:,} tokens (o200k_base) in 3 files, ' \
                               f"within the budget of {n:,}"


def test_summary_lists_totals_and_costs(repo, capsys):
    rc, out, _ = check("--summary", capsys=capsys)
    assert rc == 1
    n, _ = docs_total()
    rows = {line.split()[0]: line for line in out.splitlines() if line.startswith("livetok.toml:")
            or line.startswith("CLAUDE.md:")}
    assert rows["livetok.toml:11"].split()[1:6] == ["total", "budget", "#2", "(3", "files)"]
    assert f"over by {n - 40:,}" in rows["livetok.toml:11"]
    header = next(line for line in out.splitlines() if line.startswith("file "))
    assert header.split() == ["file", "what", "tokens", "cost", "budget", "encoding", "status"]


# -- a subset of paths (pre-commit) ----------------------------------------------------------


def test_a_subset_of_paths_checks_the_whole_set(repo, capsys):
    """Pre-commit names the changed files: a total they touch is summed over every file of
    its set, read from the budget file's folder; the other totals are not checked (a file in
    no set touches none), unless the budget file itself is named."""
    _, full = check_json(capsys=capsys)
    want = {v["kind"]: v for v in full["verdicts"] if v["kind"].startswith("total")}
    rc, data = check_json("docs/intro.md", capsys=capsys)
    assert rc == 1 and [v["kind"] for v in data["verdicts"]] == ["total"]
    assert by_kind(data, "total")[0] == want["total"]
    # the budget file itself (pre-commit passes it when it changes): every total
    _, data = check_json("livetok.toml", capsys=capsys)
    assert {v["kind"]: v for v in data["verdicts"]} == want
    # a file in no set: no total
    _, data = check_json("CLAUDE.md", capsys=capsys)
    assert {v["kind"] for v in data["verdicts"]} == {"file", "file_cost"}
    # a file named though .gitignore ignores it is checked, but counts in no total (as
    # the walk of the folder does not reach it); the same from a subfolder
    _, data = check_json("docs/build/out.md", "docs/guide/usage.md", capsys=capsys)
    assert by_kind(data, "total")[0]["tokens"] == want["total"]["tokens"]
    _, data = check_json("docs", capsys=capsys)
    assert by_kind(data, "total")[0]["tokens"] == want["total"]["tokens"]


def test_the_pre_commit_hook_fails_on_a_grown_set(repo):
    """As pre-commit runs the hook: only the changed file named, in a subprocess."""
    n, _ = docs_total()
    (repo / "livetok.toml").write_text(ROOT_TOML.replace("total = 40", f"total = {n}"))
    cmd = [sys.executable, "-m", "livetok.server.cli.main", "check", "docs/guide/usage.md"]
    r = subprocess.run(cmd, cwd=repo, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    grown = DOCS["docs/guide/usage.md"] + "One more line makes the set too long.\n"
    (repo / "docs/guide/usage.md").write_text(grown)
    r = subprocess.run(cmd, cwd=repo, capture_output=True, text=True, timeout=120)
    m = n - ref(DOCS["docs/guide/usage.md"]) + ref(grown)
    assert r.returncode == 1 and r.stdout.startswith(
        f'livetok.toml:11: total "budget #2" {m:,} tokens (o200k_base) in 3 files, '
        f"{m - n:,} over the budget of {n:,}; largest: "), r.stdout + r.stderr


# -- the baseline ----------------------------------------------------------------------------


def test_baseline_ratchets_totals(repo, capsys):
    rc, _, err = check("--update-baseline", capsys=capsys)
    assert rc == 0, err
    base = json.loads((repo / ".livetok-baseline.json").read_text())["files"]
    n, _ = docs_total()
    assert base["livetok.toml"] == {"total #2": n, "total_cost #3": skills_total()}
    assert base["CLAUDE.md"] == {"file_cost": ref(CLAUDE)}
    rc, out, _ = check("--summary", capsys=capsys)
    assert rc == 0 and "(baseline)" in out
    # a file of the set grows: the total fails against its baseline
    grown = DOCS["docs/intro.md"] + "More words.\n"
    (repo / "docs/intro.md").write_text(grown)
    m = n - ref(DOCS["docs/intro.md"]) + ref(grown)
    rc, data = check_json("docs/intro.md", capsys=capsys)
    [total] = by_kind(data, "total")
    assert rc == 1 and total["baseline"] == n and total["fails"]
    assert f"{m - 40:,} over the budget of 40; grew past the baseline of {n:,}; largest: " \
        in total["message"]
    # updating on a subset rewrites that file's entries and the totals it touched only
    rc, _, _ = check("--update-baseline", "docs/intro.md", capsys=capsys)
    base = json.loads((repo / ".livetok-baseline.json").read_text())["files"]
    assert rc == 0 and base["livetok.toml"] == {"total #2": m, "total_cost #3": skills_total()}
    assert base["CLAUDE.md"] == {"file_cost": ref(CLAUDE)}
    # shrinking the set below its budget and updating drops the entry; others stay
    for name in DOCS:
        (repo / name).write_text("# Short\n")
    rc, _, _ = check("--update-baseline", "docs/intro.md", capsys=capsys)
    base = json.loads((repo / ".livetok-baseline.json").read_text())["files"]
    assert rc == 0 and base["livetok.toml"] == {"total_cost #3": skills_total()}
    assert base["CLAUDE.md"] == {"file_cost": ref(CLAUDE)}


def test_budget_file_in_a_set_keeps_both_kinds_of_baseline_keys(tmp_path, monkeypatch, capsys):
    """A rule may match its own budget file: its file entry and its totals share one
    baseline entry, and each run rewrites only its part."""
    monkeypatch.chdir(tmp_path)
    toml = '[[budget]]\nfiles = ["*.toml", "*.md"]\nmax = 5\ntotal = 5\n'
    (tmp_path / "livetok.toml").write_text(toml)
    (tmp_path / "a.md").write_text("some words that are more than five tokens long\n")
    rc, _, err = check("--update-baseline", capsys=capsys)
    entry = json.loads((tmp_path / ".livetok-baseline.json").read_text())["files"]["livetok.toml"]
    assert rc == 0 and set(entry) == {"file", "total #1"}, err
    assert entry["total #1"] == ref(toml) + ref((tmp_path / "a.md").read_text())
    rc, _, _ = check("--update-baseline", "a.md", capsys=capsys)  # totals only for livetok.toml
    entry2 = json.loads((tmp_path / ".livetok-baseline.json").read_text())["files"]["livetok.toml"]
    assert rc == 0 and entry2 == entry


# -- validation ------------------------------------------------------------------------------


@pytest.mark.parametrize("toml, line, message", [
    ('[[budget]]\nfiles = ["a"]\nmax_cost = 0.05', 3,
     "budget #1: 'max_cost' is an amount of money and needs a price: declare price = 2.50"),
    ('[[budget]]\nfiles = ["a"]\ntotal_cost = 1', 3,
     "budget #1: 'total_cost' is an amount of money and needs a price"),
    ('price = -1\n[[budget]]\nfiles = ["a"]\nmax = 1', 1,
     "top level: 'price' must be a number from 0 to 1,000,000,000 with at most 12 decimals "
     "(currency units per million tokens), got -1"),
    ('[[budget]]\nfiles = ["a"]\nprice = 1\nmax_cost = -0.5', 4,
     "'max_cost' must be a number from 0 to 1,000,000,000 with at most 12 decimals (currency "
     "units), got -0.5"),
    ('[[budget]]\nfiles = ["a"]\ntotal = -3', 3, "'total' must be an integer >= 0, got -3"),
    ('[[budget]]\nfiles = ["a"]\ntotal = 1.5', 3, "'total' must be an integer >= 0, got 1.5"),
    ('price = "2.50"\n[[budget]]\nfiles = ["a"]\nmax = 1', 1, "'price' must be a number"),
    ('price = true\n[[budget]]\nfiles = ["a"]\nmax = 1', 1, "got True"),
    ('price = inf\n[[budget]]\nfiles = ["a"]\nmax = 1', 1, "got Infinity"),
    ('price = nan\n[[budget]]\nfiles = ["a"]\nmax = 1', 1, "got NaN"),
    ('price = 1e10\n[[budget]]\nfiles = ["a"]\nmax = 1', 1, "got 1E+10"),
    ('price = 0.0000000000001\n[[budget]]\nfiles = ["a"]\nmax = 1', 1, "got 1E-13"),
    ('[[budget]]\nfiles = ["a"]\nprice = [1]\nmax_cost = 1', 3, "got list of 1 items"),
    ('currency = 5\n[[budget]]\nfiles = ["a"]\nmax = 1', 1,
     "'currency' must be a short label shown after amounts, such as \"USD\" or \"€\""),
    ('currency = "U S D"\n[[budget]]\nfiles = ["a"]\nmax = 1', 1, "got 'U S D'"),
    ('currency = "' + "X" * 200 + '"\n[[budget]]\nfiles = ["a"]\nmax = 1', 1, "characters)"),
    ('[[budget]]\nfiles = ["a"]\ntotal_costs = 1', 3,
     "unknown key 'total_costs' (allowed: files, max, section, section_level, encoding, chunk, "
     "total, price, max_cost, total_cost); did you mean 'total_cost'?"),
])
def test_validation_of_the_new_keys(toml, line, message):
    with pytest.raises(ConfigError) as exc:
        parse_config(toml, Path("/r/livetok.toml"))
    [problem] = exc.value.problems
    assert message in problem.message and problem.line == line, str(exc.value)
    assert len(problem.message) < 400  # a value is quoted cut


def test_a_rule_price_or_a_top_level_one_makes_costs_valid():
    cfg = parse_config('price = 1\n[[budget]]\nfiles = ["a"]\nmax_cost = 0.5\n'
                       '[[budget]]\nfiles = ["b"]\nprice = 0\ntotal_cost = 0\n',
                       Path("/r/livetok.toml"))
    assert cfg.price == 1 and cfg.rules[0].max_cost == Decimal("0.5")
    assert cfg.rules[1].price == 0 and cfg.currency == "USD"
    # a price alone (for the JSON's costs) or a total alone is a rule
    parse_config('[[budget]]\nfiles = ["a"]\nprice = 1', Path("/r/livetok.toml"))
    parse_config('[[budget]]\nfiles = ["a"]\ntotal = 1', Path("/r/livetok.toml"))


def test_configuration_error_exits_2(repo, capsys):
    (repo / "livetok.toml").write_text(ROOT_TOML.replace("price = 2.50\n", ""))
    rc, out, err = check(capsys=capsys)
    assert rc == 2 and out == ""
    assert (f"{repo / 'livetok.toml'}:6: error: budget #1: 'max_cost' is an amount of money and "
            "needs a price") in err


# -- exact money -----------------------------------------------------------------------------


def test_cost_budgets_compare_exactly():
    """``tokens_for`` is the exact threshold: a whole count is over a cost budget iff it is
    over that number (by Fraction arithmetic), for prices and budgets with many decimals."""
    rng = random.Random(29)
    for _ in range(3000):
        price = Decimal(rng.randrange(1, 10**6)).scaleb(-rng.randrange(0, 7))
        budget = Decimal(rng.randrange(0, 10**6)).scaleb(-rng.randrange(0, 9))
        most = tokens_for(budget, price)
        assert most is not None
        for n in (most - 1, most, most + 1):
            if n >= 0:
                assert (n > most) == (Fraction(n) * Fraction(price) / 10**6 > Fraction(budget))
    assert tokens_for(Decimal("0.05"), Decimal(0)) is None


def test_price_zero_and_chunks_in_another_encoding():
    cfg = parse_config('price = 0\n[[budget]]\nfiles = ["*.md"]\nmax_cost = 0\n'
                       'chunk = { max = 100, encoding = "cl100k_base" }\nsection = 100\n',
                       Path("/r/livetok.toml"))
    text = "# A\n\nsome words\n\n## B\n\nmore words\n"
    vs = {(v.kind, v.title): v for v in check_text(Path("/r/a.md"), text, cfg)}
    fc = vs[("file_cost", "")]
    assert not fc.over and fc.cost == 0  # at a price of 0 every count is within
    assert vs[("section", "## B")].cost == 0  # counted in the rule's encoding: priced
    assert vs[("chunk", "# A")].price is None  # an embedding model's count: no price


def test_doctests_of_the_command():
    import doctest

    from livetok.server.cli import check as cmd_check

    result = doctest.testmod(cmd_check, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


def test_budget_file_takes_model_names(tmp_path: Path) -> None:
    """An exact model's name is an encoding in a budget file; an ≈ model's name or a model
    whose tokenizer is not here is a configuration problem that says why."""
    from livetok.server.budgets.config import ConfigError, parse_config

    cfg = parse_config('encoding = "gpt-4.1"\n[[budget]]\nfiles = ["*.md"]\nmax = 3\n',
                       tmp_path / "livetok.toml")
    assert cfg.encoding == "gpt-4.1"
    with pytest.raises(ConfigError, match="no exact count"):
        parse_config('encoding = "claude-sonnet-4"\n', tmp_path / "livetok.toml")
