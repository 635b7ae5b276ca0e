"""`livetok analyze` on the real tokenizer.json test files (tests/_tokenizer_files.py), as the
generated section of docs/merge-semantics.md: each file's report (what the command prints, with
the default --max-steps), its time, and two checks against HuggingFace `tokenizers` (a test
dependency): what the file's own BPE model gives on the witness, and on sampled strings whether
it agrees with Definition 3 or Definition 4 of *Formalizing BPE Tokenization*.

    .venv/bin/python scripts/analyze_tokenizer_json.py            # print the section
    .venv/bin/python scripts/analyze_tokenizer_json.py --write    # update the page

Reads the installed files only (bash scripts/install-dev.sh test installs them); a missing
file is listed as missing. Takes about two minutes (Gemma 3 and gpt-oss take ~30 s each).
"""

from __future__ import annotations

import random
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from livetok.incremental.analysis import hf_merges  # noqa: E402
from livetok.incremental.analysis import merge_rules as mr  # noqa: E402
from livetok.server.cli.analyze import DEFAULT_MAX_STEPS, report_tokenizer_json  # noqa: E402
from tests._tokenizer_files import FILES, location  # noqa: E402

PAGE = ROOT / "docs" / "merge-semantics.md"
BEGIN = "<!-- analyze:begin (scripts/analyze_tokenizer_json.py --write) -->"
END = "<!-- analyze:end -->"
#: strings sampled per file for the Definition 3 / Definition 4 check
SAMPLES = 2000


def _sample(vocab: dict[str, int], ignore_merges: bool, seed: int = 17) -> list[str]:
    """Concatenations of two or three vocabulary entries whose characters are all vocabulary
    entries themselves (else byte fallback or unk would enter, which the dictionary does not
    model), skipping strings that are entries when ``ignore_merges`` returns those whole."""
    rng = random.Random(seed)
    toks = [t for t in vocab if not (t.startswith("<") and t.endswith(">"))]
    out: list[str] = []
    while len(out) < SAMPLES:
        w = "".join(rng.choice(toks) for _ in range(rng.choice((2, 3))))
        if all(c in vocab for c in w) and not (ignore_merges and w in vocab):
            out.append(w)
    return out


def _cross_check(path: Path, m: hf_merges.TokenizerJsonModel,
                 a: hf_merges.MergeSemantics) -> tuple[str, str]:
    """(what tokenizers gives on the witness, agreement on sampled strings)."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(path))
    D = m.rules
    assert D is not None

    def hf_lib(w: str) -> tuple[str, ...]:
        return tuple(t.value for t in tok.model.tokenize(w))

    on_witness = "–"
    if a.witness is not None:
        got = hf_lib(a.witness)
        on_witness = ("Definition 3 (SP)" if got == a.sp else
                      "Definition 4 (HF)" if got == a.hf else f"neither: {got!r}")
    vocab: dict[str, Any] = tok.get_vocab(with_added_tokens=False)
    sample = _sample(vocab, m.ignore_merges)
    d3 = d4 = 0
    for w in sample:
        got = hf_lib(w)
        d3 += got == mr.tokenize_sp(D, w)
        d4 += got == mr.tokenize_hf(D, w)
    return on_witness, f"{d3:,} / {d4:,} of {len(sample):,}"


def section() -> str:
    rows = ["| file | merges | proper | violations | useful rules (Cor. 1) | their violations "
            "| SP vs HF | witness | `tokenizers` on the witness | `tokenizers` = Def. 3 / Def. 4 "
            "on sampled strings | analyze CPU time | steps |",
            "| --- | ---: | --- | ---: | ---: | ---: | --- | --- | --- | --- | ---: | ---: |"]
    reports: list[str] = []
    verdicts = {"proper": "always equal (Lemma 1)",
                "useful proper": "always equal (Lemma 1 on the useful rules)",
                "witness": "**differ**", "not found": "may differ; none found"}
    for name in FILES:
        path = location(name)
        if not path.is_file():
            rows.append(f"| `{name}` | (not installed) |" + " |" * 10)
            continue
        lines: list[str] = []
        steps = mr.StepBudget(DEFAULT_MAX_STEPS)
        t0 = time.process_time()
        m = hf_merges.load_model(path)
        try:
            a = report_tokenizer_json(m, lines.append, steps=steps)
        except mr.AnalysisStopped as e:
            lines.append(f"(stderr) livetok analyze: {name}: {e}")
            a = None
        secs = time.process_time() - t0
        shown = [ln.replace(str(path), f"{name}/tokenizer.json") for ln in lines]
        reports.append(f"`{name}`:\n\n```text\n" + "\n".join(shown) + "\n```")
        if m.rules is None or a is None:
            what = m.model_type if m.rules is None else "stopped (--max-steps)"
            rows.append(f"| `{name}` | {what} | | | | | | | | | {secs:.1f} s | {steps.used:,} |")
            continue
        on_w, sampled = _cross_check(path, m, a)
        w = a.witness
        shown_w = "–" if w is None else (f"`{w[0]!r}`×{len(w)}" if w == w[0] * len(w)
                                         else f"`{w!r}`")
        useful = "–" if a.useful_sp is None else f"{sum(a.useful_sp):,}"
        uviol = "–" if a.useful_sp is None else f"{len(a.useful_violations):,}"
        rows.append(f"| `{name}` | {m.n_merges:,} | {'yes' if a.proper else 'no'} | "
                    f"{len(a.violations):,} | {useful} | {uviol} | {verdicts[a.verdict]} | "
                    f"{shown_w} | {on_w} | {sampled} | {secs:.1f} s | {steps.used:,} |")
    return "\n".join(rows) + "\n\nWhat `livetok analyze FILE` prints for each:\n\n" + \
        "\n\n".join(reports)


def main(argv: list[str]) -> int:
    text = section()
    if argv[1:] == ["--write"]:
        page = PAGE.read_text(encoding="utf-8")
        head, _, rest = page.partition(BEGIN)
        _, _, tail = rest.partition(END)
        PAGE.write_text(f"{head}{BEGIN}\n\n{text}\n\n{END}{tail}", encoding="utf-8")
        print(f"wrote {PAGE.relative_to(ROOT)}")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
