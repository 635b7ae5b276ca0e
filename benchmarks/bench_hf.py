"""tokenizer.json benchmark (issue 17): livetok's reader of HuggingFace files beside HF
``tokenizers``, per file: load, encode, document edits, initial build, long no-space lines.

Writes ``docs/benchmarks-hf.md`` and ``docs/img/bench_hf.png``, and the measured block of each
family page (``docs/hf-*.md``, between ``<!-- bench_hf:begin -->`` and ``<!-- bench_hf:end -->``)
when that page is in the output folder::

    .venv/bin/python benchmarks/bench_hf.py            # full run (about 20-30 minutes)
    .venv/bin/python benchmarks/bench_hf.py --quick    # smoke run (small inputs, 3 files)
    .venv/bin/python benchmarks/bench_hf.py --files llama3,gemma3
    .venv/bin/python benchmarks/bench_hf.py --as gpt4o=o200k_base   # livetok side: a built-in

The files are the test data of ``tests/_tokenizer_files.py`` (real ``tokenizer.json`` files
from pinned packages, SHA-256 checked; ``--file NAME=PATH`` adds or replaces one). The
reference is HF ``tokenizers``: ``Tokenizer.from_file(p)`` with truncation and padding off,
``encode(text, add_special_tokens=False)``, timed in this same process beside livetok on the
same strings. What is measured, for each file:

* load: ``get_encoding(path)`` in a fresh process with an empty vocabulary cache (cold) and
  again with the cache it left (warm), beside ``Tokenizer.from_file``;
* encode: ``enc.encode`` (piece cache cleared: cold; again: warm) and HF's ``encode`` on ~1 MB
  of real text in three parts (the shared traces' final texts, multilingual text, Python
  sources), medians of ``--reps`` runs;
* per-edit latency: random single-character edits (seeded, as ``bench_document.py``) in a
  1 MB and a 10 MB ``Document`` of real text, median and p99, beside HF re-encoding the whole
  text after a sample of the same edits; the speed-up is the ratio of the medians;
* the shared editing traces replayed alone (their first ``--trace-patches`` patches);
* the initial ``Document`` build beside HF's encode of the same text;
* edits inside one long line without spaces (CJK letters, ``ACGT``) for the SentencePiece-style
  files (no pre-tokenizer: only the model's cuts bound a piece), at two line lengths, beside
  the built-in ``mistral-7b-v0.1`` (today's SentencePiece) and a byte-level file.

Every document ends with a check: its token ids equal HF's encoding of its text (and its
counts equal HF's at each sampled re-encode); every encode is compared id for id. A file
whose check fails is marked **NO** and the script exits 1.
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import json
import os
import random
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import _common as C
import bench_document as BD

#: every file of tests/_tokenizer_files.py the benchmark measures, with its family page
FAMILIES: dict[str, str] = {
    "llama3": "bytelevel", "qwen3": "bytelevel", "deepseek_v3": "bytelevel",
    "gptoss": "bytelevel", "gpt4o": "bytelevel", "mistral_nemo": "bytelevel",
    "gemma3": "sentencepiece-bpe", "llama2": "sentencepiece-bpe",
    "xlmr": "unigram", "bert": "wordpiece",
}
FAMILY_LABEL = {"bytelevel": "byte-level BPE (Split regex + ByteLevel)",
                "sentencepiece-bpe": "SentencePiece-style BPE (no regex pre-tokenizer)",
                "unigram": "Unigram (Precompiled + Metaspace)",
                "wordpiece": "WordPiece (BERT)",
                "builtin": "built-in byte-level (reference: HF file of the same vocabulary)"}
FAMILY_PAGE = {"bytelevel": "hf-bytelevel.md", "sentencepiece-bpe": "hf-sentencepiece-bpe.md",
               "unigram": "hf-unigram.md", "wordpiece": "wordpiece.md"}
#: built-in encodings measured like a file, against the HF file of the same vocabulary
BUILTIN_PEERS = {"o200k_base": "gpt4o"}
#: families whose pre-tokenizer is a Split regex: the issue's <= 100 us per-edit target
REGEX_FAMILIES = {"bytelevel"}
#: the built-in SentencePiece encoding of today, the bound the Gemma long-line edits are held to
SP_BUILTIN = "mistral-7b-v0.1"

VIM_TUTOR = Path("/usr/share/vim/vim90/tutor")
PER_EDIT_TARGET = 100e-6
SPEEDUP_TARGET = 1000.0
BEGIN, END = "<!-- bench_hf:begin -->", "<!-- bench_hf:end -->"


@dataclass
class Config:
    files: list[str]
    encode_parts: int  # code points of each of the three encode parts' budget (total ~3x)
    reps: int
    doc_sizes: list[int]
    edits: dict[int, int]  # document size -> random edits
    hf_samples: dict[int, int]  # document size -> HF full re-encodes (the last one verifies)
    trace_patches: int
    long_files: list[str]
    long_lengths: list[int]  # ACGT letters; the CJK line has a third as many
    long_edits: int
    load_subprocess: bool
    around: int = 200_000  # real text around the long line
    edit_budget: float = 60.0  # seconds of edits per document before stopping early
    long_budget: float = 20.0  # seconds of edits per long line before stopping early
    trace_budget: float = 10.0  # seconds of edits per trace replay before stopping early
    base_check_max: int = C.MB  # larger documents: no separate HF encode of the base text
    #: the files that get documents above 1 MB (None: all); the others stop at 1 MB
    big_files: list[str] | None = None


FULL = Config(files=list(FAMILIES) + ["o200k_base"], encode_parts=int(C.MB / 3), reps=2,
              doc_sizes=[1 * C.MB, 10 * C.MB], edits={1 * C.MB: 1000, 10 * C.MB: 1000},
              hf_samples={1 * C.MB: 3, 10 * C.MB: 2}, trace_patches=1000,
              long_files=["gemma3", "llama2", SP_BUILTIN, "llama3"],
              long_lengths=[100_000, 1_000_000], long_edits=20, load_subprocess=True,
              edit_budget=12.0, long_budget=15.0, trace_budget=3.0)
QUICK = Config(files=["llama2", "bert", "gpt4o"], encode_parts=7_000, reps=1,
               doc_sizes=[20 * C.KB], edits={20 * C.KB: 100}, hf_samples={20 * C.KB: 2},
               trace_patches=100, long_files=["llama2", SP_BUILTIN], long_lengths=[3_000, 12_000],
               long_edits=4, load_subprocess=False, around=20_000, edit_budget=5.0,
               long_budget=3.0, trace_budget=2.0)


# -- text --------------------------------------------------------------------------------------


def multilingual_text(n: int) -> tuple[str, str]:
    """Real multilingual prose and where it is from: the tests' corpus (Django's ``.po``
    translations in ~100 languages, interleaved: ``tests/_hf_encodings.py``), else CPython's
    ``cjkencodings`` samples and vim's tutor in its 30-odd languages."""
    sys.path.insert(0, str(C.ROOT))
    try:
        from tests._hf_encodings import DJANGO, multilingual_text as django_text

        return django_text(n), (f"the translations (`msgstr`) of `{DJANGO}`'s `.po` catalogues "
                                "in ~100 languages, interleaved (the tests' corpus, "
                                "`tests/_hf_encodings.py`)")
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException:  # noqa: BLE001 - Django absent (pytest's Skipped): the fallback
        pass
    from livetok.incremental.samples import corpora as corpus

    parts = list(corpus.cjk_texts())
    if VIM_TUTOR.is_dir():
        for p in sorted(VIM_TUTOR.glob("*.utf-8")):
            try:
                parts.append(p.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError):
                continue
    return "\n".join(parts)[:n], ("CPython's `test/cjkencodings/*-utf8.txt` samples then vim's "
                                  f"tutor in its languages (`{VIM_TUTOR}/*.utf-8`)")


def encode_parts(n: int) -> list[tuple[str, str]]:
    """The three parts of the encode text, ``(label, text)``, about ``n`` code points each
    (the traces' final texts are shorter when ``n`` is large: they are 160 K together)."""
    from livetok.incremental.samples import corpora as corpus

    traces = "\n".join(corpus.trace_texts())[:n]
    multi, _ = multilingual_text(n)
    return [("traces (prose, Rust, Svelte)", traces), ("multilingual", multi),
            ("Python sources", C.real_text(n))]


def encode_note(n: int) -> str:
    return ("Encode text, three parts: *traces* = the final texts of the four shared editing "
            "traces (`../shared/traces`: two blog posts in English, Rust code, a Svelte "
            f"component); *multilingual* = {multilingual_text(n)[1]}; *Python sources* = the "
            "start of the standard-library corpus below.")


# -- the files and their references -------------------------------------------------------------


@dataclass
class Entry:
    name: str
    family: str
    path: Path | None  # the tokenizer.json (None for a built-in)
    source: str  # what the livetok side is (a path or a built-in name)
    file_bytes: int = 0


def resolve_files(cfg: Config, extra: dict[str, str], as_builtin: dict[str, str],
                  log: C.Log) -> tuple[list[Entry], dict[str, str]]:
    """The entries to measure and, for the others, why not."""
    missing: dict[str, str] = {}
    out = []
    for name in cfg.files:
        if name == SP_BUILTIN:
            continue
        if name in BUILTIN_PEERS:  # a built-in encoding beside the file of the same vocabulary
            path, why = test_file(BUILTIN_PEERS[name])
            if path is None:
                missing[name] = f"its reference file `{BUILTIN_PEERS[name]}`: {why}"
                continue
            out.append(Entry(name, "builtin", path, name, path.stat().st_size))
            continue
        path, why = (Path(extra[name]), "") if name in extra else test_file(name)
        if path is None:
            missing[name] = why
            log(f"{name}: {why}")
            continue
        out.append(Entry(name, FAMILIES.get(name, "other"), path,
                         as_builtin.get(name, str(path)), path.stat().st_size))
    return out, missing


def test_file(name: str) -> tuple[Path | None, str]:
    """The verified path of test file ``name`` (``tests/_tokenizer_files.py``), or why not."""
    sys.path.insert(0, str(C.ROOT))
    try:
        from tests._tokenizer_files import tokenizer_file

        return tokenizer_file(name), ""
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:  # noqa: BLE001 - pytest's Skipped is a BaseException
        return None, f"file not available: {str(exc).splitlines()[0][:200]}"


class HFRef:
    """HF ``tokenizers`` on one file: truncation and padding off, no post-processor."""

    def __init__(self, path: Path) -> None:
        from tokenizers import Tokenizer

        self.tok = Tokenizer.from_file(str(path))
        self.tok.no_truncation()
        self.tok.no_padding()

    def run(self, text: str) -> Any:
        """What is timed: the ``Encoding`` object (the ids are read outside the timer)."""
        return self.tok.encode(text, add_special_tokens=False)

    @staticmethod
    def ids(out: Any) -> list[int]:
        return list(out.ids)


class SPRef:
    """``sentencepiece`` on the built-in Mistral 7B v0.1 model (today's SentencePiece)."""

    def __init__(self) -> None:
        import sentencepiece as spm

        from livetok.incremental.vocab.find import find_mistral_v1

        p = find_mistral_v1()
        if p is None:
            raise RuntimeError("mistral-7b-v0.1's tokenizer.model is not installed")
        self.sp = spm.SentencePieceProcessor(model_file=str(p))

    def run(self, text: str) -> Any:
        return self.sp.encode(text)

    @staticmethod
    def ids(out: Any) -> list[int]:
        return list(out)


def sp_missing() -> str:
    """Why the built-in SentencePiece comparison cannot run here ("" when it can)."""
    import importlib.util

    from livetok.incremental.vocab.find import find_mistral_v1

    if importlib.util.find_spec("sentencepiece") is None:
        return "the `sentencepiece` package (its reference) is not installed"
    if find_mistral_v1() is None:
        return "its tokenizer.model is not installed (`pip install --no-deps mistral-common`)"
    return ""


def load_encoding(source: str) -> Any:
    from livetok.incremental import get_encoding

    return get_encoding(source)


def first_line(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {(str(exc).splitlines() or [''])[0][:240]}"


# -- load --------------------------------------------------------------------------------------

LOAD_SCRIPT = r"""
import json, sys, time
t0 = time.perf_counter()
from livetok.incremental import get_encoding
t1 = time.perf_counter()
enc = get_encoding(sys.argv[1])
t2 = time.perf_counter()
enc.encode("Hello, world")
print(json.dumps({"import": t1 - t0, "load": t2 - t1}))
"""

HF_LOAD_SCRIPT = r"""
import json, sys, time
from tokenizers import Tokenizer
t = time.perf_counter()
Tokenizer.from_file(sys.argv[1])
print(json.dumps({"load": time.perf_counter() - t}))
"""


@dataclass
class LoadResult:
    in_process: float = float("nan")  # first get_encoding in this process (default cache)
    cold: float = float("nan")  # fresh process, empty cache
    warm: float = float("nan")  # fresh process, the cache the cold run left
    cache_files: int = 0  # files the cold run wrote into the empty cache
    hf: float = float("nan")  # Tokenizer.from_file in a fresh process
    hf_in_process: float = float("nan")
    error: str = ""


def _child(script: str, arg: str, env: dict[str, str], timeout: float = 600) -> dict[str, float]:
    r = subprocess.run([sys.executable, "-c", script, arg], capture_output=True, text=True,
                       env=env, timeout=timeout, cwd=C.ROOT)
    if r.returncode != 0:
        raise RuntimeError((r.stderr.strip().splitlines() or [f"exit {r.returncode}"])[-1][:240])
    return json.loads(r.stdout.strip().splitlines()[-1])


def bench_load(e: Entry, lr: LoadResult, log: C.Log) -> None:
    """Cold and warm loads in fresh processes (empty vocabulary cache, then the one it left),
    and HF's ``from_file`` in a fresh process."""
    with tempfile.TemporaryDirectory(prefix="bench-hf-cache-") as tmp:
        env = dict(os.environ, LIVETOK_CACHE_DIR=tmp, LIVETOK_CACHE="1")
        lr.cold = _child(LOAD_SCRIPT, e.source, env)["load"]
        lr.cache_files = sum(len(fs) for _, _, fs in os.walk(tmp))
        if lr.cache_files:  # else a second load is another cold one
            lr.warm = _child(LOAD_SCRIPT, e.source, env)["load"]
    if e.path is not None:
        lr.hf = _child(HF_LOAD_SCRIPT, str(e.path), dict(os.environ))["load"]
    log(f"{e.name}: load cold {C.fmt_s(lr.cold)}, warm {C.fmt_s(lr.warm)} "
        f"({lr.cache_files} cache files), HF {C.fmt_s(lr.hf)}")


# -- encode ------------------------------------------------------------------------------------


@dataclass
class EncodePart:
    label: str
    chars: int
    nbytes: int
    tokens: int = 0
    t: dict[str, list[float]] = field(default_factory=dict)  # lt_cold, lt_warm, hf (wall)
    cpu: dict[str, list[float]] = field(default_factory=dict)
    equal: bool = True
    first_diff: str = ""


def first_difference(a: Sequence[int], b: Sequence[int]) -> str:
    n = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    return f"first difference at token {n:,} of {len(a):,} (livetok) / {len(b):,} (HF)"


def bench_encode(enc: Any, ref: Any, parts: list[tuple[str, str]], reps: int,
                 log: C.Log, name: str) -> list[EncodePart]:
    out = []
    for label, text in parts:
        p = EncodePart(label, len(text), C.utf8_len(text),
                       t={k: [] for k in ("lt_cold", "lt_warm", "hf")},
                       cpu={k: [] for k in ("lt_cold", "lt_warm", "hf")})
        for r in range(reps):  # interleaved, so drift in the machine's load hits all three
            C.clear_cache(enc)
            w, c, a = C.timed_cpu(lambda: enc.encode(text))
            p.t["lt_cold"].append(w)
            p.cpu["lt_cold"].append(c)
            w, c, a2 = C.timed_cpu(lambda: enc.encode(text))
            p.t["lt_warm"].append(w)
            p.cpu["lt_warm"].append(c)
            w, c, h = C.timed_cpu(lambda: ref.run(text))
            p.t["hf"].append(w)
            p.cpu["hf"].append(c)
            if r == 0:
                b = ref.ids(h)
                p.tokens = len(b)
                p.equal = list(a) == b and list(a2) == b
                if not p.equal:
                    p.first_diff = first_difference(list(a), b)
                    print(f"MISMATCH: {name} encode of {label}: {p.first_diff}", file=sys.stderr)
            del a, a2, h
        out.append(p)
    tot = {k: sum(C.median(p.t[k]) for p in out) for k in ("lt_cold", "lt_warm", "hf")}
    log(f"{name}: encode {sum(p.chars for p in out):,} chars: livetok cold "
        f"{C.fmt_s(tot['lt_cold'])} warm {C.fmt_s(tot['lt_warm'])}, HF {C.fmt_s(tot['hf'])}; "
        f"equal={all(p.equal for p in out)}")
    return out


# -- documents ---------------------------------------------------------------------------------


@dataclass
class DocResult:
    n: int
    tokens: int
    build: float
    build_cpu: float
    hf_base: float  # HF encode of the base text (the build's reference), wall; nan: not run
    edits: int
    lat: list[float]
    cpu: list[float]
    sample_idx: list[int]
    hf_times: list[float]
    hf_cpu: list[float]
    verified: bool
    stats: dict[str, int]
    why: str = ""
    asked: int = 0  # edits asked for (more than ``edits`` when the time budget ran out)


def edit_loop(doc: Any, edits: Sequence[tuple[int, int, str]], budget: float
              ) -> tuple[list[float], list[float], list[int]]:
    """Time each ``doc.edit`` (wall and thread CPU) in a loop that does nothing else but note
    the token count after it (``bench_document.bench_random``'s loop); stops early once the
    edits took ``budget`` seconds of wall time."""
    lat: list[float] = []
    cpu: list[float] = []
    counts: list[int] = []
    clock = time.perf_counter
    tclock = time.thread_time
    edit = doc.edit
    gc.unfreeze()  # the collector sees every object again, as in an editor
    t0 = clock()
    for s, e, ins in edits:
        t = clock()
        c = tclock()
        edit(s, e, ins)
        c2 = tclock()
        lat.append(clock() - t)
        cpu.append(c2 - c)
        counts.append(doc.token_count)
        if t - t0 > budget:
            break
    return lat, cpu, counts


def bench_doc(enc: Any, ref: Any, text: str, k: int, samples: int, seed: int, budget: float,
              base_check: bool, log: C.Log, name: str) -> DocResult:
    """Build a document of ``text`` (timed beside HF's encode of it, ids compared), make ``k``
    random single-character edits, and re-encode the whole text with HF after ``samples`` of
    them, the last edit among them (its ids must equal the document's)."""
    from livetok.incremental import Document

    C.clear_cache(enc)
    build, build_cpu, doc = C.timed_cpu(lambda: Document(text, encoding=enc))
    ok, why = True, ""
    hf_base = float("nan")
    if base_check:  # else the check after the last edit covers the build (the edits are local)
        hf_base, _, h = C.timed_cpu(lambda: ref.run(text))
        want = ref.ids(h)
        del h
        ok = doc.token_ids() == want
        why = "" if ok else "build: " + first_difference(doc.token_ids(), want)
        del want
    tokens = doc.token_count
    edits = BD.random_edits(len(text), k, seed)
    before = BD.stats_of(doc)
    lat, cpu, counts = edit_loop(doc, edits, budget)
    stats = BD.stats_delta(BD.stats_of(doc), before)
    k = len(lat)  # fewer than asked when the budget ran out
    step = max(1, k // max(1, samples))
    sample = set(sorted(range(k - 1, -1, -step))[-samples:]) if samples else set()
    mirror = BD.Mirror(text)
    hf_times: list[float] = []
    hf_cpu: list[float] = []
    idx: list[int] = []
    for i, (s, e, ins) in enumerate(edits[:k]):
        mirror.replace(s, e, ins)
        if i in sample:
            full = mirror.text()
            w, c, h = C.timed_cpu(lambda: ref.run(full))
            gc.unfreeze()
            hf_times.append(w)
            hf_cpu.append(c)
            idx.append(i)
            got = ref.ids(h)
            del h
            if counts[i] != len(got):
                ok = False
                why = why or f"count after edit {i} ({(s, e, ins)!r}): {counts[i]} != HF {len(got)}"
            if i == k - 1:
                if doc.text != full:
                    ok, why = False, why or "the document's text is not the expected text"
                elif doc.token_ids() != got:
                    ok = False
                    why = why or "final ids: " + first_difference(doc.token_ids(), got)
            del got, full
    if k - 1 not in sample:  # no sample at the last edit: verify (untimed)
        full = mirror.text()
        got = ref.ids(ref.run(full))
        if doc.text != full or doc.token_ids() != got:
            ok, why = False, why or "final ids differ from HF's"
    if not ok:
        print(f"MISMATCH: {name} document {C.fmt_size(len(text))}: {why}", file=sys.stderr)
    log(f"{name}: {C.fmt_size(len(text))} document: build {C.fmt_s(build)} (HF encode "
        f"{C.fmt_s(hf_base)}); {k} edits median {C.fmt_us(C.median(lat))} p99 "
        f"{C.fmt_us(C.percentile(lat, 99))}; HF re-encode {C.fmt_s(C.median(hf_times))} "
        f"x{len(hf_times)}; verified={ok}")
    del doc
    return DocResult(len(text), tokens, build, build_cpu, hf_base, k, lat, cpu, idx, hf_times,
                     hf_cpu, ok, stats, why, asked=len(edits))


@dataclass
class TraceResult:
    edits: int
    lat: list[float]
    verified: bool
    per_trace: list[tuple[str, int, float, float, bool]]  # name, edits, median, p99, ok


def bench_traces(enc: Any, ref: Any, traces: list[Any], n: int, budget: float, log: C.Log,
                 name: str) -> TraceResult:
    """The first ``n`` patches of each shared trace, replayed alone into a document; after
    each replay the ids must equal HF's encoding of the text."""
    from livetok.incremental import Document

    lat_all: list[float] = []
    rows = []
    ok_all = True
    for tr in traces:
        patches = tr.patches[: n or None]
        doc = Document(tr.start, encoding=enc)
        lat = []
        clock = time.perf_counter
        gc.unfreeze()
        t0 = clock()
        for pos, ndel, ins in patches:
            t = clock()
            doc.edit(pos, pos + ndel, ins)
            lat.append(clock() - t)
            if t - t0 > budget:  # the budget ran out: the patches done so far
                patches = patches[: len(lat)]
                break
        expected = tr.end if len(patches) == len(tr.patches) else BD.apply_patches(tr.start, patches)
        want = ref.ids(ref.run(expected))
        ok = doc.text == expected and doc.token_ids() == want
        if not ok:
            print(f"MISMATCH: {name} trace {tr.name}: "
                  + ("text differs" if doc.text != expected
                     else first_difference(doc.token_ids(), want)), file=sys.stderr)
        ok_all = ok_all and ok
        lat_all += lat
        rows.append((tr.name, len(lat), C.median(lat), C.percentile(lat, 99), ok))
        del doc
    log(f"{name}: traces {len(lat_all)} edits, median {C.fmt_us(C.median(lat_all))} p99 "
        f"{C.fmt_us(C.percentile(lat_all, 99))}; verified={ok_all}")
    return TraceResult(len(lat_all), lat_all, ok_all, rows)


@dataclass
class LongResult:
    name: str
    kind: str  # "CJK" or "ACGT"
    run_chars: int
    n: int
    build: float
    lat: list[float]
    hf: float
    verified: bool
    stats: dict[str, int]


def long_line(kind: str, n: int, rng: random.Random) -> tuple[str, str]:
    if kind == "CJK":
        return C.cjk_text(n // 3), C.cjk_text(200)
    return "".join(rng.choice("ACGT") for _ in range(n)), "ACGT"


def bench_long(enc: Any, ref: Any, name: str, cfg: Config, log: C.Log) -> list[LongResult]:
    """``k`` single-character edits (insert one of the line's own letters or delete one,
    50/50) inside one line without spaces or punctuation, in the middle of ``cfg.around``
    characters of real text (``bench_document.bench_long_pieces``' inputs); HF re-encodes the final text."""
    from livetok.incremental import Document

    around = C.real_text(cfg.around)
    lo = len(around) // 2
    k = cfg.long_edits
    out = []
    for kind in ("CJK", "ACGT"):
        for n in cfg.long_lengths:
            rng = random.Random(20261128 + n)
            run, alphabet = long_line(kind, n, rng)
            text = around[:lo] + run + "\n" + around[lo:]
            C.clear_cache(enc)
            build, doc = C.timed(lambda: Document(text, encoding=enc))
            before = BD.stats_of(doc)
            mirror = BD.Mirror(text)
            lat = []
            gc.unfreeze()
            length = len(run)
            t0 = time.perf_counter()
            for _ in range(k):
                if time.perf_counter() - t0 > cfg.long_budget:
                    break
                p = lo + rng.randrange(length - 1)
                if rng.random() < 0.5:
                    edit = (p, p, rng.choice(alphabet))
                    length += 1
                else:
                    edit = (p, p + 1, "")
                    length -= 1
                t = time.perf_counter()
                doc.edit(*edit)
                lat.append(time.perf_counter() - t)
                mirror.replace(*edit)
            stats = BD.stats_delta(BD.stats_of(doc), before)
            final = mirror.text()
            hf, h = C.timed(lambda: ref.run(final))
            want = ref.ids(h)
            ok = doc.text == final and doc.token_ids() == want
            if not ok:
                print(f"MISMATCH: {name} long {kind} line of {len(run):,}: "
                      + first_difference(doc.token_ids(), want), file=sys.stderr)
            log(f"{name}: {kind} line {len(run):,} chars: build {C.fmt_s(build)}, "
                f"{len(lat)} edits median {C.fmt_s(C.median(lat))} max {C.fmt_s(max(lat))}; HF {C.fmt_s(hf)}; "
                f"verified={ok}")
            out.append(LongResult(name, kind, len(run), len(text), build, lat, hf, ok, stats))
            del doc, h, want
    return out


# -- one file ----------------------------------------------------------------------------------


@dataclass
class FileResult:
    entry: Entry
    load: LoadResult = field(default_factory=LoadResult)
    encode: list[EncodePart] = field(default_factory=list)
    docs: list[DocResult] = field(default_factory=list)
    traces: TraceResult | None = None
    error: str = ""  # not measured (further): why
    load_avg: float = float("nan")  # the 1-minute load average when the file's turn began

    @property
    def verified(self) -> bool:
        return (all(p.equal for p in self.encode) and all(d.verified for d in self.docs)
                and (self.traces is None or self.traces.verified))


def bench_file(e: Entry, cfg: Config, parts: list[tuple[str, str]], big_text: str,
               traces: list[Any], log: C.Log) -> tuple[FileResult, Any, Any]:
    r = FileResult(e, load_avg=os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan"))
    try:
        if cfg.load_subprocess:
            try:
                bench_load(e, r.load, log)
            except Exception as exc:  # noqa: BLE001 - reported on the page
                r.load.error = first_line(exc)
                log(f"{e.name}: load in a child process failed: {r.load.error}")
        r.load.in_process, enc = C.timed(lambda: load_encoding(e.source))
        assert e.path is not None
        r.load.hf_in_process, ref = C.timed(lambda: HFRef(e.path))  # type: ignore[arg-type]
        log(f"{e.name}: loaded {enc!r} in {C.fmt_s(r.load.in_process)} (HF "
            f"{C.fmt_s(r.load.hf_in_process)})")
    except Exception as exc:  # noqa: BLE001 - reported on the page
        r.error = "load: " + first_line(exc)
        log(f"{e.name}: not measured: {r.error}")
        traceback.print_exc()
        return r, None, None
    try:
        r.encode = bench_encode(enc, ref, parts, cfg.reps, log, e.name)
        if traces:
            r.traces = bench_traces(enc, ref, traces, cfg.trace_patches, cfg.trace_budget, log,
                                    e.name)
        for i, n in enumerate(cfg.doc_sizes):
            if n > C.MB and cfg.big_files is not None and e.name not in cfg.big_files:
                continue
            r.docs.append(bench_doc(enc, ref, big_text[:n], cfg.edits[n], cfg.hf_samples[n],
                                    20261128 + i, cfg.edit_budget, n <= cfg.base_check_max,
                                    log, e.name))
    except Exception as exc:  # noqa: BLE001 - reported on the page
        r.error = first_line(exc)
        log(f"{e.name}: stopped: {r.error}")
        traceback.print_exc()
    return r, enc, ref


# -- rendering ---------------------------------------------------------------------------------


def yes(ok: bool) -> str:
    return "yes" if ok else "**NO**"


def met(ok: bool | None) -> str:
    return "—" if ok is None else ("**met**" if ok else "**not met**")


def doc_of(r: FileResult, n: int) -> DocResult | None:
    return next((d for d in r.docs if d.n == n), None)


def speedup(d: DocResult) -> float:
    return C.median(d.hf_times) / C.median(d.lat) if d.hf_times and d.lat else float("nan")


def main_rows(results: list[FileResult], cfg: Config) -> tuple[list[str], list[list[str]]]:
    big = cfg.doc_sizes[-1]
    small = cfg.doc_sizes[0]
    head = ["file", "family", "load (cold)", "encode: livetok warm / HF",
            f"edit median / p99, {C.fmt_size(small)}"]
    if big != small:
        head.append(f"edit median / p99, {C.fmt_size(big)}")
    head += [f"HF re-encode, {C.fmt_size(big)}", "speed-up", "load avg.", "verified"]
    rows = []
    for r in results:
        e = r.entry
        if not r.encode and not r.docs:
            rows.append([f"`{e.name}`", FAMILY_LABEL.get(e.family, e.family)]
                        + ["—"] * (len(head) - 3) + [f"not measured: {r.error}"])
            continue
        enc_lt = sum(C.median(p.t["lt_warm"]) for p in r.encode)
        enc_hf = sum(C.median(p.t["hf"]) for p in r.encode)
        row = [f"`{e.name}`", FAMILY_LABEL.get(e.family, e.family),
               C.fmt_s(r.load.cold if r.load.cold == r.load.cold else r.load.in_process),
               C.fmt_ratio(enc_lt / enc_hf) if r.encode else "—"]
        for n in ([small, big] if big != small else [small]):
            d = doc_of(r, n)
            row.append(f"{C.fmt_us(C.median(d.lat))} / {C.fmt_us(C.percentile(d.lat, 99))}"
                       if d else "not run" if not r.error else "—")
        d = doc_of(r, big) or (max(r.docs, key=lambda x: x.n) if r.docs else None)
        note = "" if d is None or d.n == big else f" ({C.fmt_size(d.n)})"
        row += [C.fmt_s(C.median(d.hf_times)) + note if d else "—",
                C.fmt_ratio(speedup(d)) + note if d else "—", f"{r.load_avg:.1f}",
                yes(r.verified) + (f" (stopped: {r.error})" if r.error else "")]
        rows.append(row)
    return head, rows


def targets(results: list[FileResult], longs: list[LongResult], cfg: Config) -> list[list[str]]:
    big = cfg.doc_sizes[-1]
    rows = []

    def speed_row(r: FileResult) -> list[str]:
        d = doc_of(r, big)
        what = f"≥ 1,000× faster than HF's full re-encode at {C.fmt_size(big)}"
        if d is not None:
            return [f"`{r.entry.name}`", what, C.fmt_ratio(speedup(d)),
                    met(speedup(d) >= SPEEDUP_TARGET)]
        if r.docs:  # measured at smaller sizes only (--big-files)
            d = max(r.docs, key=lambda x: x.n)
            return [f"`{r.entry.name}`", what, f"not measured at {C.fmt_size(big)} (at "
                    f"{C.fmt_size(d.n)}: {C.fmt_ratio(speedup(d))})", "—"]
        return [f"`{r.entry.name}`", what,
                "not measured" + (f": {r.error}" if r.error else ""), "—"]

    for r in results:
        if r.entry.family not in REGEX_FAMILIES:
            continue
        meds = [(f"{C.fmt_size(d.n)}", C.median(d.lat)) for d in r.docs]
        if r.traces is not None:
            meds.append(("traces", C.median(r.traces.lat)))
        ok_med = all(m <= PER_EDIT_TARGET for _, m in meds) if meds and not r.error else None
        rows.append([f"`{r.entry.name}`", "per-edit median ≤ 100 µs on real text (random "
                     "edits in each document, trace replays)",
                     ", ".join(f"{k}: {C.fmt_us(m)}" for k, m in meds) or "not measured",
                     met(ok_med)])
        rows.append(speed_row(r))
    for r in results:  # the speed-up for the other families too (the issue asks it of all)
        if r.entry.family not in REGEX_FAMILIES and r.entry.family != "builtin":
            rows.append(speed_row(r))
    g = bounded_check(longs, "gemma3")
    if g is not None:
        rows.append(["`gemma3`", "an edit inside a long no-space line bounded like today's "
                     "SentencePiece one (`mistral-7b-v0.1`)", g[0], met(g[1])])
    else:
        rows.append(["`gemma3`", "an edit inside a long no-space line bounded like today's "
                     "SentencePiece one", "not measured", "—"])
    return rows


def bounded_check(longs: list[LongResult], name: str) -> tuple[str, bool] | None:
    """Bounded: the median edit in the longer line is at most 2x the one in the shorter line
    (it does not grow with the line), and at most 3x the built-in SentencePiece's median on
    the same line (or under 1 ms)."""
    mine = [x for x in longs if x.name == name]
    sp = {(x.kind, x.run_chars): x for x in longs if x.name == SP_BUILTIN}
    if not mine:
        return None
    parts = []
    ok = True
    for kind in ("CJK", "ACGT"):
        ls = sorted((x for x in mine if x.kind == kind), key=lambda x: x.run_chars)
        if not ls:
            continue
        a, b = ls[0], ls[-1]
        grow = C.median(b.lat) / C.median(a.lat)
        ref = sp.get((kind, b.run_chars))
        vs = C.median(b.lat) / C.median(ref.lat) if ref else float("nan")
        good = (grow <= 2 or len(ls) == 1) and (vs <= 3 or C.median(b.lat) < 1e-3 or vs != vs)
        ok = ok and good and all(x.verified for x in ls)
        parts.append(f"{kind}: {C.fmt_s(C.median(b.lat))} at {b.run_chars:,} chars, "
                     f"{C.fmt_ratio(grow)} the {a.run_chars:,}-char line's, "
                     f"{C.fmt_ratio(vs)} `{SP_BUILTIN}`'s")
    return "; ".join(parts), ok


def render(cfg: Config, command: str, results: list[FileResult], missing: dict[str, str],
           longs: list[LongResult], long_missing: dict[str, str], plotted: bool,
           parts: list[tuple[str, str]]) -> list[str]:
    out: list[str] = []
    w = out.append
    w("# tokenizer.json benchmarks\n")
    w("livetok's reader of HuggingFace `tokenizer.json` files (issue 17) beside HF "
      f"`tokenizers` {C._version('tokenizers')}, on the real files of the test data "
      "(`tests/_tokenizer_files.py`; [the files and their pipelines](tokenizer-json.md)). "
      "Generated by `benchmarks/bench_hf.py`; re-run with:\n")
    w("```\n.venv/bin/python benchmarks/bench_hf.py          # full, about 20-30 minutes\n"
      ".venv/bin/python benchmarks/bench_hf.py --quick  # smoke run\n```\n")
    w("Family pages: [byte-level BPE](hf-bytelevel.md), [SentencePiece-style BPE]"
      "(hf-sentencepiece-bpe.md), [Unigram](hf-unigram.md), [WordPiece](wordpiece.md).\n")
    w("**The machine is shared**: 2 cores, used by other jobs during the run (the load "
      "average at start and end is in the Machine section). Wall-clock medians there run "
      "slower than on a quiet machine, for livetok and HF alike (they are timed side by side, "
      "interleaved, in one process); the ratios are what to read.\n")

    w("## Method\n")
    w(f"- Reference: HF `tokenizers` {C._version('tokenizers')} through its Python binding, "
      "`Tokenizer.from_file(path)` with `no_truncation()` and `no_padding()` (the BERT file "
      "asks for both), `encode(text, add_special_tokens=False)`: what is timed is that call, "
      "which builds HF's full `Encoding` (ids, offsets, alignments); the ids are read after. "
      "livetok's encoding is `get_encoding(path)`.")
    w(f"- {encode_note(cfg.encode_parts)} Each part: {cfg.reps} interleaved run(s) of livetok cold (piece "
      "cache cleared), livetok warm (the run right after) and HF; medians. The collector is "
      "off during a timed call (`_common.timed`).")
    w(f"- {C.corpus_note()} The documents are its first " +
      " and ".join(C.fmt_size(n) for n in cfg.doc_sizes) + " code points"
      + ("" if cfg.big_files is None or len(cfg.doc_sizes) < 2 else
         f"; documents above 1 MB only for {', '.join(f'`{f}`' for f in cfg.big_files)} "
         "(`--big-files`)")
      + ".")
    w("- Random edits: " + ", ".join(f"{cfg.edits[n]:,} at {C.fmt_size(n)}"
                                     for n in cfg.doc_sizes)
      + " (insert one ASCII letter, space or newline, or delete one character, 50/50, at a "
      "uniform position; seeded, `bench_document.random_edits`), each `doc.edit` timed alone "
      "(wall, collector on, as in an editor). HF re-encoded the whole text after "
      + ", ".join(f"{cfg.hf_samples[n]} of them at {C.fmt_size(n)}" for n in cfg.doc_sizes)
      + " (evenly spaced, the last edit among them); *speed-up* = median HF re-encode / median "
      "edit. These sample sizes keep the full run near 20-30 minutes on this machine: an HF "
      "encode of 10 MB takes 10-40 s here, and livetok's edits are measured by the hundred.")
    w(f"- Traces: the first {cfg.trace_patches:,} patches of each shared trace "
      "(`../shared/traces`), replayed alone from its start text.")
    w(f"- Time budgets, so that a slow path cannot stall the run: a document's random edits stop "
      f"after {cfg.edit_budget:g} s, a trace replay after {cfg.trace_budget:g} s, a long line's "
      f"edits after {cfg.long_budget:g} s (the edits done are what the tables count; "
      "*edits* says when fewer than asked were made, and the checks run on the text reached).")
    w("- **Checked**: every encode id for id against HF; every document's ids after its build "
      f"(up to {C.fmt_size(cfg.base_check_max)}) and after its last edit, and its count at "
      "every sampled HF re-encode; every trace replay's ids at its end. *verified* says "
      "whether all of them held.\n")

    head, rows = main_rows(results, cfg)
    w("## Summary per file\n")
    w("*encode* = livetok warm time / HF time on the whole encode text (below 1: livetok "
      "faster). *speed-up* = HF full re-encode / livetok edit, medians, in the largest "
      "document of the file (its size in brackets when smaller than the largest of the run). "
      "*not run*: not in `--big-files`. *load avg.*: the machine's 1-minute load average when "
      "the file's turn began (2 cores: above 2, processes wait for a core).\n")
    w(C.md_table(head, rows, align="ll" + "r" * (len(head) - 2)) + "\n")
    if missing:
        w("Not measured: " + "; ".join(f"`{k}`: {v}" for k, v in missing.items()) + ".\n")

    w("## Targets (issue 17)\n")
    w("The per-edit target applies to the regex-pre-tokenized (byte-level) files; the speed-up "
      "is listed for every file. *Bounded* (Gemma): the median edit in the longer no-space line "
      "is at most 2× the median in the shorter one (it does not grow with the line) and at most "
      f"3× `{SP_BUILTIN}`'s median on the same line (or under 1 ms).\n")
    w(C.md_table(["file", "target", "measured", "result"], targets(results, longs, cfg),
                 align="llll") + "\n")

    w("## Load\n")
    w("`get_encoding(path)` in a fresh Python process (imports excluded): *cold* with an empty "
      "vocabulary cache (`LIVETOK_CACHE_DIR` set to a new folder), *warm* in a second fresh "
      "process with the cache the first one left (*cache files*: what it wrote; 0 = this file "
      "is not cached, warm is a second cold load), HF's `Tokenizer.from_file` in a fresh "
      "process, and the first load in this process (the default cache).\n")
    rows = []
    for r in results:
        L = r.load
        rows.append([f"`{r.entry.name}`", f"{r.entry.file_bytes / 1e6:.1f} MB",
                     C.fmt_s(L.cold), C.fmt_s(L.warm), str(L.cache_files) if L.cold == L.cold
                     else "—", C.fmt_s(L.hf), C.fmt_s(L.in_process),
                     C.fmt_ratio(L.cold / L.hf) if L.cold == L.cold else "—",
                     L.error or (r.error if r.error.startswith("load") else "")])
    w(C.md_table(["file", "file size", "livetok cold", "livetok warm", "cache files",
                  "HF `from_file`", "livetok, this process", "cold / HF", "note"], rows) + "\n")

    w("## Encode time vs HF `tokenizers`\n")
    w("Cells: MB/s (median wall time) over the whole encode text (the three parts); *lt/HF* = "
      "livetok time / HF time (below 1: livetok faster).\n")
    rows = []
    for r in results:
        if not r.encode:
            continue
        nb = sum(p.nbytes for p in r.encode)
        m = {k: sum(C.median(p.t[k]) for p in r.encode) for k in ("lt_cold", "lt_warm", "hf")}
        mc = {k: sum(C.median(p.cpu[k]) for p in r.encode) for k in ("lt_cold", "lt_warm", "hf")}
        rows.append([f"`{r.entry.name}`", f"{nb:,}", f"{sum(p.tokens for p in r.encode):,}",
                     f"{C.fmt_mbps(nb, m['lt_cold'])} ({C.fmt_s(m['lt_cold'])})",
                     f"{C.fmt_mbps(nb, m['lt_warm'])} ({C.fmt_s(m['lt_warm'])})",
                     f"{C.fmt_mbps(nb, m['hf'])} ({C.fmt_s(m['hf'])})",
                     C.fmt_ratio(m["lt_cold"] / m["hf"]), C.fmt_ratio(m["lt_warm"] / m["hf"]),
                     C.fmt_ratio(mc["lt_warm"] / mc["hf"]),
                     yes(all(p.equal for p in r.encode))])
    w(C.md_table(["file", "UTF-8 bytes", "tokens", "livetok cold", "livetok warm", "HF",
                  "lt/HF cold", "lt/HF warm", "lt/HF warm (CPU time)", "ids equal"], rows) + "\n")
    w("Per part, *lt/HF cold* / *lt/HF warm* (the parts' sizes: "
      + ", ".join(f"{lab} {len(t):,} chars" for lab, t in parts) + "):\n")
    rows = []
    for r in results:
        if not r.encode:
            continue
        row = [f"`{r.entry.name}`"]
        for p in r.encode:
            hf = C.median(p.t["hf"])
            row.append(f"{C.fmt_ratio(C.median(p.t['lt_cold']) / hf)} / "
                       f"{C.fmt_ratio(C.median(p.t['lt_warm']) / hf)}"
                       + ("" if p.equal else f" **NO**: {p.first_diff}"))
        rows.append(row)
    w(C.md_table(["file"] + [lab for lab, _ in parts], rows) + "\n")

    w("## Random single-character edits\n")
    for n in cfg.doc_sizes:
        rows = []
        for r in results:
            d = doc_of(r, n)
            if d is None:
                continue
            rows.append([f"`{r.entry.name}`", f"{d.tokens:,}",
                         f"{d.edits:,}" + (f" of {d.asked:,}¹" if d.asked > d.edits else ""),
                         C.fmt_us(C.median(d.lat)), C.fmt_us(C.percentile(d.lat, 90)),
                         C.fmt_us(C.percentile(d.lat, 99)), C.fmt_us(max(d.lat)),
                         C.fmt_us(C.median(d.cpu)), C.fmt_us(C.percentile(d.cpu, 99)),
                         f"{C.fmt_s(C.median(d.hf_times))} ×{len(d.hf_times)}",
                         C.fmt_ratio(speedup(d)),
                         C.fmt_ratio(C.median(d.hf_cpu) / C.median(d.cpu)) if d.hf_cpu else "—",
                         f"{d.stats.get('window_retries', 0):,}",
                         yes(d.verified) + (f": {d.why}" if d.why else "")])
        if rows:
            w(f"### {C.fmt_size(n)} document\n")
            w(C.md_table(["file", "tokens", "edits", "median", "p90", "p99", "max", "CPU median",
                          "CPU p99", "HF re-encode", "speed-up", "speed-up (CPU time)",
                          "`window_retries`", "verified"], rows) + "\n")
            if any("¹" in row[2] for row in rows):
                w(f"¹ The time budget ({cfg.edit_budget:g} s of edits) ran out first.\n")

    if any(r.traces for r in results):
        w("## Editing traces\n")
        w(f"The first {cfg.trace_patches:,} patches of each shared trace (fewer when the "
          f"{cfg.trace_budget:g} s budget ran out: *edits*), replayed alone (real typing: prose, "
          "Rust, Svelte). Cells: median / p99 per edit (wall).\n")
        names = [t[0] for r in results if r.traces for t in r.traces.per_trace]
        names = list(dict.fromkeys(names))
        rows = []
        for r in results:
            if r.traces is None:
                continue
            cells = {t[0]: t for t in r.traces.per_trace}
            rows.append([f"`{r.entry.name}`"] + [
                f"{C.fmt_us(cells[t][2])} / {C.fmt_us(cells[t][3])}" if t in cells else "—"
                for t in names] + [f"{C.fmt_us(C.median(r.traces.lat))} / "
                                   f"{C.fmt_us(C.percentile(r.traces.lat, 99))}",
                                   f"{r.traces.edits:,}", yes(r.traces.verified)])
        w(C.md_table(["file"] + [n.split(".")[0] for n in names] + ["all", "edits", "verified"],
                     rows)
          + "\n")

    if longs or long_missing:
        w("## Edits inside one long line without spaces\n")
        w(f"A line of CJK letters (no spaces or punctuation) or of random `ACGT` letters, in the "
          f"middle of {C.fmt_chars(cfg.around)} characters of real text; up to {cfg.long_edits} "
          f"single-character edits ({cfg.long_budget:g} s budget) at "
          "random places inside it (insert one of the line's letters or delete one, 50/50). "
          "Without a regex pre-tokenizer (Gemma 3 splits only at spaces, Llama 2 not at all) "
          "only the model's cuts bound the piece an edit re-encodes (a position no vocabulary "
          "token spans); a byte-level file's pre-tokenizer makes the whole line one piece. "
          f"`{SP_BUILTIN}` is today's built-in SentencePiece encoding (reference: the "
          "`sentencepiece` package on the same model). *HF*: one full encode of the final text, "
          "whose ids the document's must equal.\n")
        rows = []
        for x in longs:
            rows.append([f"`{x.name}`", x.kind, f"{x.run_chars:,}", f"{x.n:,}", C.fmt_s(x.build),
                         len(x.lat), C.fmt_s(C.median(x.lat)), C.fmt_s(C.percentile(x.lat, 90)),
                         C.fmt_s(max(x.lat)), C.fmt_s(x.hf),
                         C.fmt_ratio(x.hf / C.median(x.lat)),
                         f"{x.stats.get('window_retries', 0):,}", yes(x.verified)])
        w(C.md_table(["encoding", "line", "line chars", "document chars", "build", "edits",
                      "median", "p90", "max", "HF / sentencepiece encode", "speed-up",
                      "`window_retries`", "verified"], rows) + "\n")
        if long_missing:
            w("Not measured: " + "; ".join(f"`{k}`: {v}" for k, v in long_missing.items())
              + ".\n")

    w("## Initial build\n")
    w("`Document(text)` (piece cache cleared) beside HF's `encode` of the same text, ids "
      "compared (they are, in *verified* above).\n")
    rows = []
    for r in results:
        for d in r.docs:
            hf = d.hf_base if d.hf_base == d.hf_base else C.median(d.hf_times)
            mark = "" if d.hf_base == d.hf_base else "²"
            rows.append([f"`{r.entry.name}`", C.fmt_size(d.n), f"{d.tokens:,}",
                         f"{C.fmt_s(d.build)} ({C.fmt_mbps(d.n, d.build)} M chars/s)",
                         f"{C.fmt_s(hf)}{mark} ({C.fmt_mbps(d.n, hf)} M chars/s)",
                         C.fmt_ratio(d.build / hf)])
    w(C.md_table(["file", "text", "tokens", "Document build", "HF encode", "build / HF"], rows)
      + "\n")
    if any(d.hf_base != d.hf_base for r in results for d in r.docs):
        w("² Above " + C.fmt_size(cfg.base_check_max) + " HF does not encode the base text "
          "separately (each 10 MB encode costs tens of seconds here): the HF time is the median "
          "of its re-encodes after the edits (the same text but for the edits), and the build "
          "is checked by the comparison after the last edit (a wrong build stays wrong: the "
          "edits re-encode only the pieces around them).\n")

    if plotted:
        w("## Plot\n")
        w("![per-edit latency and encode speed per file](img/bench_hf.png)\n")
    else:
        w("(No plot: matplotlib is not installed; `pip install matplotlib`.)\n")
    return out


def family_block(family: str, results: list[FileResult], longs: list[LongResult],
                 cfg: Config, info: dict[str, str]) -> str:
    """The measured block of a family page: its files' rows of the main tables."""
    mine = [r for r in results if r.entry.family == family
            or (family == "bytelevel" and r.entry.family == "builtin")]
    names = {r.entry.name for r in mine}
    lines = [BEGIN, "", f"Measured {info['date']} by `benchmarks/bench_hf.py` (load average "
             f"{info['load']} at the start, on a shared 2-core machine; full tables and method: "
             "[tokenizer.json benchmarks](benchmarks-hf.md)).", ""]
    if not mine:
        lines += ["Not measured in this run.", "", END]
        return "\n".join(lines)
    head, rows = main_rows(mine, cfg)
    lines += [C.md_table(head, rows, align="ll" + "r" * (len(head) - 2)), ""]
    trows = [t for t in targets(results, longs, cfg) if t[0].strip("`") in names]
    if trows:
        lines += ["Issue 17's targets:", "",
                  C.md_table(["file", "target", "measured", "result"], trows, align="llll"), ""]
    ls = [x for x in longs if x.name in names or (family == "sentencepiece-bpe"
                                                    and x.name == SP_BUILTIN)]
    if ls:
        lines += [f"Edits inside one long line without spaces (in {C.fmt_chars(cfg.around)} "
                  "characters of real text):", ""]
        rows = [[f"`{x.name}`", x.kind, f"{x.run_chars:,}", C.fmt_s(C.median(x.lat)),
                 C.fmt_s(max(x.lat)), C.fmt_s(x.hf), yes(x.verified)] for x in ls]
        lines += [C.md_table(["encoding", "line", "line chars", "median edit", "max", "HF / sentencepiece encode",
                              "verified"], rows), ""]
    lines.append(END)
    return "\n".join(lines)


def update_family_pages(out: Path, results: list[FileResult], longs: list[LongResult],
                        cfg: Config, info: dict[str, str]) -> None:
    for family, page in FAMILY_PAGE.items():
        p = out / page
        if not p.is_file():
            continue
        text = p.read_text(encoding="utf-8")
        if BEGIN not in text or END not in text:
            continue
        a, b = text.index(BEGIN), text.index(END) + len(END)
        C.write_text(p, text[:a] + family_block(family, results, longs, cfg, info) + text[b:])


def plot(path: Path, results: list[FileResult], cfg: Config) -> bool:
    plt = C.pyplot()
    if plt is None:
        return False
    rs = [r for r in results if r.docs or r.encode]
    if not rs:
        return False
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(13, 5))
    xs = range(len(rs))
    width = 0.8 / max(1, len(cfg.doc_sizes))
    for j, n in enumerate(cfg.doc_sizes):
        med = [C.median(d.lat) * 1e6 if (d := doc_of(r, n)) else 0 for r in rs]
        p99 = [C.percentile(d.lat, 99) * 1e6 if (d := doc_of(r, n)) else 0 for r in rs]
        pos = [x + (j - (len(cfg.doc_sizes) - 1) / 2) * width for x in xs]
        bars = ax1.bar(pos, med, width * 0.9, label=f"median, {C.fmt_size(n)} document")
        ax1.scatter(pos, p99, marker="_", s=200, color=bars.patches[0].get_facecolor(),
                    label=f"p99, {C.fmt_size(n)}")
    ax1.axhline(PER_EDIT_TARGET * 1e6, color="k", ls="--", lw=1, label="target 100 µs")
    ax1.set_yscale("log")
    ax1.set_xticks(list(xs))
    ax1.set_xticklabels([r.entry.name for r in rs], rotation=30, ha="right")
    ax1.set_ylabel("µs per random single-character edit")
    ax1.set_title("Document.edit latency per tokenizer.json")
    ax1.grid(axis="y", which="both", alpha=0.3)
    ax1.legend(fontsize=7)
    enc_rs = [r for r in rs if r.encode]
    if enc_rs:
        xs2 = range(len(enc_rs))
        for j, (k, label) in enumerate((("lt_cold", "livetok cold"), ("lt_warm", "livetok warm"),
                                        ("hf", "HF tokenizers"))):
            v = [sum(p.nbytes for p in r.encode) / sum(C.median(p.t[k]) for p in r.encode) / 1e6
                 for r in enc_rs]
            ax2.bar([x + (j - 1) * 0.27 for x in xs2], v, 0.25, label=label)
        ax2.set_xticks(list(xs2))
        ax2.set_xticklabels([r.entry.name for r in enc_rs], rotation=30, ha="right")
        ax2.set_ylabel("MB/s (median)")
        nchars = sum(p.chars for p in enc_rs[0].encode)
        ax2.set_title(f"encode, {C.fmt_chars(nchars)} characters of real text")
        ax2.grid(axis="y", alpha=0.3)
        ax2.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    print(f"wrote {path}")
    return True


# -- main --------------------------------------------------------------------------------------


def parse_pairs(s: str | None) -> dict[str, str]:
    out = {}
    for item in (s or "").split(","):
        if item.strip():
            k, _, v = item.partition("=")
            out[k.strip()] = v.strip()
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="small inputs, three files (smoke test)")
    ap.add_argument("--out", type=Path, default=C.DOCS,
                    help="folder for benchmarks-hf.md and img/ (default: docs/)")
    ap.add_argument("--files", help="comma-separated names of tests/_tokenizer_files.py")
    ap.add_argument("--file", action="append", default=[], metavar="NAME=PATH",
                    help="measure this tokenizer.json under NAME (family from NAME if known)")
    ap.add_argument("--as", dest="as_builtin", metavar="NAME=BUILTIN",
                    help="livetok side of NAME from a built-in encoding (e.g. gpt4o=o200k_base)")
    ap.add_argument("--sizes", help="document sizes in code points, comma-separated")
    ap.add_argument("--edits", type=int, help="random edits per document size")
    ap.add_argument("--reps", type=int)
    ap.add_argument("--no-long", action="store_true", help="skip the long no-space lines")
    ap.add_argument("--big-files", help="files measured in documents above 1 MB ('all', the "
                    "default, or comma-separated names: the others stop at 1 MB)")
    ap.add_argument("--no-load", action="store_true", help="skip the child-process loads")
    args = ap.parse_args(argv)
    cfg = dataclasses.replace(QUICK if args.quick else FULL)
    extra = parse_pairs(",".join(args.file))
    if args.files:
        cfg.files = [f.strip() for f in args.files.split(",") if f.strip()]
    cfg.files += [k for k in extra if k not in cfg.files]
    if args.sizes:
        sizes = [int(float(x)) for x in args.sizes.split(",")]
        cfg.edits = {n: cfg.edits.get(n, args.edits or 1000) for n in sizes}
        cfg.hf_samples = {n: cfg.hf_samples.get(n, 2) for n in sizes}
        cfg.doc_sizes = sizes
    if args.edits:
        cfg.edits = {n: args.edits for n in cfg.doc_sizes}
    if args.reps:
        cfg.reps = args.reps
    if args.no_load:
        cfg.load_subprocess = False
    if args.no_long:
        cfg.long_files = []
    if args.big_files:
        cfg.big_files = (None if args.big_files == "all"
                         else [f.strip() for f in args.big_files.split(",")])
    log = C.Log()
    info = C.machine_info()
    info["tokenizers"] = C._version("tokenizers")
    command = "benchmarks/bench_hf.py" + " ".join([""] + (argv if argv is not None else sys.argv[1:]))
    log(f"{command}: {info['cpu']}, {info['nproc']} cores, load {info['load']}")

    entries, missing = resolve_files(cfg, extra, parse_pairs(args.as_builtin), log)
    parts = encode_parts(cfg.encode_parts)
    big_text = C.real_text(max(cfg.doc_sizes))
    traces = BD.load_traces() if cfg.trace_patches else []
    results: list[FileResult] = []
    refs: dict[str, tuple[Any, Any]] = {}
    for e in entries:
        r, enc, ref = bench_file(e, cfg, parts, big_text, traces, log)
        results.append(r)
        if e.name in cfg.long_files and enc is not None:
            refs[e.name] = (enc, ref)
        del enc, ref
        gc.collect()
    longs: list[LongResult] = []
    long_missing: dict[str, str] = {}
    long_errors: list[str] = []
    for name in cfg.long_files:
        try:
            if name == SP_BUILTIN:
                why = sp_missing()
                if why:
                    long_missing[name] = why
                    continue
                pair = (load_encoding(SP_BUILTIN), SPRef())
            elif name in refs:
                pair = refs.pop(name)
            else:
                long_missing[name] = missing.get(name, next(
                    (r.error for r in results if r.entry.name == name), "not in --files"))
                continue
            longs += bench_long(pair[0], pair[1], name, cfg, log)
        except Exception as exc:  # noqa: BLE001 - reported on the page
            long_missing[name] = first_line(exc)
            long_errors.append(name)
            log(f"{name}: long lines not measured: {long_missing[name]}")
            traceback.print_exc()
        gc.collect()

    plotted = plot(args.out / "img" / "bench_hf.png", results, cfg)
    md = render(cfg, command, results, missing, longs, long_missing, plotted, parts)
    md += [f"tokenizers {info['tokenizers']}.\n"]
    C.write_page(args.out / "benchmarks-hf.md", md, info, log, command)
    update_family_pages(args.out, results, longs, cfg, info)
    bad = [r.entry.name for r in results if not r.verified]
    bad += [f"{x.name} {x.kind} line" for x in longs if not x.verified]
    errors = [r.entry.name for r in results if r.error]
    if bad:
        print(f"MISMATCH: {', '.join(bad)} (see the tables)", file=sys.stderr)
    if errors:
        print(f"ERRORS: {', '.join(errors)} were not fully measured (see the page)", file=sys.stderr)
    return 1 if bad or errors or long_errors else 0


if __name__ == "__main__":
    sys.exit(main())
