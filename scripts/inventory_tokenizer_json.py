"""The pipelines of the real tokenizer.json test files (tests/_tokenizer_files.py), as the
Markdown tables of docs/tokenizer-json.md: normalizer, pre-tokenizer (Split patterns, their
behaviour and `invert`), model and its flags, decoder, post-processor, added tokens.

    .venv/bin/python scripts/inventory_tokenizer_json.py            # print the tables
    .venv/bin/python scripts/inventory_tokenizer_json.py --write    # update the page

Reads the installed files only (bash scripts/install-dev.sh test installs them); a missing
file is listed as missing.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests._tokenizer_files import FILES, location  # noqa: E402

PAGE = ROOT / "docs" / "tokenizer-json.md"
BEGIN = "<!-- inventory:begin (scripts/inventory_tokenizer_json.py --write) -->"
END = "<!-- inventory:end -->"


def _s(x: Any) -> str:
    return json.dumps(x, ensure_ascii=True)


def _pattern(p: dict[str, str]) -> str:
    if "String" in p:
        return f"String {_s(p['String'])}"
    if len(p["Regex"]) <= 30:
        return f"Regex {_s(p['Regex'])}"
    return "Regex (below)"


def normalizer(n: dict[str, Any] | None) -> str:
    if n is None:
        return "none"
    t = n["type"]
    if t == "Sequence":
        inner = [normalizer(x) for x in n["normalizers"]]
        return "Sequence[" + ", ".join(inner) + "]" if inner else "Sequence[] (empty)"
    if t == "Replace":
        return f"Replace({_pattern(n['pattern'])} → {_s(n['content'])})"
    if t == "Prepend":
        return f"Prepend({_s(n['prepend'])})"
    if t == "Precompiled":
        size = len(n.get("precompiled_charsmap") or "")
        return f"Precompiled(charsmap {size:,} base64 chars)"
    if t == "BertNormalizer":
        flags = ("clean_text", "handle_chinese_chars", "strip_accents", "lowercase")
        return "BertNormalizer(" + ", ".join(f"{f}={n.get(f)}" for f in flags) + ")"
    if t == "Strip":
        return f"Strip(left={n.get('strip_left')}, right={n.get('strip_right')})"
    return t


def pre_tokenizer(p: dict[str, Any] | None) -> str:
    if p is None:
        return "none"
    t = p["type"]
    if t == "Sequence":
        return " + ".join(pre_tokenizer(x) for x in p["pretokenizers"])
    if t == "Split":
        inv = ", invert" if p.get("invert") else ""
        return f"Split({_pattern(p['pattern'])}, {p['behavior']}{inv})"
    if t == "ByteLevel":
        return (f"ByteLevel(add_prefix_space={p.get('add_prefix_space')}, "
                f"use_regex={p.get('use_regex', True)})")
    if t == "Metaspace":
        legacy = f", add_prefix_space={p['add_prefix_space']}" if "add_prefix_space" in p else ""
        return (f"Metaspace({_s(p.get('replacement'))}, prepend_scheme={p.get('prepend_scheme')}, "
                f"split={p.get('split')}{legacy})")
    if t == "Digits":
        return f"Digits(individual={p.get('individual_digits')})"
    return t


def split_patterns(p: dict[str, Any] | None) -> list[str]:
    if p is None:
        return []
    if p["type"] == "Sequence":
        return [x for q in p["pretokenizers"] for x in split_patterns(q)]
    if p["type"] == "Split" and "Regex" in p["pattern"]:
        return [p["pattern"]["Regex"]]
    return []


def model(m: dict[str, Any]) -> str:
    t = m["type"]
    if t == "BPE":
        merges = m.get("merges") or []
        form = "pairs" if merges and isinstance(merges[0], list) else '"a b" strings'
        flags = [f"ignore_merges={m.get('ignore_merges', '(absent)')}"]
        for f in ("byte_fallback", "fuse_unk"):
            if m.get(f):
                flags.append(f)
        for f in ("unk_token", "continuing_subword_prefix", "end_of_word_suffix", "dropout"):
            if m.get(f) is not None:
                flags.append(f"{f}={_s(m[f])}")
        return (f"BPE ({len(m['vocab']):,} ids, {len(merges):,} merges as {form}; "
                + ", ".join(flags) + ")")
    if t == "WordPiece":
        return (f"WordPiece ({len(m['vocab']):,} ids; unk={_s(m.get('unk_token'))}, "
                f"prefix={_s(m.get('continuing_subword_prefix'))}, "
                f"max_input_chars_per_word={m.get('max_input_chars_per_word')})")
    if t == "Unigram":
        return (f"Unigram ({len(m['vocab']):,} pieces; unk_id={m.get('unk_id')}, "
                f"byte_fallback={m.get('byte_fallback')})")
    return t


def decoder(d: dict[str, Any] | None) -> str:
    if d is None:
        return "none"
    t = d["type"]
    if t == "Sequence":
        return " + ".join(decoder(x) for x in d["decoders"])
    if t == "Replace":
        return f"Replace({_pattern(d['pattern'])} → {_s(d['content'])})"
    if t == "Strip":
        return f"Strip({_s(d.get('content'))}, start={d.get('start')}, stop={d.get('stop')})"
    if t == "Metaspace":
        legacy = f", add_prefix_space={d['add_prefix_space']}" if "add_prefix_space" in d else ""
        return f"Metaspace(prepend_scheme={d.get('prepend_scheme')}{legacy})"
    return t


def post_processor(p: dict[str, Any] | None) -> str:
    if p is None:
        return "none"
    t = p["type"]
    if t == "Sequence":
        return " + ".join(post_processor(x) for x in p["processors"])
    if t == "TemplateProcessing":
        single = " ".join(
            x["SpecialToken"]["id"] if "SpecialToken" in x else "$" + x["Sequence"]["id"]
            for x in p["single"]
        )
        return f"Template({single})"
    return t


def added(tokens: list[dict[str, Any]]) -> str:
    n = len(tokens)
    counts = {f: sum(1 for t in tokens if t.get(f)) for f in
              ("special", "normalized", "lstrip", "rstrip", "single_word")}
    nonspecial = [t["content"] for t in tokens if not t.get("special")]
    out = f"{n:,}: " + ", ".join(f"{v:,} {k}" for k, v in counts.items())
    if nonspecial:
        ws = sum(1 for c in nonspecial if not c.replace("\u2581", " ").strip())
        shown = ", ".join(f"`{c}`" if c.strip() else _s(c) for c in nonspecial[:12])
        more = f", … ({len(nonspecial) - 12:,} more)" if len(nonspecial) > 12 else ""
        out += f"; {len(nonspecial):,} non-special ({ws:,} of them whitespace runs): {shown}{more}"
    normalized = [t["content"] for t in tokens if t.get("normalized")]
    if normalized:
        out += "; normalized: " + ", ".join(f"`{c}`" for c in normalized[:4])
        out += f", … ({len(normalized) - 4} more)" if len(normalized) > 4 else ""
    return out


def inventory() -> str:
    rows = ["| file | normalizer | pre-tokenizer | model | decoder | post-processor |",
            "| --- | --- | --- | --- | --- | --- |"]
    added_rows = ["| file | added tokens: total; special, normalized, lstrip, rstrip, single_word | "
                  "truncation / padding in the file |", "| --- | --- | --- |"]
    patterns: list[str] = []
    for name, entry in FILES.items():
        path = location(name)
        if path is None or not path.is_file():
            rows.append(f"| `{name}` | (not installed) | | | | |")
            continue
        d = json.loads(path.read_bytes())
        cell = lambda s: s.replace("|", "\\|")  # noqa: E731
        rows.append(
            f"| `{name}` ({entry.model}) | {cell(normalizer(d.get('normalizer')))} | "
            f"{cell(pre_tokenizer(d.get('pre_tokenizer')))} | {cell(model(d['model']))} | "
            f"{cell(decoder(d.get('decoder')))} | {cell(post_processor(d.get('post_processor')))} |"
        )
        tp = []
        if d.get("truncation"):
            tp.append(f"truncation max_length={d['truncation'].get('max_length')}")
        if d.get("padding"):
            tp.append(f"padding {d['padding'].get('strategy')}")
        added_rows.append(f"| `{name}` | {cell(added(d.get('added_tokens') or []))} | "
                          f"{', '.join(tp) or 'none'} |")
        for i, pat in enumerate(split_patterns(d.get("pre_tokenizer")), 1):
            patterns.append(f"- `{name}` Split {i}:\n\n  ```json\n  {json.dumps(pat, ensure_ascii=False)}\n  ```")
    return ("\n".join(rows) + "\n\n" + "\n".join(added_rows)
            + "\n\nThe Split regexes (each `pattern.Regex` as a JSON string, as written in the file):\n\n" + "\n".join(patterns))


def main(argv: list[str]) -> int:
    text = inventory()
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
