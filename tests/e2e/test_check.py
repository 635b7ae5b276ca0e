"""``livetok check``: budgets from nested budget files, globs, front matter, Markdown sections
(ATX, setext, fences), ``.gitignore``, the baseline ratchet, JSON output, exit codes, the
pre-commit hook; every count against the reference library of its encoding.

The expected verdicts are built here from the text pieces the files are made of (each
section is written as its own string), not from livetok's section finder.
"""

from __future__ import annotations

import functools
import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from livetok.incremental import get_encoding
from livetok.server.cli import check as cmd_check
from livetok.server.budgets.config import ConfigError, parse_config
from livetok.server.budgets.frontmatter import front_matter
from livetok.server.budgets.markdown import budget_sections
from livetok.server.budgets.verdicts import check_text
from livetok.server.cli.main import main

from .._refs import tiktoken_ref

ROOT = Path(__file__).resolve().parents[2]


@functools.lru_cache(maxsize=None)
def _bert_ref():
    """HuggingFace's BertWordPiece pipeline on bert-base-uncased's vocabulary."""
    from tokenizers import BertWordPieceTokenizer

    return BertWordPieceTokenizer(dict(get_encoding("bert-base-uncased").vocab), lowercase=True)


def ref(encoding: str, text: str) -> int:
    """Token count of ``text`` by the reference library of ``encoding``."""
    if encoding == "bert-base-uncased":
        return len(_bert_ref().encode(text, add_special_tokens=False).ids)
    return len(tiktoken_ref(encoding).encode_ordinary(text))


def line_of(text: str, piece: str) -> int:
    """1-based line where ``piece`` starts in ``text`` (it must occur once)."""
    assert text.count(piece) == 1, piece
    return text[: text.index(piece)].count("\n") + 1


# -- the repository under test ---------------------------------------------------------------

ROOT_TOML = """\
encoding = "o200k_base"

[[budget]]
files = ["CLAUDE.md", "AGENTS.md"]
max = 30

[[budget]]
files = ["skills/**/SKILL.md"]
max = 5000
section = 30
encoding = "cl100k_base"

[[budget]]
files = ["docs/**/*.md", "!docs/drafts/**"]
chunk = { max = 45, encoding = "bert-base-uncased", by = "section" }
"""

SUB_PYPROJECT = """\
[project]
name = "sub"

[tool.livetok]
encoding = "r50k_base"

[[tool.livetok.budget]]
files = ["*.md"]
max = 12
"""

CLAUDE = ("# Project notes\n\nAlways run the tests before you commit. Keep functions small, "
          "name them well, and write a docstring for each public one. Never push to main.\n")
AGENTS = "# Agents\n\nBe brief.\n"

SKILL_FM = "---\nname: pdf\ndescription: Fill in PDF forms\n---\n"
SKILL_INTRO = "# PDF skill\n\nUse this skill for forms.\n\n"
SKILL_A = "## Setup\n\nInstall the tools first.\n\n"
# a setext heading of level 2, whose section holds a fence with heading-like lines
SKILL_B = ("Usage\n-----\n\nCall it like this:\n\n```sh\n## not a heading\nfill --form a.pdf\n"
           "Title\n---\n```\n\n")
SKILL_C = ("## Tools\n\nThe tools are pdftk, qpdf and poppler; each of them reads the form, "
           "fills the fields one by one and writes a flattened copy beside the original.\n\n"
           "### Details\n\nLevel three stays inside its section.\n")
SKILL = SKILL_FM + SKILL_INTRO + SKILL_A + SKILL_B + SKILL_C

GUIDE_PRE = "Read this first.\n\n"
GUIDE_1 = "Install\n=======\n\nRun pip install livetok and you are done.\n\n"
GUIDE_2 = ("## Configure\n\nWrite a livetok.toml beside your CLAUDE.md with a budget for each "
           "file, then run livetok check in continuous integration so that every change that "
           "makes a prompt longer than its budget fails before it is merged.\n")
GUIDE = GUIDE_PRE + GUIDE_1 + GUIDE_2

NOTES = "---\ntitle: Notes\ntokens: 5\n---\nThese notes are longer than five tokens.\n"
OVER = "too many words here for a budget of forty tokens? " * 12


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    r = tmp_path / "repo"
    files = {
        "livetok.toml": ROOT_TOML,
        ".gitignore": "build/\n*.tmp.md\n",
        "CLAUDE.md": CLAUDE,
        "AGENTS.md": AGENTS,
        "skills/pdf/SKILL.md": SKILL,
        "docs/guide.md": GUIDE,
        "docs/drafts/wip.md": "## Draft\n\n" + OVER,  # excluded by "!docs/drafts/**"
        "build/CLAUDE.md": OVER,  # ignored by .gitignore
        "notes/x.tmp.md": "---\ntokens: 1\n---\n" + OVER,  # ignored by .gitignore
        "notes/.gitignore": "!keep.tmp.md\n",  # a deeper .gitignore re-includes one
        "notes/keep.tmp.md": "---\ntokens: 3\n---\nfour words are here\n",
        "notes/README.md": NOTES,
        "sub/pyproject.toml": SUB_PYPROJECT,
        "sub/CLAUDE.md": "# Sub\n\nA nested project has its own, smaller budget.\n",
        "other/pyproject.toml": "[project]\nname = 'other'\n",  # not ours: skipped
        "other/CLAUDE.md": "# Other\n\nThe root budget applies here.\n",
        "src/main.py": "print('not checked: no rule names it')\n" * 50,
    }
    return write_repo(r, files, monkeypatch)


def write_repo(r: Path, files: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Path:
    """A git work tree at ``r`` holding ``files`` (path: text), made the working folder."""
    for name, text in files.items():
        p = r / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    subprocess.run(["git", "init", "-q", str(r)], check=True)
    monkeypatch.chdir(r)
    return r


def check(*args: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """``livetok check ARGS`` in this process: (exit status, stdout, stderr)."""
    capsys.readouterr()
    rc = main(["check", *args])
    out = capsys.readouterr()
    return rc, out.out, out.err


def expected_lines(repo: Path) -> list[str]:
    """The lines ``livetok check -j 1 .`` must print for the fixture, from the references."""
    lines = []

    def file_line(path: str, text: str, enc: str, budget: int, origin: str = "") -> None:
        n = ref(enc, text)
        assert n > budget, f"fixture: {path} should be over {budget}"
        lines.append(f"{path}:1: {n:,} tokens ({enc}), {n - budget:,} over the budget of "
                     f"{budget:,}{origin}")

    file_line("CLAUDE.md", CLAUDE, "o200k_base", 30)
    file_line("notes/README.md", NOTES, "o200k_base", 5, " (front matter)")
    file_line("notes/keep.tmp.md", "---\ntokens: 3\n---\nfour words are here\n", "o200k_base",
              3, " (front matter)")
    file_line("sub/CLAUDE.md", "# Sub\n\nA nested project has its own, smaller budget.\n",
              "r50k_base", 12)
    # sections of level 2 in SKILL.md: "## Setup", the setext "Usage", "## Tools" (with its
    # "###" subsection); only those over 30 cl100k tokens are printed
    for title, body in (("## Setup", SKILL_A), ("## Usage", SKILL_B), ("## Tools", SKILL_C)):
        n = ref("cl100k_base", body)
        if n > 30:
            lines.append(f'skills/pdf/SKILL.md:{line_of(SKILL, body)}: section "{title}" '
                         f"{n:,} tokens (cl100k_base), {n - 30:,} over the budget of 30")
    # retrieval chunks of docs/guide.md in BERT tokens: before the first heading, the setext
    # "Install", "## Configure"
    for title, body in (("(before the first heading)", GUIDE_PRE), ("# Install", GUIDE_1),
                        ("## Configure", GUIDE_2)):
        n = ref("bert-base-uncased", body)
        if n > 45:
            lines.append(f'docs/guide.md:{line_of(GUIDE, body)}: chunk "{title}" {n:,} tokens '
                         f"(bert-base-uncased), {n - 45:,} over the chunk budget of 45")
    return sorted(lines)


# -- the command on a repository -------------------------------------------------------------


def test_check_repository_matches_the_references(repo, capsys):
    # the fixture is meant to exercise both outcomes of each kind of budget
    assert ref("cl100k_base", SKILL_C) > 30 >= ref("cl100k_base", SKILL_A)
    assert ref("cl100k_base", SKILL_B) <= 30
    assert ref("bert-base-uncased", GUIDE_2) > 45 >= ref("bert-base-uncased", GUIDE_1)
    rc, out, err = check("-j", "1", ".", capsys=capsys)
    assert rc == 1, err
    assert sorted(out.splitlines()) == expected_lines(repo)
    assert "budget(s) exceeded" in err


def test_json_output_lists_every_budget(repo, capsys):
    rc, out, _ = check("-j", "1", "--format", "json", capsys=capsys)
    assert rc == 1
    data = json.loads(out)
    assert data["status"] == 1 and data["errors"] == []
    by = {(v["path"], v["kind"], v["title"]): v for v in data["verdicts"]}
    # within-budget spans are listed too, with the reference counts
    setup = by[("skills/pdf/SKILL.md", "section", "## Setup")]
    assert setup["tokens"] == ref("cl100k_base", SKILL_A) and not setup["over"]
    assert setup["line"] == line_of(SKILL, SKILL_A) and setup["encoding"] == "cl100k_base"
    usage = by[("skills/pdf/SKILL.md", "section", "## Usage")]  # the setext heading
    assert usage["tokens"] == ref("cl100k_base", SKILL_B)
    skill = by[("skills/pdf/SKILL.md", "file", "")]
    assert skill["tokens"] == ref("cl100k_base", SKILL) and skill["budget"] == 5000
    agents = by[("AGENTS.md", "file", "")]
    assert agents["tokens"] == ref("o200k_base", AGENTS) and agents["fails"] is False
    other = by[("other/CLAUDE.md", "file", "")]  # other/pyproject.toml is not a budget file
    assert other["budget"] == 30 and other["source"] == "livetok.toml budget #1"
    # the fenced "## not a heading" and "Title/---" are no sections; "###" is not budgeted
    titles = {t for (p, k, t) in by if p == "skills/pdf/SKILL.md" and k == "section"}
    assert titles == {"## Setup", "## Usage", "## Tools"}
    # ignored and excluded files are absent
    paths = {p for (p, _, _) in by}
    assert not paths & {"build/CLAUDE.md", "notes/x.tmp.md", "docs/drafts/wip.md"}
    assert data["exceeded"] == len(expected_lines(repo))
    assert sum(v["fails"] for v in data["verdicts"]) == data["exceeded"]


def test_summary_table(repo, capsys):
    rc, out, _ = check("-j", "1", "--summary", "AGENTS.md", "CLAUDE.md", capsys=capsys)
    assert rc == 1
    rows = out.splitlines()
    assert rows[0].startswith("CLAUDE.md:1: ")  # the failure first, then the table
    assert rows[1].split() == ["file", "what", "tokens", "budget", "encoding", "status"]
    table = {r.split()[0]: r for r in rows[3:]}
    n = ref("o200k_base", AGENTS)
    assert table["AGENTS.md:1"].split() == ["AGENTS.md:1", "file", str(n), "30", "o200k_base", "ok"]
    assert f"over by {ref('o200k_base', CLAUDE) - 30}" in table["CLAUDE.md:1"]


def test_paths_explicit_files_and_exit_zero(repo, capsys):
    rc, out, err = check("-j", "1", "AGENTS.md", "docs/drafts/wip.md", "src/main.py",
                         capsys=capsys)
    assert (rc, out) == (0, ""), err  # wip.md is excluded by its glob, main.py named by none
    assert "all within" in err
    # a file named explicitly is checked even where .gitignore would skip it (as git add -f)
    rc, out, _ = check("-j", "1", "build/CLAUDE.md", capsys=capsys)
    assert rc == 1 and out.startswith("build/CLAUDE.md:1: ")
    # a folder is walked: only the skill and its section over budget
    rc, out, _ = check("-j", "1", "skills", capsys=capsys)
    assert rc == 1 and out.splitlines() == [
        line for line in expected_lines(repo) if line.startswith("skills/")]
    rc, _, err = check("no-such-file.md", capsys=capsys)
    assert rc == 2 and "no such file" in err


def test_fixing_a_file_passes(repo, capsys):
    (repo / "CLAUDE.md").write_text("# Notes\n\nBe kind.\n", encoding="utf-8")
    rc, out, _ = check("-j", "1", "CLAUDE.md", "AGENTS.md", capsys=capsys)
    assert (rc, out) == (0, "")


def test_baseline_ratchet(repo, capsys):
    rc, _, err = check("-j", "1", "--update-baseline", capsys=capsys)
    assert rc == 0, err
    base = json.loads((repo / ".livetok-baseline.json").read_text())
    assert base["files"]["CLAUDE.md"] == {"file": ref("o200k_base", CLAUDE)}
    assert base["files"]["skills/pdf/SKILL.md"] == {
        "section ## Tools": ref("cl100k_base", SKILL_C)}
    # the nested config keeps its own baseline, relative to its folder
    sub = json.loads((repo / "sub" / ".livetok-baseline.json").read_text())
    assert list(sub["files"]) == ["CLAUDE.md"]
    # nothing grew: passes, and the summary says why
    rc, out, _ = check("-j", "1", "--summary", capsys=capsys)
    assert rc == 0 and "(baseline)" in out
    # a file that grows past its recorded count fails again
    (repo / "CLAUDE.md").write_text(CLAUDE + "One more rule.\n", encoding="utf-8")
    rc, out, _ = check("-j", "1", capsys=capsys)
    n = ref("o200k_base", CLAUDE + "One more rule.\n")
    assert rc == 1 and out.splitlines() == [
        f"CLAUDE.md:1: {n:,} tokens (o200k_base), {n - 30:,} over the budget of 30; grew past "
        f"the baseline of {ref('o200k_base', CLAUDE):,}"]
    # a run on one file rewrites only that file's entry
    (repo / "CLAUDE.md").write_text("# Short\n", encoding="utf-8")
    rc, _, _ = check("-j", "1", "--update-baseline", "CLAUDE.md", capsys=capsys)
    base = json.loads((repo / ".livetok-baseline.json").read_text())
    assert rc == 0 and "CLAUDE.md" not in base["files"] and "skills/pdf/SKILL.md" in base["files"]
    # a broken baseline file is a configuration error
    (repo / ".livetok-baseline.json").write_text("{not json", encoding="utf-8")
    rc, _, err = check("-j", "1", capsys=capsys)
    assert rc == 2 and ".livetok-baseline.json" in err and "--update-baseline" in err


def test_configuration_errors_exit_2_and_say_what_is_allowed(repo, capsys):
    (repo / "sub" / "pyproject.toml").write_text(SUB_PYPROJECT.replace(
        "max = 12", "max = 12\nsections = 3\nencoding = 'o200k'"), encoding="utf-8")
    rc, out, err = check("-j", "1", "sub", capsys=capsys)
    assert rc == 2 and out == ""
    lines = err.splitlines()
    pyproject = str(repo / "sub" / "pyproject.toml")
    assert f"{pyproject}:10: error: tool.livetok.budget #1: unknown key 'sections' (allowed: " \
           "files, max, section, section_level, encoding, chunk, total, price, max_cost, total_cost); " \
           "did you mean 'section'?" in lines
    assert any(line.startswith(f"{pyproject}:11: error: tool.livetok.budget #1: 'encoding' must "
                               "be one of ") and "did you mean 'o200k_base'?" in line
               for line in lines)
    # front matter with a budget that is not a number
    (repo / "notes" / "README.md").write_text("---\ntokens: lots\n---\nx\n", encoding="utf-8")
    rc, _, err = check("-j", "1", "--format", "json", "notes/README.md", capsys=capsys)
    assert rc == 2
    rc, _, err = check("-j", "1", "notes/README.md", capsys=capsys)
    assert rc == 2 and "notes/README.md:2: error: front matter 'tokens' must be a whole " \
                       "number of tokens (an integer >= 0), got 'lots'" in err
    (repo / "livetok.toml").write_text("[[budget]]\nfiles = 'x'\nmax =\n", encoding="utf-8")
    rc, _, err = check("-j", "1", "AGENTS.md", capsys=capsys)
    assert rc == 2 and "livetok.toml:3: error: not valid TOML" in err


@pytest.mark.parametrize("bad, message", [
    ("[[budget]]\nfiles = []\nmax = 1", "'files' must be a list of globs"),
    ("[[budget]]\nfiles = ['a']\nmax = -1", "'max' must be an integer >= 0, got -1"),
    ("[[budget]]\nfiles = ['a']\nsection = 1\nsection_level = 7",
     "'section_level' must be an integer from 1 to 6, got 7"),
    ("[[budget]]\nfiles = ['a']\nchunk = { by = 'section' }", "'max' (tokens per chunk) is required"),
    ("[[budget]]\nfiles = ['a']\nchunk = { max = 5, by = 'page' }",
     "'by' must be one of section, paragraph, got 'page'"),
    ("[[budget]]\nfiles = ['a']", "give it a budget"),
    ("budget = 3", "'budget' must be an array of tables"),
    ("[[budget]]\nfiles = ['!']\nmax = 1", "bad glob"),
])
def test_config_validation_messages(bad, message):
    with pytest.raises(ConfigError) as exc:
        parse_config(bad, Path("/r/livetok.toml"))
    assert message in str(exc.value) and str(exc.value).startswith("/r/livetok.toml:")


def test_rules_merge_in_order_and_front_matter_sets_max():
    cfg = parse_config('encoding = "cl100k_base"\n[[budget]]\nfiles = ["*.md"]\nmax = 100\n'
                       'section = 50\n[[budget]]\nfiles = ["CLAUDE.md"]\nmax = 3\n'
                       'encoding = "o200k_base"\n', Path("/r/livetok.toml"))
    b = cfg.rule_budget(Path("/r/a/CLAUDE.md"))  # a glob without "/" matches at any depth
    assert (b.max, b.section, b.encoding) == (3, 50, "o200k_base")
    assert cfg.rule_budget(Path("/r/x.md")).encoding == "cl100k_base"
    assert cfg.rule_budget(Path("/elsewhere/x.md")) is None
    text = "---\ntoken_budget: 7\n---\n# A\n"
    [v] = [v for v in check_text(Path("/r/x.md"), text, cfg) if v.kind == "file"]
    assert (v.budget, v.source, v.tokens) == (7, "front matter", ref("cl100k_base", text))
    # front matter alone, without any budget file: o200k_base
    [v] = check_text(Path("/r/y.md"), text, None)
    assert (v.budget, v.encoding) == (7, "o200k_base")
    # not Markdown: front matter means nothing
    assert check_text(Path("/r/y.txt"), text, None) == []


def test_sections_atx_setext_and_fences():
    text = (
        "---\ntitle: x\n---\n"          # front matter: its closing --- underlines nothing
        "Intro\n\n---\n\n"              # a thematic break after a blank line: no heading
        "Top\n===\n"                    # setext level 1
        "para line one\nline two\n---\n"  # a two-line setext level 2 heading
        "~~~~\n# in a tilde fence\nx\n---\n~~~\n~~~~\n"  # the fence closes at ~~~~ only
        "``` not `a fence\n## After\n"  # a backtick line with a backtick: not a fence
        "- item\n---\n"                 # a list item then a rule: no heading
        "    ## indented code\n"
        "#hashtag\n## Last ##\n"
    )
    secs = budget_sections(text, front_matter(text).end_cp)
    assert [(s.level, s.title, s.line) for s in secs] == [
        (1, "Top", 8), (2, "para line one line two", 10), (2, "After", 20),
        (2, "Last", 25)]
    assert [text[s.start_cp:s.end_cp].splitlines()[0] for s in secs] == [
        "Top", "para line one", "## After", "## Last ##"]
    assert secs[0].end_cp == len(text) and secs[1].end_cp == secs[2].start_cp
    # CRLF lines; a lone "-" underlines (an empty list item cannot interrupt a paragraph)
    assert [s[:2] for s in budget_sections("# A\r\nx\r\n\r\nB\r\n-\r\n")] == [(1, "A"), (2, "B")]


def test_chunks_by_paragraph():
    cfg = parse_config('[[budget]]\nfiles = ["*.md"]\nchunk = { max = 3, by = "paragraph" }',
                       Path("/r/livetok.toml"))
    text = "one two\n\nthree four five six\nseven\n\n\neight\n"
    vs = check_text(Path("/r/a.md"), text, cfg)
    assert [(v.line, v.tokens, v.over) for v in vs] == [
        (1, ref("o200k_base", "one two\n"), False),
        (3, ref("o200k_base", "three four five six\nseven\n"), True),
        (7, ref("o200k_base", "eight\n"), False)]


def test_parallel_path_gives_the_same_lines(repo, capsys, monkeypatch, tmp_path):
    for i in range(12):  # enough files for two workers
        (repo / "docs" / f"p{i}.md").write_text(GUIDE * (i + 1), encoding="utf-8")
    rc1, out1, _ = check("-j", "1", capsys=capsys)
    # every process that checks a file leaves its pid (forked workers inherit the patch)
    pids = tmp_path / "pids"
    pids.mkdir()
    real = cmd_check._check_one

    def spy(t, jobs=1):
        (pids / str(os.getpid())).touch()
        return real(t, jobs)

    monkeypatch.setattr(cmd_check, "_check_one", spy)
    monkeypatch.setattr(cmd_check, "PARALLEL_MIN_BYTES", 0)
    rc2, out2, _ = check("-j", "2", capsys=capsys)
    assert (rc1, out1) == (rc2, out2) and rc1 == 1 and len(out1.splitlines()) > 12
    assert {p.name for p in pids.iterdir()} - {str(os.getpid())}, "no worker process ran"


def test_no_budgets_on_this_repository():
    """Smoke test on this repository's own docs: no budget file here, so counts are not
    needed and the command says how to add budgets, with exit status 0."""
    r = subprocess.run([sys.executable, "-m", "livetok.server.cli.main", "check", "docs", "README.md"],
                       cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "no budgets configured" in r.stderr or "all within" in r.stderr


# -- pre-commit ------------------------------------------------------------------------------


def _hook(hook_id: str) -> dict:
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    return next(h for h in hooks if h["id"] == hook_id)


def test_hook_entry_as_pre_commit_runs_it(repo):
    """The hook's ``entry`` with the file names pre-commit would pass (``types`` filtered by
    pre-commit's own ``identify``), as a subprocess: fails over budget, passes after a fix."""
    from identify.identify import tags_from_path

    hook = _hook("livetok-check")
    assert hook["language"] == "python" and hook.get("pass_filenames", True)
    tracked = subprocess.run(["git", "ls-files", "--others", "--exclude-standard"], cwd=repo,
                             capture_output=True, text=True, check=True).stdout.split()
    names = [f for f in tracked if set(hook["types"]) <= tags_from_path(str(repo / f))]
    assert "CLAUDE.md" in names and "build/CLAUDE.md" not in names
    entry = shlex.split(hook["entry"])
    assert entry[0] == "livetok"
    cmd = [sys.executable, "-m", "livetok.server.cli.main", *entry[1:], *hook.get("args", []), *names]
    r = subprocess.run(cmd, cwd=repo, capture_output=True, text=True, timeout=120)
    assert r.returncode == 1 and sorted(r.stdout.splitlines()) == expected_lines(repo)
    for name, text in (("CLAUDE.md", AGENTS), ("skills/pdf/SKILL.md", SKILL_A),
                       ("docs/guide.md", GUIDE_1), ("notes/README.md", "x\n"),
                       ("notes/keep.tmp.md", "x\n"), ("sub/CLAUDE.md", "x\n")):
        (repo / name).write_text(text, encoding="utf-8")
    r = subprocess.run(cmd, cwd=repo, capture_output=True, text=True, timeout=120)
    assert (r.returncode, r.stdout) == (0, ""), r.stdout + r.stderr


def _hook_repo(dest: Path) -> str:
    """A git repository holding this working tree's package and hook definition (what a
    user's ``repo:`` line would fetch), committed at a fixed date; its commit id."""
    for name in ("pyproject.toml", "README.md", ".pre-commit-hooks.yaml"):
        shutil.copy2(ROOT / name, dest / name)
    for folder in ("incremental", "server"):
        shutil.copytree(ROOT / folder, dest / folder,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    env = {**os.environ, "GIT_AUTHOR_DATE": "2025-01-01T00:00:00Z",
           "GIT_COMMITTER_DATE": "2025-01-01T00:00:00Z"}
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-C", str(dest)]
    subprocess.run([*git, "init", "-q"], check=True, env=env)
    subprocess.run([*git, "add", "-A"], check=True, env=env)
    subprocess.run([*git, "commit", "-q", "-m", "hook"], check=True, env=env)
    return subprocess.run([*git, "rev-parse", "HEAD"], check=True, capture_output=True,
                          text=True, env=env).stdout.strip()


@pytest.mark.slow
def test_real_pre_commit_fails_then_passes(tmp_path):
    """The real ``pre-commit`` installs this repository's hook (``language: python``: a
    virtualenv and ``pip install`` of the package, about 25 s here with PyPI) and runs it on
    a temporary git repository: it fails on a file over budget and passes after the fix.
    Slow (a real tool, the network); the default run has the hook's entry run as pre-commit
    runs it (``test_hook_entry_as_pre_commit_runs_it``)."""
    pre_commit = shutil.which("pre-commit", path=str(Path(sys.executable).parent)) \
        or shutil.which("pre-commit")
    if pre_commit is None:
        pytest.fail("pre-commit is not installed: it is in the test extra (pip install -e .[test])")
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    rev = _hook_repo(hooks)
    work = tmp_path / "work"
    work.mkdir()
    (work / "livetok.toml").write_text('[[budget]]\nfiles = ["CLAUDE.md"]\nmax = 10\n')
    (work / "CLAUDE.md").write_text(CLAUDE, encoding="utf-8")
    (work / ".pre-commit-config.yaml").write_text(
        f"repos:\n- repo: {hooks}\n  rev: {rev}\n  hooks:\n  - id: livetok-check\n")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-C", str(work)]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home")}
    run = [pre_commit, "run", "--all-files", "--color", "never"]
    r = subprocess.run(run, cwd=work, capture_output=True, text=True, env=env, timeout=600)
    n = ref("o200k_base", CLAUDE)
    assert r.returncode == 1, r.stdout + r.stderr
    assert f"CLAUDE.md:1: {n:,} tokens (o200k_base), {n - 10:,} over the budget of 10" in r.stdout
    (work / "CLAUDE.md").write_text("# Short\n", encoding="utf-8")
    subprocess.run([*git, "add", "-A"], check=True)
    r = subprocess.run(run, cwd=work, capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0 and "Passed" in r.stdout, r.stdout + r.stderr


@pytest.mark.parametrize("module", [
    *(f"livetok.server.budgets.{m}" for m in ("config", "frontmatter", "limits", "markdown",
                                              "money", "verdicts")),
    "livetok.server.lsp.budget_watch"])
def test_doctests(module):
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


def test_paragraph_chunks_match_their_definition_in_linear_time():
    """Paragraph chunks are runs of lines that hold a non-space character: the same spans as
    that definition written as a regex (which backtracked quadratically on long blank lines),
    found by one scan of the lines; a document of long blank lines is cheap."""
    import random
    import re

    from livetok.server.budgets import verdicts as budgets

    definition = re.compile(r"(?:[^\r\n]*\S[^\r\n]*(?:\r\n|\r|\n|$))+")

    class Rule:
        by, level = "paragraph", 2

    rng = random.Random(11)
    for _ in range(2000):
        text = "".join(rng.choice(["a", " ", "\t", "\n", "\r", "\r\n", "b c", "\u2028", "x  "])
                       for _ in range(rng.randrange(0, 30)))
        body = rng.randrange(0, len(text) + 1)
        want = [(m.start(), m.end()) for m in definition.finditer(text, body)]
        assert [(a, b) for _, a, b in budgets._chunks(text, body, Rule, [])] == want
    blank = (" " * 5_000 + "\n") * 20 + "end"
    assert [(a, b) for _, a, b in budgets._chunks(blank, 0, Rule, [])] == [(len(blank) - 3, len(blank))]
