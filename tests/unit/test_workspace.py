"""The workspace map's pure room (``server/workspace/``): the tree of totals, the count cache
(and what a hostile or damaged cache file gets), the scan's reasons and limits, the counting
against the encoder, and the one-file check agreeing with the walk."""

from __future__ import annotations

import hashlib
import logging
import os
import random
import stat
import sys
from pathlib import Path
from typing import Any

import pytest

from livetok.incremental import get_encoding
from livetok.server.budgets.config import ConfigError, parse_config
from livetok.server.walk import Skipped, walk, why_not_walked
from livetok.server.workspace import count_store as cache_mod
from livetok.server.workspace import counting as counting_mod
from livetok.server.workspace.count_store import BINARY, CountCache, StatIndex, encoding_identity
from livetok.server.workspace.counting import Counted, Encodings, count_candidates
from livetok.server.workspace.scan import Candidate, Limits, scan, why_left_out
from livetok.server.workspace.tokenmap import WorkspaceMap
from livetok.server.workspace.tree import TokenTree


# -- the tree -------------------------------------------------------------------------------


def test_tree_totals_follow_random_changes() -> None:
    """Seeded random sets and removals of files (a name turning from file to folder and back
    included): after each, every folder's totals equal a sum recomputed from scratch."""
    rng = random.Random(29)
    root = Path("/r")
    t = TokenTree(root, ["a", "b"])
    truth: dict[Path, tuple[int, int, int]] = {}
    names = ["x", "y", "z"]
    for _ in range(600):
        path = root.joinpath(*(rng.choice(names) for _ in range(rng.randint(1, 4))))
        if rng.random() < 0.7:
            tokens, size = (rng.randint(0, 99), rng.randint(0, 99)), rng.randint(0, 999)
            t.set_file(path, tokens, size)
            # a file replaces whatever was at its path or above/below it
            truth = {p: v for p, v in truth.items() if p not in path.parents
                     and path not in p.parents}
            truth[path] = (*tokens, size)
        else:
            t.remove(path)
            truth = {p: v for p, v in truth.items() if p != path and path not in p.parents}
        t._check()
        assert t.root.tokens == [sum(v[0] for v in truth.values()),
                                 sum(v[1] for v in truth.values())]
        assert t.root.files == len(truth)
        assert {p: (*n.tokens, n.bytes) for p, n in t.files()} == truth


def test_tree_walk_orders_and_json() -> None:
    t = TokenTree(Path("/r"), ["o200k_base"])
    t.set_file(Path("/r/b.md"), [5], 1)
    t.set_file(Path("/r/a/x.md"), [3], 1)
    t.set_file(Path("/r/a/y.md"), [4], 1)
    by_tokens = [str(p) for p, _d, _n in t.walk()]
    assert by_tokens == ["/r", "/r/a", "/r/a/y.md", "/r/a/x.md", "/r/b.md"]
    by_name = [str(p) for p, _d, _n in t.walk(sort="name")]
    assert by_name == ["/r", "/r/a", "/r/a/x.md", "/r/a/y.md", "/r/b.md"]
    j = t.to_json(depth=1)
    assert j is not None and j["tokens"] == [12]
    assert [c["name"] for c in j["children"]] == ["a", "b.md"]
    assert "children" not in j["children"][0]
    with pytest.raises(ValueError, match="1 count"):
        t.set_file(Path("/r/c.md"), [1, 2], 1)


# -- the cache --------------------------------------------------------------------------------


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "counts"
    monkeypatch.setenv("LIVETOK_COUNT_CACHE_DIR", str(folder))
    monkeypatch.delenv("LIVETOK_CACHE", raising=False)
    return folder


def _digest(i: int) -> bytes:
    return hashlib.sha256(str(i).encode()).digest()


def test_cache_round_trip_merge_and_limit(cache_dir: Path, monkeypatch: pytest.MonkeyPatch
                                          ) -> None:
    a = CountCache("name:x")
    for i in range(10):
        a.put(_digest(i), i)
    assert a.save() and not a.save()  # nothing new: not written again
    assert a.path is not None and Path(a.path).parent == cache_dir
    assert stat.S_IMODE(os.stat(a.path).st_mode) == 0o600
    b = CountCache("name:x")
    assert [b.get(_digest(i)) for i in range(10)] == list(range(10))
    # two writers: the second keeps the first's new counts
    c = CountCache("name:x")
    a.put(_digest(100), 100)
    a.save()
    c.put(_digest(200), 200)
    c.save()
    d = CountCache("name:x")
    assert d.get(_digest(100)) == 100 and d.get(_digest(200)) == 200
    # another encoding's file is another file
    assert CountCache("name:y").get(_digest(1)) is None
    # the limit keeps the most recently used
    monkeypatch.setenv("LIVETOK_COUNT_CACHE_MAX_ENTRIES", "5")
    e = CountCache("name:x")
    e.get(_digest(3))
    e.put(_digest(300), 300)
    e.save()
    f = CountCache("name:x")
    assert len(f) == 5 and f.get(_digest(3)) == 3 and f.get(_digest(300)) == 300
    assert f.get(_digest(0)) is None


#: the two kinds of cache file: how to make one, and a record of it (key, value) for ``i``
KINDS: dict[str, tuple[Any, Any]] = {
    "counts": (lambda: CountCache("name:x"), lambda i: (_digest(i), i)),
    "stats": (lambda: StatIndex(), lambda i: (_digest(i)[:8] + bytes(32), _digest(-i))),
}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("damage", ["truncate", "flip", "garbage", "other-identity", "empty"])
def test_a_damaged_cache_is_ignored_and_rebuilt(cache_dir: Path, damage: str, kind: str,
                                                caplog: pytest.LogCaptureFixture) -> None:
    """A count cache or stat index file that is not what livetok wrote for it gives no
    record (never a wrong count, never a crash), says so in the log and is written anew."""
    make, record = KINDS[kind]
    a = make()
    a.put(*record(1))
    a.save()
    assert a.path is not None
    data = Path(a.path).read_bytes()
    if damage == "truncate":
        data = data[:-7]
    elif damage == "flip":
        data = data[:-1] + bytes([data[-1] ^ 1])
    elif damage == "garbage":
        data = os.urandom(len(data))
    elif damage == "empty":
        data = b""
    else:  # another encoding's counts (for the stat index: a count cache's file)
        other = CountCache("name:y")
        other.put(_digest(1), 999)
        other.save()
        assert other.path is not None
        data = Path(other.path).read_bytes()
    Path(a.path).write_bytes(data)
    with caplog.at_level(logging.WARNING, logger="livetok.server.workspace.count_store"):
        b = make()
        assert b.get(record(1)[0]) is None
    assert "ignored, rebuilt" in caplog.text
    b.put(*record(1))
    assert b.save()
    assert make().get(record(1)[0]) == record(1)[1]


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX owners and modes")
@pytest.mark.parametrize("kind", KINDS)
def test_a_planted_or_shared_cache_is_not_trusted(cache_dir: Path, tmp_path: Path, kind: str,
                                                  caplog: pytest.LogCaptureFixture) -> None:
    """A symbolic link planted at the cache file's name is neither read nor written through
    (the write replaces the link); a file others may write is not read; a folder others may
    write turns the cache off."""
    make, record = KINDS[kind]
    a = make()
    assert a.path is not None
    cache_dir.mkdir(mode=0o700)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    os.symlink(victim, a.path)
    a.put(*record(1))
    assert a.get(record(2)[0]) is None
    assert a.save()
    assert victim.read_text() == "precious" and not os.path.islink(a.path)
    os.chmod(a.path, 0o666)
    with caplog.at_level(logging.WARNING, logger="livetok.server.workspace.count_store"):
        assert make().get(record(1)[0]) is None
    assert "not trusted" in caplog.text
    os.chmod(a.path, 0o600)
    assert make().get(record(1)[0]) == record(1)[1]
    os.chmod(cache_dir, 0o777)
    cache_mod._refused.clear()
    with caplog.at_level(logging.WARNING, logger="livetok.server.workspace.count_store"):
        assert make().path is None
    assert "not trusted" in caplog.text and "LIVETOK_CACHE" in caplog.text
    os.chmod(cache_dir, 0o700)
    cache_mod._refused.clear()


def test_stat_index_bounded_and_merged(cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The stat index keeps at most LIVETOK_COUNT_CACHE_MAX_ENTRIES entries (the most
    recently used), and two writers keep each other's."""
    a, b = StatIndex(), StatIndex()
    a.put_many([(_digest(i)[:8] + bytes(32), _digest(i)) for i in range(10)])
    a.save()
    b.put(_digest(100)[:8] + bytes(32), _digest(100))
    b.save()
    c = StatIndex()
    assert len(c) == 11 and c.get(_digest(3)[:8] + bytes(32)) == _digest(3)
    monkeypatch.setenv("LIVETOK_COUNT_CACHE_MAX_ENTRIES", "4")
    c.put(_digest(200)[:8] + bytes(32), _digest(200))
    c.save()
    d = StatIndex()
    assert len(d) == 4
    assert d.get_many([_digest(i)[:8] + bytes(32) for i in (3, 200, 0)]) == [
        _digest(3), _digest(200), None]
    assert d.path is not None and os.path.getsize(d.path) == 8 + 4 + 32 + 8 + 32 + 4 * 72


def test_cache_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LIVETOK_CACHE", "0")
    c = CountCache("name:x")
    c.put(_digest(1), 1)
    assert c.path is None and not c.save() and c.get(_digest(1)) == 1


def test_identity_of_a_tokenizer_file_follows_its_bytes(tmp_path: Path) -> None:
    f = tmp_path / "tokenizer.json"
    f.write_text('{"model": 1}')
    first = encoding_identity(str(f))
    assert first == encoding_identity(str(f))
    f.write_text('{"model": 2}')
    assert encoding_identity(str(f)) != first
    assert encoding_identity("gpt-4") == encoding_identity("cl100k_base") != \
        encoding_identity("o200k_base")


# -- the scan ---------------------------------------------------------------------------------


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    r = tmp_path / "r"
    (r / ".git").mkdir(parents=True)
    files = {"a.md": "alpha\n", "src/b.py": "print(1)\n", "src/gen/c.py": "x = 2\n",
             "build/o.txt": "out\n", "notes/n.lock": "lock\n", "notes/keep.md": "keep\n",
             "big.txt": "b" * 5000, ".gitignore": "build/\n*.tmp\n", "x.tmp": "tmp\n",
             "src/.gitignore": "gen/\n", "livetok.toml": 'exclude = ["*.lock"]\n'}
    for rel, text in files.items():
        (r / rel).parent.mkdir(parents=True, exist_ok=True)
        (r / rel).write_text(text)
    (r / "src" / "up").symlink_to("..")
    return r


def test_scan_reasons_and_limits(tree: Path) -> None:
    items = list(scan(tree, limits=Limits(file_bytes=4096)))
    got = sorted(os.path.relpath(i.path, tree) for i in items if isinstance(i, Candidate))
    assert got == [".gitignore", "a.md", "livetok.toml", "notes/keep.md", "src/.gitignore",
                   "src/b.py"]
    why = {str(i.path.relative_to(tree)): i.reason for i in items if isinstance(i, Skipped)}
    assert why["build"].startswith("ignored by") and why["x.tmp"].startswith("ignored by")
    assert why["src/gen"] == f"ignored by {tree / 'src' / '.gitignore'}"
    assert why["notes/n.lock"] == f"excluded by {tree / 'livetok.toml'} (exclude)"
    assert "over the map's limit of 4,096" in why["big.txt"]
    assert "LIVETOK_MAX_MAP_FILE_BYTES" in why["big.txt"]
    assert why["src/up"].startswith("a symbolic link to a folder")
    stopped = list(scan(tree, limits=Limits(files=3)))
    assert sum(isinstance(i, Candidate) for i in stopped) == 3
    last = stopped[-1]
    assert isinstance(last, Skipped) and "more than 3 files" in last.reason


def test_include_globs(tree: Path) -> None:
    (tree / "livetok.toml").write_text('include = ["src/**", "*.md"]\nexclude = ["a.md"]\n')
    got = sorted(os.path.relpath(i.path, tree) for i in scan(tree) if isinstance(i, Candidate))
    assert got == ["notes/keep.md", "src/.gitignore", "src/b.py"]
    (tree / "livetok.toml").write_text('include = "nope"\nexclude = [3]\n')
    items = list(scan(tree))
    warning = next(i for i in items if isinstance(i, Skipped) and i.folder
                   and i.path.name == "livetok.toml")
    assert "exclude" in warning.reason  # the budget file's problem, said once
    with pytest.raises(ConfigError, match="'exclude' must be a list"):
        parse_config('exclude = [3]', Path("/r/livetok.toml"))
    with pytest.raises(ConfigError, match="glob livetok does not match"):
        parse_config('include = ["**/a/**/b/**/c"]', Path("/r/livetok.toml"))


def test_one_file_check_agrees_with_the_walk(tree: Path) -> None:
    """:func:`why_not_walked` says None exactly for the files the walk yields."""
    walked = {p for p in walk(tree) if isinstance(p, Path)}
    every = {Path(d) / n for d, dirs, files in os.walk(tree) for n in dirs + files}
    assert walked
    for p in sorted(every):
        assert (why_not_walked(p, tree) is None) == (p in walked), p
    assert why_left_out(tree / "notes" / "n.lock", tree) == \
        f"excluded by {tree / 'livetok.toml'} (exclude)"
    got = why_left_out(tree / "a.md", tree)
    assert isinstance(got, Candidate) and got.size == 6


# -- counting ---------------------------------------------------------------------------------


def test_counts_equal_the_encoder(tree: Path, cache_dir: Path) -> None:
    (tree / "bin.dat").write_bytes(b"GIF89a\0\1\2")
    (tree / "latin.txt").write_bytes("caf\xe9".encode("latin-1"))
    cands = [Candidate(str(tree / n), 0) for n in ("a.md", "bin.dat", "latin.txt", "src/b.py")]
    encs = Encodings(["o200k_base", "r50k_base"])
    out = {Path(r.path).name: r for r in count_candidates(cands, encs, tree)}
    assert isinstance(out["bin.dat"], Skipped) and out["bin.dat"].reason.startswith("binary")
    for name in ("a.md", "latin.txt", "b.py"):
        r = out[name]
        assert isinstance(r, Counted)
        text = Path(r.path).read_bytes().decode("utf-8", errors="replace")
        assert r.tokens == (len(get_encoding("o200k_base").encode(text)),
                            len(get_encoding("r50k_base").encode(text)))
    encs.save()
    # the second time, from the cache: no encoding is loaded
    again = Encodings(["o200k_base", "r50k_base"])
    hits = [r for r in count_candidates(cands, again, tree) if isinstance(r, Counted)]
    assert sorted(r.tokens for r in hits) == sorted(
        r.tokens for r in out.values() if isinstance(r, Counted))
    assert again._loaded == [None, None]


def test_a_piece_too_long_is_left_out_with_the_reason(tmp_path: Path, cache_dir: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LIVETOK_MAX_PIECE_CP", "1000")
    (tmp_path / "eq.txt").write_text("=" * 5000)
    (tmp_path / "ok.txt").write_text("fine text\n" * 500)
    got = {Path(r.path).name: r for r in count_candidates(
        [Candidate(str(tmp_path / "eq.txt"), 0), Candidate(str(tmp_path / "ok.txt"), 0)],
        Encodings(["o200k_base"]), tmp_path)}
    assert isinstance(got["eq.txt"], Skipped) and "longer than 1,000" in got["eq.txt"].reason
    assert isinstance(got["ok.txt"], Counted)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forked processes: Linux")
def test_forked_counting_equals_counting_here(tmp_path: Path, cache_dir: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from livetok.server.workspace import counting

    monkeypatch.setattr(counting, "PARALLEL_MIN_BYTES", 1)
    rng = random.Random(7)
    words = ["alpha", "beta", "γάμμα", "δέλτα", "😀", "def", "(x)", "\n", "  "]
    cands = []
    for i in range(40):
        p = tmp_path / f"f{i}.txt"
        p.write_text(" ".join(rng.choice(words) for _ in range(rng.randint(0, 400))))
        cands.append(Candidate(str(p), 0))
    serial = {r.path: r for r in count_candidates(cands, Encodings(["o200k_base"], cache=False),
                                                  tmp_path, jobs=1)}
    forked = {r.path: r for r in count_candidates(cands, Encodings(["o200k_base"], cache=False),
                                                  tmp_path, jobs=2)}
    assert forked == serial and len(serial) == 40


def _reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The files the map reads from now on (counting's ``read_file`` spied on)."""
    seen: list[str] = []
    real = counting_mod.read_file

    def spy(path: Path, root: Path, *args: Any) -> bytes:
        seen.append(os.path.relpath(path, root))
        return real(path, root, *args)

    monkeypatch.setattr(counting_mod, "read_file", spy)
    return seen


def _files(m: WorkspaceMap) -> dict[str, tuple[int, ...]]:
    return {os.path.relpath(p, m.root): tuple(n.tokens) for p, n in m.tree.files()}


def test_the_stat_index_spares_reading_unchanged_files(tree: Path, cache_dir: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A second map reads no file whose stat is known (the binary one included, still left
    out); a file rewritten with the same size and its old mtime put back is read again (its
    ctime moved), and counted anew."""
    monkeypatch.setattr(cache_mod, "RACY_NS", -3600 * 10**9)  # (every file old enough)
    (tree / "bin.dat").write_bytes(b"GIF89a\0\1\2")
    first = WorkspaceMap(tree, Encodings(["o200k_base"]))
    first.build()
    seen = _reads(monkeypatch)
    again = WorkspaceMap(tree, Encodings(["o200k_base"]))
    again.build()
    assert seen == [] and _files(again) == _files(first) and len(_files(first)) == 7
    assert again.skipped[tree / "bin.dat"].startswith("binary")
    again.tree._check()
    # the same size, the same mtime: only the ctime tells (once the file system's clock
    # has moved past the recorded one)
    b = tree / "src" / "b.py"
    st = os.stat(b)
    probe = tree.parent / "probe"
    while True:
        probe.write_text("tick")
        if os.stat(probe).st_ctime_ns > st.st_ctime_ns:
            break
    b.write_text("print(2)\n" if b.read_text() == "print(1)\n" else "print(1)\n")
    os.utime(b, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert os.stat(b).st_size == st.st_size and os.stat(b).st_mtime_ns == st.st_mtime_ns
    third = WorkspaceMap(tree, Encodings(["o200k_base"]))
    third.build()
    assert seen == ["src/b.py"]
    assert _files(third)["src/b.py"] == (len(get_encoding("o200k_base").encode("print(2)\n")),)


def test_a_recently_changed_file_is_not_recorded(tree: Path, cache_dir: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The racy rule: a file changed less than RACY_NS before the map started is read again
    next time (here every file: the window is an hour), its count from the count cache."""
    monkeypatch.setattr(cache_mod, "RACY_NS", 3600 * 10**9)
    first = WorkspaceMap(tree, Encodings(["o200k_base"]))
    first.build()
    assert first.encodings.stats.path is not None and len(first.encodings.stats) == 0
    seen = _reads(monkeypatch)
    again = WorkspaceMap(tree, Encodings(["o200k_base"]))
    again.build()
    assert sorted(seen) == sorted(_files(first)) and _files(again) == _files(first)
    assert again.encodings._loaded == [None]  # every count from the count cache


def test_map_refresh_follows_changes(tree: Path, cache_dir: Path) -> None:
    m = WorkspaceMap(tree, Encodings(["o200k_base"]))
    m.build()
    m.tree._check()
    enc = get_encoding("o200k_base")
    total = m.tree.root.tokens[0]
    (tree / "src" / "b.py").write_text("print('a longer line of text than before')\n")
    (tree / "a.md").unlink()
    (tree / "new.md").write_text("a new file\n")
    (tree / "y.tmp").write_text("ignored\n")
    m.refresh([tree / "src" / "b.py", tree / "a.md", tree / "new.md", tree / "y.tmp"])
    m.tree._check()
    node = m.tree.node(tree / "src" / "b.py")
    assert node is not None and node.tokens == [len(enc.encode((tree / "src/b.py").read_text()))]
    assert m.tree.node(tree / "a.md") is None and m.tree.node(tree / "y.tmp") is None
    assert m.skipped[tree / "y.tmp"].startswith("ignored by")
    assert m.tree.root.tokens[0] == total - len(enc.encode("alpha\n")) - len(
        enc.encode("print(1)\n")) + node.tokens[0] + len(enc.encode("a new file\n"))
    # live counts over disk counts, and back
    assert m.set_live(tree / "new.md", (1000,))
    before = m.tree.root.tokens[0]
    assert not m.set_live(tree / "new.md", (1000,))  # the same again: nothing changes
    assert not m.set_live(tree / "nowhere.md", (5,))  # not in the map: not added
    assert m.set_live(tree / "new.md", None)
    assert m.tree.root.tokens[0] == before - 1000 + len(enc.encode("a new file\n"))
    m.tree._check()
    # a .gitignore change builds the map again: src/gen/c.py comes in when its rule goes
    assert m.tree.node(tree / "src" / "gen" / "c.py") is None
    (tree / "src" / ".gitignore").write_text("")
    m.refresh([tree / "src" / ".gitignore"])
    c = m.tree.node(tree / "src" / "gen" / "c.py")
    assert c is not None and c.tokens == [len(enc.encode("x = 2\n"))]
    m.tree._check()


@pytest.mark.parametrize("name", ["livetok.server.workspace.count_store",
                                  "livetok.server.workspace.classify",
                                  "livetok.server.workspace.counting",
                                  "livetok.server.workspace.scan",
                                  "livetok.server.workspace.tokenmap",
                                  "livetok.server.workspace.tree",
                                  "livetok.server.budgets.config"])
def test_doctests(name: str) -> None:
    """The room's docstring examples (and the budget file's ``excluded``) run."""
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0


def test_a_named_folder_a_gitignore_above_ignores(tmp_path: Path) -> None:
    """Issue 37 item 5: the map of a folder the .gitignore above it ignores holds its files
    (the rules that match the folder set aside, the others kept), for the walk and for one
    changed file alike; ``gitignore=False`` reads none."""
    (tmp_path / ".git").mkdir()
    (tmp_path / ".gitignore").write_text("/versions\n*.log\n")
    lib = tmp_path / "versions" / "lib"
    lib.mkdir(parents=True)
    for name in ("os.py", "x.log", "own.tmp"):
        (lib / name).write_text("x\n")
    (lib / ".gitignore").write_text("*.tmp\n")
    files = {Path(c.path).name for c in scan(lib) if isinstance(c, Candidate)}
    assert files == {"os.py", ".gitignore"}
    got = why_left_out(lib / "os.py", lib)
    assert isinstance(got, Candidate) and got.path == str(lib / "os.py")
    assert "ignored by" in str(why_left_out(lib / "x.log", lib))
    assert why_not_walked(lib / "os.py", lib) == "ignored by a .gitignore above it"
    assert why_not_walked(lib / "os.py", lib, named=True) is None
    everything = {Path(c.path).name for c in scan(lib, gitignore=False)
                  if isinstance(c, Candidate)}
    assert everything == {"os.py", "x.log", "own.tmp", ".gitignore"}
    assert isinstance(why_left_out(lib / "own.tmp", lib, gitignore=False), Candidate)
