"""The command line on hostile files: one line on stderr, exit status 2, bounded memory.

Each bad input (issue 15) runs ``livetok`` as a subprocess under an address-space limit of
2 GB (Linux) and a timeout, at a small size: a 64 MB sparse file of NUL bytes stands for the
1 GB one, a gzip bomb of a few KB inflates past a bound lowered by its environment variable
(``LIVETOK_MAX_VOCAB_BYTES``, ``LIVETOK_MAX_TRACE_BYTES``, ``LIVETOK_MAX_PIECE_CP``), and
``livetok analyze`` gets a lower ``--max-steps`` where the default would take seconds. Every
case asserts: status 2, exactly one line on stderr, that it names the file, no traceback.
Good inputs still work, and a long run of one character that livetok does count is counted
as tiktoken counts it.
"""

from __future__ import annotations

import base64
import gzip
import json
import os
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from .._refs import tiktoken_ref

#: the address space each run may use (Linux): a 1 GB input must not need more
AS_LIMIT = 2 << 30


def _limit_memory() -> None:  # runs in the child, before exec
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (AS_LIMIT, AS_LIMIT))


def livetok(*args: str, env: dict[str, str] | None = None, timeout: float = 120
            ) -> subprocess.CompletedProcess[str]:
    """``livetok ARGS`` in a subprocess with the memory limit, its output as text."""
    return subprocess.run(
        [sys.executable, "-m", "livetok.server.cli.main", *args],
        capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL,
        env={**os.environ, "LIVETOK_DEBUG": "", **(env or {})},
        preexec_fn=_limit_memory if sys.platform.startswith("linux") else None,
    )


def refused(r: subprocess.CompletedProcess[str], command: str, name: str | Path) -> str:
    """Assert the one-line refusal and return the line."""
    assert "Traceback" not in r.stderr, r.stderr
    lines = r.stderr.splitlines()
    assert r.returncode == 2 and len(lines) == 1, (r.returncode, r.stderr)
    assert lines[0].startswith(f"livetok {command}: {name}"), lines[0]
    return lines[0]


def gzip_bomb(path: Path, inflated: int, head: bytes = b"", fill: bytes = b"\0") -> Path:
    """A gzip file of a few KB that inflates to ``head`` and ``inflated`` bytes of ``fill``."""
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = fill * ((1 << 20) // len(fill))
    with path.open("wb") as f:
        f.write(c.compress(head))
        for _ in range(inflated // len(block)):
            f.write(c.compress(block))
        f.write(c.flush())
    assert path.stat().st_size < inflated // 100
    return path


def sparse(path: Path, size: int) -> Path:
    """A file of ``size`` NUL bytes that takes no disk space."""
    with path.open("wb") as f:
        f.truncate(size)
    return path


# -- livetok count -------------------------------------------------------------------------


@pytest.mark.parametrize("size, extra", [(64_000_000, ()), (64_000_000, ("--stream",)),
                                         (80 << 20, ())])
def test_count_refuses_one_huge_pre_token(tmp_path, size, extra) -> None:
    """NUL bytes are one pre-token: refused whether the file is read whole (up to 64 MiB),
    streamed because it is larger, or with --stream (which used to run for minutes)."""
    f = sparse(tmp_path / "nul.bin", size)
    line = refused(livetok("count", *extra, str(f)), "count", f)
    assert "a single pre-token longer than 4,194,304 code points" in line
    assert "'\\x00'" in line and "LIVETOK_MAX_PIECE_CP" in line


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero")
def test_count_dev_zero_stops() -> None:
    line = refused(livetok("count", "/dev/zero"), "count", "/dev/zero")
    assert "a run of at least" in line


def test_count_directory_and_missing_file(tmp_path) -> None:
    assert "Is a directory" in refused(livetok("count", str(tmp_path)), "count", tmp_path)
    missing = tmp_path / "missing.txt"
    assert "No such file" in refused(livetok("count", str(missing)), "count", missing)


def test_count_long_run_equals_tiktoken(tmp_path) -> None:
    """A run of one character below the bound is counted, exactly as tiktoken counts it,
    read whole or streamed; above a lowered bound the same file is refused with its length."""
    text = "ab\n" + "\0" * 1_000_001 + "\ncd"
    f = tmp_path / "run.txt"
    f.write_text(text, encoding="utf-8")
    want = len(tiktoken_ref("o200k_base").encode_ordinary(text))
    for extra in ((), ("--stream",)):
        r = livetok("count", *extra, str(f))
        assert r.returncode == 0, r.stderr
        assert r.stdout.split() == [str(want), str(f)]
    line = refused(livetok("count", str(f), env={"LIVETOK_MAX_PIECE_CP": "100000"}), "count", f)
    assert "longer than 100,000 code points (1,000,002 code points, a run of 1,000,001 '\\x00' and more)" in line


def test_count_bad_file_among_good_ones_counts_the_others(tmp_path) -> None:
    good = tmp_path / "good.txt"
    good.write_text("hello world", encoding="utf-8")
    missing = tmp_path / "missing.txt"
    r = livetok("count", str(good), str(missing))
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1 and str(missing) in r.stderr
    assert r.stdout.splitlines()[0].split() == ["2", str(good)]


def _tiktoken_file(path: Path, ranks: dict[bytes, int]) -> Path:
    path.write_bytes(b"".join(base64.b64encode(t) + b" %d\n" % r for t, r in ranks.items()))
    return path


BYTES = {bytes([b]): b for b in range(256)}


@pytest.mark.parametrize("name, ranks, says", [
    ("dup.tiktoken", {**BYTES, b"ab": 5}, "rank 5 is given to two tokens"),
    ("neg.tiktoken", {**BYTES, b"ab": -1}, "has rank -1"),
    ("huge.tiktoken", {**BYTES, b"ab": 10**18}, "has rank 1,000,000,000,000,000,000"),
    ("part.tiktoken", {t: r for t, r in BYTES.items() if r < 200} | {b"ab": 300},
     "56 of the 256 single bytes have no rank (0xc8,"),
])
def test_count_vocab_with_bad_ranks(tmp_path, name, ranks, says) -> None:
    """Ranks must be distinct ids in 0..2^24-1 and every byte a token (an incomplete
    vocabulary used to fail later, with a KeyError, on the first text that needs a byte)."""
    f = _tiktoken_file(tmp_path / name, ranks)
    text = tmp_path / "t.txt"
    text.write_bytes(bytes(range(256)))
    assert says in refused(livetok("count", "--vocab", str(f), str(text)), "count", f)


@pytest.mark.parametrize("name, content, says", [
    ("list.json", "[1, 2]", "its top level is a JSON list"),
    ("listval.json", '{"a": [1], "b": 2}', "the id of 'a' is [1]"),
    ("nullval.json", '{"a": null}', "the id of 'a' is null"),
    ("deep.json", "[" * 100_000 + "]" * 100_000, "JSON nested deeper than 16 levels"),
])
def test_count_vocab_bad_encoder_json(tmp_path, name, content, says) -> None:
    f = tmp_path / name
    f.write_text(content, encoding="utf-8")
    text = tmp_path / "t.txt"
    text.write_text("hello", encoding="utf-8")
    line = refused(livetok("count", "-e", "gpt2", "--vocab", str(f), str(text)), "count", f)
    assert says in line


def test_count_vocab_gzip_bomb_and_devices(tmp_path) -> None:
    text = tmp_path / "t.txt"
    text.write_text("hello", encoding="utf-8")
    bomb = gzip_bomb(tmp_path / "bomb.tiktoken.gz", 8 << 20, fill=b"QQ== 0\n")
    r = livetok("count", "--vocab", str(bomb), str(text), env={"LIVETOK_MAX_VOCAB_BYTES": str(1 << 20)})
    assert "inflates to more than livetok reads for a vocabulary (1 MiB)" in refused(r, "count", bomb)
    big = sparse(tmp_path / "big.tiktoken", 2 << 20)
    r = livetok("count", "--vocab", str(big), str(text), env={"LIVETOK_MAX_VOCAB_BYTES": str(1 << 20)})
    assert "LIVETOK_MAX_VOCAB_BYTES" in refused(r, "count", big)
    cut = tmp_path / "cut.tiktoken.gz"
    cut.write_bytes(gzip.compress(b"QQ== 0\n" * 1000)[:40])
    assert "truncated gzip" in refused(livetok("count", "--vocab", str(cut), str(text)), "count", cut)
    if os.path.exists("/dev/zero"):
        line = refused(livetok("count", "--vocab", "/dev/zero", str(text)), "count", "/dev/zero")
        assert "not a regular file" in line
    assert "Is a directory" in refused(livetok("count", "--vocab", str(tmp_path), str(text)),
                                       "count", tmp_path)


def test_count_good_vocab_file_still_counts(tmp_path) -> None:
    from livetok.incremental import get_encoding

    f = _tiktoken_file(tmp_path / "r50k.tiktoken", get_encoding("r50k_base").mergeable_ranks)
    text = "hello world, livetok! \u00e9t\u00e9 \U0001f600\n" * 20
    t = tmp_path / "t.txt"
    t.write_text(text, encoding="utf-8")
    r = livetok("count", "-e", "r50k_base", "--vocab", str(f), str(t))
    assert r.returncode == 0, r.stderr
    assert r.stdout.split()[0] == str(len(tiktoken_ref("r50k_base").encode_ordinary(text)))


# -- livetok replay ------------------------------------------------------------------------


GOOD = {"startContent": "hello", "endContent": "hello world",
        "txns": [{"patches": [[5, 0, " wor"]]}, {"patches": [[9, 0, "ld"]]}]}


def _trace(tmp_path: Path, name: str, data: object) -> Path:
    f = tmp_path / name
    f.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return f


def test_replay_good_trace_still_works(tmp_path) -> None:
    f = tmp_path / "good.json.gz"
    f.write_bytes(gzip.compress(json.dumps(GOOD).encode()))
    r = livetok("replay", str(f))
    assert r.returncode == 0, r.stderr
    assert "2 edits" in r.stdout and "OK" in r.stdout


@pytest.mark.parametrize("name, data, says", [
    ("deep.json", '{"txns": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested deeper than 16"),
    ("zero.json", {"startContent": "x", "txns": []}, "no patches: nothing to replay"),
    ("past.json", {"startContent": "x", "txns": [{"patches": [[5, 0, "y"]]}]},
     "txns[0].patches[0] = [5, 0, ...] edits outside the text, which has 1 code points"),
    ("string.json", {"txns": [{"patches": [["0", 0, "y"]]}]}, 'is ["0", 0, "y"]; a patch is'),
])
def test_replay_refuses_bad_traces(tmp_path, name, data, says) -> None:
    f = _trace(tmp_path, name, data)
    assert says in refused(livetok("replay", str(f)), "replay", f)


@pytest.mark.parametrize("data, says", [
    ({"startContent": "xy", "txns": [{"patches": [[0, -1, "y"]]}]}, "edits outside the text"),
    ({"startContent": "xy", "txns": [{"patches": [[0, 2, ""], [1, 0, "z"]]}]},
     "txns[0].patches[1] = [1, 0, ...] edits outside the text, which has 0 code points"),
    ({"txns": [{"patches": [[0, 0, "y"]]}, {"patches": [[0.5, 0, "y"]]}]},
     'txns[1].patches[0] is [0.5, 0, "y"]'),
    ({"txns": [{"patches": [[True, 0, "y"]]}]}, 'is [true, 0, "y"]'),
    ({"txns": [{"patches": [[0, 0, 5]]}]}, "is [0, 0, 5]"),
    ({"txns": [{"patches": [[0, 0]]}]}, "is [0, 0]"),
    ({"txns": [{"patches": ["abc"]}]}, 'is "abc"'),
    ({"txns": [{"p": []}]}, "txns[0] has no list 'patches'"),
    ({"txns": [[]]}, "txns[0] has no list 'patches'"),
    ({"txns": {}}, "no list 'txns'"),
    ([1, 2], "its top level is a JSON list"),
    ({"startContent": 5, "txns": []}, "startContent and endContent must be"),
    ("{'txns': []}", "not JSON"),
    ('{"txns": [], "x": "\\"[[[[[[[[[[[[[[[[[[[[\\\\"}', "no patches"),  # brackets in a string
])
def test_load_trace_says_what_is_wrong(tmp_path, data, says) -> None:
    """Every other shape a trace must not have, read in this process (the command line turns
    each :class:`TraceError` into its one line, as above)."""
    from livetok.server.cli.traces import TraceError, load_trace

    f = _trace(tmp_path, "t.json", data)
    if says == "no patches":  # not an error of the file: the command refuses it
        assert load_trace(f).patches == []
        return
    with pytest.raises(TraceError) as exc:
        load_trace(f)
    assert str(exc.value).startswith(f"{f}: ") and says in str(exc.value), str(exc.value)


def test_replay_refuses_damaged_or_huge_input(tmp_path) -> None:
    good = gzip.compress(json.dumps(GOOD).encode())
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(good[: len(good) // 2])
    assert "truncated gzip" in refused(livetok("replay", str(cut)), "replay", cut)
    bomb = gzip_bomb(tmp_path / "bomb.json.gz", 8 << 20, b'{"startContent": "', b"a")
    r = livetok("replay", str(bomb), env={"LIVETOK_MAX_TRACE_BYTES": str(1 << 20)})
    assert "inflates to more than livetok reads for a trace" in refused(r, "replay", bomb)
    if os.path.exists("/dev/zero"):  # the default bound: at most 1/32 of the 2 GB limit
        line = refused(livetok("replay", "/dev/zero"), "replay", "/dev/zero")
        assert "more than livetok reads for a trace" in line
    assert "Is a directory" in refused(livetok("replay", str(tmp_path)), "replay", tmp_path)


def test_replay_bad_base(tmp_path) -> None:
    f = _trace(tmp_path, "good.json", GOOD)
    missing = tmp_path / "missing.txt"
    r = livetok("replay", str(f), "--base", str(missing))
    assert "No such file" in refused(r, "replay", missing)
    r = livetok("replay", str(f), "--base", str(tmp_path))
    assert "Is a directory" in refused(r, "replay", tmp_path)


@pytest.mark.parametrize("encoding", ["bert-base-uncased", "mistral-7b-v0.1"])
def test_replay_reference_that_cannot_verify_is_refused(tmp_path, encoding) -> None:
    """``--reference tiktoken`` for an encoding tiktoken cannot build is one line naming the
    option to use, exit status 2: not a replay "verified against livetok" (it exited 0)."""
    f = _trace(tmp_path, "good.json", GOOD)
    r = livetok("replay", "--reference", "tiktoken", "-e", encoding, str(f))
    assert "OK" not in r.stdout, r.stdout
    line = refused(r, "replay", f"--reference tiktoken cannot verify {encoding}")
    assert "use --reference livetok" in line
    # what it points to works, and auto falls back to it
    for reference in ("livetok", "auto"):
        r = livetok("replay", "--reference", reference, "-e", encoding, str(f))
        assert r.returncode == 0, r.stderr
        assert "against livetok (full encode): OK" in r.stdout


def test_replay_reference_tiktoken_not_installed(monkeypatch) -> None:
    """``--reference tiktoken`` without tiktoken installed says so and what to do (it was an
    ImportError, reported as an internal error)."""
    from livetok.incremental import get_encoding
    from livetok.server.cli.replay import reference_encoder

    monkeypatch.setitem(sys.modules, "tiktoken", None)  # import tiktoken raises ImportError
    with pytest.raises(ValueError, match="pip install tiktoken, or use --reference livetok"):
        reference_encoder(get_encoding("r50k_base"), "tiktoken")
    assert reference_encoder(get_encoding("r50k_base"), "auto")[1] == "livetok (full encode)"


# -- livetok analyze -----------------------------------------------------------------------


def test_analyze_doubling_rules_stop_at_max_steps(tmp_path) -> None:
    """``a a``, ``aa aa``, ... (16 rules, |uv| up to 65,536) took 4 GB and minutes: the
    analysis stops at --max-steps, says where, and keeps what it had shown on stdout."""
    f = tmp_path / "doubling.txt"
    f.write_text("".join(f"{'a' * (1 << k)} {'a' * (1 << k)}\n" for k in range(16)))
    r = livetok("analyze", "--max-steps", "2000000", str(f))
    line = refused(r, "analyze", f)
    assert "stopped after 2,000,000 steps while checking rule" in line
    assert "rules 1-" in line and "never useful among them: none" in line
    assert "proper (Definition 5): yes" in r.stdout


def _piece(s: str, score: float, kind: int = 1) -> bytes:
    """One ``SentencePiece`` message (protobuf wire format) inside a ``ModelProto`` field 1."""
    body = b"\x0a" + _varint(len(s.encode())) + s.encode() + b"\x15" + struct.pack("<f", score)
    body += b"\x18" + _varint(kind)
    return b"\x0a" + _varint(len(body)) + body


def _varint(n: int) -> bytes:
    out = b""
    while n >= 0x80:
        out += bytes([n & 0x7F | 0x80])
        n >>= 7
    return out + bytes([n])


def test_analyze_model_with_every_prefix_stops_by_default(tmp_path) -> None:
    """A .model whose pieces are a, aa, ..., a^2000 (no answer in 90 s before) stops at the
    default step bound within seconds."""
    trainer = b"\x18\x02"  # model_type BPE
    normalizer = b"\x0a\x08identity\x20\x00"  # name, remove_extra_whitespaces false
    model = _piece("<unk>", 0.0, 2) + b"".join(_piece("a" * n, -float(n)) for n in range(1, 2001))
    model += b"\x12" + _varint(len(trainer)) + trainer
    model += b"\x1a" + _varint(len(normalizer)) + normalizer
    f = tmp_path / "prefixes.model"
    f.write_bytes(model)
    line = refused(livetok("analyze", str(f)), "analyze", f)
    assert "stopped after 30,000,000 steps while analysing piece" in line
    assert "of 2,000" in line


def test_analyze_bad_files(tmp_path) -> None:
    assert "not a regular file" in refused(livetok("analyze", str(tmp_path)), "analyze", tmp_path)
    missing = tmp_path / "missing.txt"
    assert "No such file" in refused(livetok("analyze", str(missing)), "analyze", missing)
    cut = tmp_path / "cut.model"
    cut.write_bytes(_piece("abc", -1.0)[:-3])
    assert "cut.model" in refused(livetok("analyze", str(cut)), "analyze", cut)
    latin = tmp_path / "latin.txt"
    latin.write_bytes(b"# a rule file\n" * 10 + b"a b\n\xe9 c\n")
    assert "not UTF-8" in refused(livetok("analyze", str(latin)), "analyze", latin)
    big = tmp_path / "rules.txt"
    big.write_bytes(b"a b\n" + b"#\n" * (1 << 20))
    r = livetok("analyze", str(big), env={"LIVETOK_MAX_RULES_BYTES": str(1 << 20)})
    assert "LIVETOK_MAX_RULES_BYTES" in refused(r, "analyze", big)
    if os.path.exists("/dev/zero"):
        assert "not a regular file" in refused(livetok("analyze", "/dev/zero"), "analyze",
                                               "/dev/zero")


@pytest.mark.parametrize("jobs", [1, 2])
def test_large_file_counted_by_blocks_equals_tiktoken(tmp_path, monkeypatch, jobs) -> None:
    """A file over WHOLE_FILE_MAX_BYTES is counted in texts cut where no piece can span, and
    from a stretch without such a cut (indented lines, then a long run) by the stream: the
    count is tiktoken's (bounds lowered, in this process)."""
    from livetok.incremental import get_encoding
    from livetok.server.cli import count as cmd_count

    from .._refs import real_text

    for name, value in (("WHOLE_FILE_MAX_BYTES", 50_000), ("LARGE_BLOCK_CP", 40_000),
                        ("READ_CHUNK_CP", 7_000), ("PARALLEL_MIN_CHARS", 10_000),
                        ("_PART_CHARS", 5_000)):
        monkeypatch.setattr(cmd_count, name, value)
    text = (real_text(300_000)[:300_000] + "中文 😀\r\n" * 100 + "    x = 1\n" * 8_000
            + "\0" * 60_000 + real_text(100_000)[:50_000])
    f = tmp_path / "big.txt"
    f.write_text(text, encoding="utf-8")
    want = len(tiktoken_ref("o200k_base").encode_ordinary(text))
    enc = get_encoding("o200k_base")
    assert cmd_count.count_file(enc, str(f), allow_bar=False, jobs=jobs) == want


def test_vocabulary_readers_say_what_is_wrong(tmp_path) -> None:
    """The core readers' other refusals, in this process: each a ValueError naming the file."""
    from livetok.incremental.vocab.readers import VocabularyError, load_gpt2_files
    from livetok.incremental.sentencepiece.model_proto import ModelProtoError, read_model_file

    enc = tmp_path / "encoder.json"
    for content, says in ((b"{'a': 1}", "not JSON"), (b'{"\xe9": 1}', "not UTF-8"),
                          (b'{"a": 1.5}', "the id of 'a' is 1.5"),
                          (b'{"a": true}', "the id of 'a' is true")):
        enc.write_bytes(content)
        with pytest.raises(VocabularyError, match=f"^{enc}: .*{says}"):
            load_gpt2_files(enc)
    enc.write_text(json.dumps({chr(b): b for b in range(33, 127)}), encoding="utf-8")
    bpe = tmp_path / "vocab.bpe"
    bpe.write_text("#version: 0.2\na b c\n", encoding="utf-8")
    with pytest.raises(VocabularyError, match=f"^{bpe}: line 2 is 'a b c'"):
        load_gpt2_files(enc, bpe)
    model = tmp_path / "nan.model"
    model.write_bytes(_piece("a", float("nan")))
    with pytest.raises(ModelProtoError, match=f"^{model}: piece 0 .* NaN"):
        read_model_file(model)


def test_library_refuses_an_incomplete_byte_level_vocabulary(tmp_path):
    """``get_encoding(name, path=...)`` checks the vocabulary as the CLI does: a file without
    every single byte is a VocabularyError naming it, not a KeyError at the first odd text."""
    import base64

    from livetok.incremental import get_encoding
    from livetok.incremental.vocab.readers import VocabularyError

    vocab = tmp_path / "small.tiktoken"
    vocab.write_text("".join(f"{base64.b64encode(bytes([b])).decode()} {b}\n" for b in range(200)))
    with pytest.raises(VocabularyError, match="small.tiktoken"):
        get_encoding("cl100k_base", path=vocab)


@pytest.mark.parametrize("kind", ["vocab.txt", "tokenizer.json"])
def test_wordpiece_files_are_read_with_the_bounds(tmp_path, monkeypatch, kind):
    """A WordPiece ``vocab.txt`` or ``tokenizer.json`` over the size bound, or a JSON nested
    past the depth bound, is a VocabularyError naming the file (not a MemoryError or a
    RecursionError)."""
    from livetok.incremental.vocab.readers import VocabularyError
    from livetok.incremental.wordpiece.load import load_wordpiece

    big = tmp_path / kind
    big.write_text("[PAD]\n" * 2000 if kind == "vocab.txt" else '{"model": {}}' + " " * 12000)
    monkeypatch.setenv("LIVETOK_MAX_VOCAB_BYTES", "10000")
    with pytest.raises(VocabularyError, match=kind.replace(".", r"\.")):
        load_wordpiece(big)
    monkeypatch.delenv("LIVETOK_MAX_VOCAB_BYTES")
    if kind == "tokenizer.json":
        big.write_text("[" * 100_000 + "]" * 100_000)
        with pytest.raises(VocabularyError, match="tokenizer.json"):
            load_wordpiece(big)
