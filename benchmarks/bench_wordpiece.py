"""Benchmark Fast WordPiece: LinMaxMatch vs MaxMatch, and E2E WordPiece vs HF ``tokenizers``.

Two experiments, after Section 5 of Song et al., *Fast WordPiece Tokenization*:

1. **Single word, adversarial vocabulary.** ``V = {a, ##a, a^K b, ##a^K b}`` with ``K`` = 10,000
   and words ``a^n``: every MaxMatch position walks (or tries) the whole rest of the word before
   settling for a one-character token. Time per character of LinMaxMatch (Algorithm 1), of the
   trie-walk MaxMatch of Section 3.2 (``O(n m)``), of the original MaxMatch (BERT / HF's
   algorithm in Python, ``O(n^2)`` lookups of ``O(n)`` strings) and of HF's own Rust
   ``WordPiece`` model, for ``n`` from 10 to 10,000. A method is dropped for larger ``n``
   once one call takes longer than ``--budget`` seconds.
2. **End to end on real text** (multilingual files of the machine, then CPython's sources), in
   the same process: HF ``Tokenizer.encode`` (Rust, one thread, same 64 KB chunks) vs ours:
   E2E WordPiece (normalize + Algorithm 3), the two-pass pipeline (pre-tokenize, then
   Algorithm 1 per word), and the document path (``split`` + ``encode_piece``, cache cleared).

Writes the tables into ``docs/wordpiece.md`` (between ``<!-- bench:... -->`` markers) and plots
to ``docs/img/wordpiece_linmaxmatch.png`` and ``docs/img/wordpiece_e2e.png``::

    .venv/bin/python benchmarks/bench_wordpiece.py            # about 3 minutes
    .venv/bin/python benchmarks/bench_wordpiece.py --quick    # smaller sizes, no docs update
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import re
import sys
import sysconfig
import time
from pathlib import Path
from typing import Callable

os.environ.setdefault("RAYON_NUM_THREADS", "1")  # HF single-threaded, like us
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import tokenizers  # noqa: E402
from tokenizers import BertWordPieceTokenizer, models  # noqa: E402

from livetok.incremental.wordpiece.bert_normalize import pre_tokenize  # noqa: E402
from livetok.incremental.wordpiece._reference import max_match_reference, max_match_trie  # noqa: E402
from livetok.incremental.wordpiece.linmaxmatch import LinMaxMatch  # noqa: E402
from livetok.incremental.wordpiece.load import load_bert_uncased  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "wordpiece.md"
IMG = ROOT / "docs" / "img"

MULTILINGUAL = [
    "/usr/share/vim/vim90/tutor/tutor.ru.utf-8",
    "/usr/share/vim/vim90/tutor/tutor.ja.utf-8",
    "/usr/share/vim/vim90/tutor/tutor.zh_cn.utf-8",
    "/usr/share/vim/vim90/tutor/tutor.el.utf-8",
    "/usr/share/vim/vim90/tutor/tutor.ko.utf-8",
    "/usr/share/vim/vim90/tutor/tutor.vi.utf-8",
    "/usr/share/vim/vim90/tutor/tutor.bg.utf-8",
    "/usr/share/mime/packages/freedesktop.org.xml",
]


def best_time(fn: Callable[[], object], *, min_total: float = 0.3, repeat: int = 3) -> float:
    """Best of ``repeat`` rounds, each running ``fn`` enough times to last ``min_total`` s."""
    t0 = time.perf_counter()
    fn()
    once = time.perf_counter() - t0
    loops = max(1, int(min_total / max(once, 1e-9)))
    best = once
    for _ in range(repeat if once < 2 else 0):
        gc.collect()
        t0 = time.perf_counter()
        for _ in range(loops):
            fn()
        best = min(best, (time.perf_counter() - t0) / loops)
    return best


# -- 1. single word -------------------------------------------------------------------------------


def single_word(sizes: list[int], budget: float) -> dict[str, dict[int, float]]:
    k = max(sizes)
    vocab = {"[UNK]": 0, "a": 1, "##a": 2, "a" * k + "b": 3, "##" + "a" * k + "b": 4}
    big = 10 * k
    lmm = LinMaxMatch(vocab, max_input_chars_per_word=big)
    hf = models.WordPiece(vocab, unk_token="[UNK]", max_input_chars_per_word=big)
    methods: dict[str, Callable[[str], list[int]]] = {
        "LinMaxMatch (Algorithm 1)": lmm.tokenize,
        "MaxMatch, trie walk (Section 3.2)": lambda w: max_match_trie(w, lmm),
        "MaxMatch, original (Python)": lambda w: max_match_reference(
            w, vocab, max_input_chars_per_word=big
        ),
        "HF tokenizers WordPiece (Rust)": lambda w: [t.id for t in hf.tokenize(w)],
    }
    out: dict[str, dict[int, float]] = {m: {} for m in methods}
    alive = set(methods)
    for n in sizes:
        word = "a" * n
        want = [1] + [2] * (n - 1)
        for name, fn in methods.items():
            if name not in alive:
                continue
            assert fn(word) == want, name
            t = best_time(lambda fn=fn, word=word: fn(word), min_total=0.2)
            out[name][n] = t / n * 1e9
            print(f"  n={n:>6}  {name:<36} {out[name][n]:>12.1f} ns/char", flush=True)
            if t > budget:
                alive.discard(name)
    return out


# -- 2. end to end --------------------------------------------------------------------------------


def corpus(total: int, *, multilingual: bool) -> str:
    files: list[Path] = [Path(p) for p in MULTILINGUAL if Path(p).is_file()] if multilingual else []
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    for root, dirs, names in os.walk(stdlib):
        dirs[:] = sorted(d for d in dirs if d not in ("site-packages", "__pycache__", "test"))
        files.extend(Path(root) / f for f in sorted(names) if f.endswith(".py"))
    parts, n = [], 0
    for p in files:
        try:
            t = p.read_text(encoding="utf-8")[:200_000]
        except (OSError, UnicodeDecodeError):
            continue
        parts.append(t)
        n += len(t)
        if n >= total:
            break
    return "".join(parts)[:total]


def chunks(text: str, size: int = 1 << 16) -> list[str]:
    out, start = [], 0
    while start < len(text):
        end = text.find("\n", start + size)
        end = len(text) if end < 0 else end + 1
        out.append(text[start:end])
        start = end
    return out


def end_to_end(total: int) -> list[dict[str, object]]:
    enc = load_bert_uncased()
    hf = BertWordPieceTokenizer(dict(enc.vocab), lowercase=True)._tokenizer
    lmm = enc.linmaxmatch
    norm = enc.normalizer
    assert norm is not None
    rows = []
    for label, multi in (("Python sources (ASCII)", False), ("multilingual + sources", True)):
        text = corpus(total, multilingual=multi)
        parts = chunks(text)
        mb = len(text.encode("utf-8")) / 1e6
        want = [hf.encode(c, add_special_tokens=False).ids for c in parts]
        assert [enc.encode(c) for c in parts] == want, "E2E differs from HF"

        def two_pass() -> list[int]:
            ids: list[int] = []
            for c in parts:
                s = norm.normalize(c)
                for a, b in pre_tokenize(s):
                    ids.extend(lmm.tokenize(s[a:b]))
            return ids

        def pieces() -> list[int]:
            enc._piece_cache.clear()
            ids: list[int] = []
            for c in parts:
                for a, b in enc.split(c):
                    ids.extend(enc.encode_piece(c[a:b]))
            return ids

        flat = [i for w in want for i in w]
        assert two_pass() == flat and pieces() == flat
        timings = {
            "HF tokenizers encode (Rust, 1 thread)": best_time(
                lambda: [hf.encode(c, add_special_tokens=False) for c in parts], repeat=2
            ),
            "livetok E2E WordPiece (Section 4)": best_time(
                lambda: [enc.encode(c) for c in parts], repeat=2
            ),
            "livetok pre-tokenize + LinMaxMatch per word": best_time(two_pass, repeat=2),
            "livetok document path (split + encode_piece)": best_time(pieces, repeat=2),
        }
        for name, t in timings.items():
            rows.append({"corpus": label, "method": name, "MB": mb, "chars": len(text),
                         "tokens": len(flat), "seconds": t})
            print(f"  {label:<24} {name:<46} {mb / t:>7.2f} MB/s", flush=True)
    return rows


# -- output ---------------------------------------------------------------------------------------


def tables(sw: dict[str, dict[int, float]], e2e: list[dict[str, object]], sizes: list[int]) -> str:
    lines = [
        f"Measured {time.strftime('%Y-%m-%d')} on {platform.machine()} "
        f"({os.cpu_count()} cores), Python {platform.python_version()}, "
        f"tokenizers {tokenizers.__version__}, by `benchmarks/bench_wordpiece.py`.",
        "",
        "**Single word `a`×n, adversarial vocabulary** (ns per character; — = not run, the "
        "previous size already took longer than the budget):",
        "",
        "| method | " + " | ".join(f"n={n:,}" for n in sizes) + " |",
        "| --- | " + " | ".join("---:" for _ in sizes) + " |",
    ]
    for name, row in sw.items():
        cells = [f"{row[n]:,.0f}" if n in row else "—" for n in sizes]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "**End to end, bert-base-uncased, same process, same 64 KB chunks** (ids identical to "
        "HF's, asserted):",
        "",
        "| corpus | method | MB/s | µs per 1,000 chars | vs HF |",
        "| --- | --- | ---: | ---: | ---: |",
    ]
    hf_t = {r["corpus"]: r["seconds"] for r in e2e if str(r["method"]).startswith("HF")}
    for r in e2e:
        t = float(r["seconds"])  # type: ignore[arg-type]
        mbps = float(r["MB"]) / t  # type: ignore[arg-type]
        per_k = t / int(r["chars"]) * 1e9  # type: ignore[arg-type]
        ratio = float(hf_t[r["corpus"]]) / t  # type: ignore[arg-type]
        lines.append(
            f"| {r['corpus']} | {r['method']} | {mbps:.2f} | {per_k:,.0f} | {ratio:.2f}× |"
        )
    mb, chars = float(e2e[0]["MB"]), int(e2e[0]["chars"])  # type: ignore[arg-type]
    lines += ["", f"Corpus sizes: {mb:.2f} MB each ({chars:,} characters)."]
    return "\n".join(lines)


def plots(sw: dict[str, dict[int, float]], e2e: list[dict[str, object]]) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    IMG.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for name, row in sw.items():
        xs = sorted(row)
        ax.plot(xs, [row[x] for x in xs], marker="o", label=name)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("word length n (characters)")
    ax.set_ylabel("time per character (ns)")
    ax.set_title("WordPiece on one word a^n, vocabulary {a, ##a, a^K b, ##a^K b}")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    p1 = IMG / "wordpiece_linmaxmatch.png"
    fig.savefig(p1, dpi=120)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(7, 4.2))
    corpora = sorted({str(r["corpus"]) for r in e2e})
    methods = list(dict.fromkeys(str(r["method"]) for r in e2e))
    width = 0.8 / len(methods)
    for k, m in enumerate(methods):
        vals = []
        for c in corpora:
            r = next(r for r in e2e if r["corpus"] == c and r["method"] == m)
            vals.append(float(r["MB"]) / float(r["seconds"]))  # type: ignore[arg-type]
        ax.bar([i + k * width for i in range(len(corpora))], vals, width, label=m)
    ax.set_xticks([i + width * (len(methods) - 1) / 2 for i in range(len(corpora))], corpora)
    ax.set_ylabel("MB/s (higher is better)")
    ax.set_title("bert-base-uncased end to end, one thread")
    ax.legend(fontsize=7)
    fig.tight_layout()
    p2 = IMG / "wordpiece_e2e.png"
    fig.savefig(p2, dpi=120)
    plt.close(fig)
    return [p1, p2]


def write_doc(block: str) -> None:
    text = DOC.read_text(encoding="utf-8") if DOC.exists() else ""
    start, end = "<!-- bench:start -->", "<!-- bench:end -->"
    if start in text and end in text:
        text = re.sub(re.escape(start) + ".*?" + re.escape(end), start + "\n" + block + "\n" + end,
                      text, flags=re.S)
    else:
        text += f"\n{start}\n{block}\n{end}\n"
    DOC.write_text(text, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes; do not touch docs/")
    ap.add_argument("--budget", type=float, default=3.0,
                    help="drop a single-word method once one call takes this many seconds")
    ap.add_argument("--chars", type=int, default=1_000_000, help="characters per E2E corpus")
    args = ap.parse_args(argv)
    sizes = [10, 30, 100, 300, 1000, 3000, 10_000]
    if args.quick:
        sizes, args.chars, args.budget = [10, 100, 1000], 100_000, 0.5
    print("single word, adversarial vocabulary:")
    sw = single_word(sizes, args.budget)
    print("end to end:")
    e2e = end_to_end(args.chars)
    block = tables(sw, e2e, sizes)
    print()
    print(block)
    if not args.quick:
        for p in plots(sw, e2e):
            print("wrote", p.relative_to(ROOT))
        write_doc(block)
        print("updated", DOC.relative_to(ROOT))
    return 0


if __name__ == "__main__":
    sys.exit(main())
