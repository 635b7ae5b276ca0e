"""``livetok.compare`` through the language server as an editor runs it (``python -m livetok.server``
under pytest-lsp's client, the stdio front included): the compared encodings load in the
worker thread on the first ``didOpen``, every compared count equals its reference library's
after seeded random edits sent in bursts, an ≈ model is counted with its stand-in and marked
so, a name that cannot be counted is shown once, and the setting can be changed and turned
off mid-session (issue 29)."""

from __future__ import annotations

import random
from typing import Any, Callable

import pytest

from livetok.incremental import get_encoding

from .._lsp import ClientDoc, poll, result_dict, session, token_count
from .._refs import real_text, tiktoken_ref

URI = "file:///w/compare.md"
SNIPPETS = ["the ", "quick", " brown fox\n", "\n\n", "naïve café ", "東京タワー", "😀👍🏽",
            "def f(x):\n    return x\n", "  ", "[INST] ", "'s", "e\u0301"]


def _reference(name: str) -> Callable[[str], list[int]]:
    if name in ("o200k_base", "cl100k_base"):
        return tiktoken_ref(name).encode_ordinary
    if name == "bert-base-uncased":
        from .._hf_encodings import hf_ids

        return lambda text: hf_ids("bert", text)
    assert name == "mistral-7b-v0.1", name
    spm = pytest.importorskip("sentencepiece")
    source = getattr(get_encoding(name), "source", None)
    return spm.SentencePieceProcessor(model_file=str(source)).encode  # type: ignore[no-any-return]


def _latest(client: Any) -> dict[str, Any] | None:
    counts = [c for c in client.counts if c["uri"] == URI]
    return counts[-1] if counts else None


async def _settled(client: Any, doc: ClientDoc, names: list[str]) -> dict[str, Any]:
    """The count of ``doc``'s latest version with ``names`` compared, once it arrives."""
    def ready() -> bool:
        c = _latest(client)
        return (c is not None and c["version"] == doc.version
                and [x["encoding"] for x in c.get("compare", [])] == names)

    assert await poll(ready), f"no count of version {doc.version} comparing {names}: " \
        f"{_latest(client)}"
    count = _latest(client)
    assert count is not None
    return count


def _check(count: dict[str, Any], text: str) -> None:
    assert count["tokens"] == len(_reference(count["encoding"])(text))
    assert count["characters"] == len(text)
    for c in count.get("compare", []):
        assert c["tokens"] == len(_reference(c["countedWith"])(text)), c


async def _edit(client: Any, doc: ClientDoc, rng: random.Random, n: int,
                names: list[str]) -> None:
    """``n`` random edits in bursts of up to 8 didChanges, each burst's count checked."""
    done = 0
    while done < n:
        for _ in range(min(rng.randint(1, 8), n - done)):
            text = doc.text
            pos = rng.randint(0, len(text))
            if rng.random() < 0.35 and pos < len(text):
                doc.change([(pos, min(rng.randint(1, 12), len(text) - pos), "")])
            else:
                doc.change([(pos, 0, rng.choice(SNIPPETS))])
            done += 1
        _check(await _settled(client, doc, names), doc.text)


async def test_compare_through_the_server() -> None:
    rng = random.Random(293)
    names = ["cl100k_base", "bert-base-uncased", "claude-sonnet-4", "no_such_encoding"]
    shown = names[:3]
    async with session(options={"livetok": {"compare": names}}) as client:
        doc = ClientDoc(client, URI, real_text(4_000) + "\nnaïve 東京 😀\n", "utf-16",
                        "markdown")
        count = await _settled(client, doc, shown)
        _check(count, doc.text)
        cl100k, bert, claude = count["compare"]
        assert cl100k["exact"] and bert["exact"] and "note" not in cl100k
        assert claude["exact"] is False and claude["countedWith"] == "cl100k_base"
        assert claude["note"].startswith("≈ ")
        await _edit(client, doc, rng, 60, shown)
        answer = result_dict(await token_count(client, URI))
        assert answer["compare"] == _latest(client)["compare"]  # type: ignore[index]
        errors = [m.message for m in client.messages]
        assert len(errors) == 1 and "'no_such_encoding' is left out" in errors[0]

        client.workspace_did_change_configuration(_config({"compare": ["mistral-7b-v0.1"]}))
        _check(await _settled(client, doc, ["mistral-7b-v0.1"]), doc.text)
        await _edit(client, doc, rng, 40, ["mistral-7b-v0.1"])

        client.workspace_did_change_configuration(_config({"compare": None}))
        _check(await _settled(client, doc, []), doc.text)
        await _edit(client, doc, rng, 20, [])
        assert len(client.messages) == 1  # the bad name was not named again


def _config(livetok: dict[str, Any]) -> Any:
    from lsprotocol import types

    return types.DidChangeConfigurationParams(settings={"livetok": livetok})


async def test_compare_in_the_worker_thread() -> None:
    """With ``progressThreshold`` below the document's size, its build (with the compared
    documents) and each rebuild of the compared counts after a settings change run in the
    worker thread while edits and requests wait in its backlog: an edit sent right after the
    change, and a request after that, see the new compared counts, exact. Changing the
    document's encoding (to ``gpt-4o``, another name for the same encoding, loaded in the
    worker) together with ``compare`` keeps the document and rebuilds only its compared counts
    when that work is done."""
    rng = random.Random(2929)
    options = {"livetok": {"compare": ["cl100k_base"], "progressThreshold": 1000}}
    async with session(options=options) as client:
        doc = ClientDoc(client, URI, real_text(3_000), "utf-16", "markdown")
        _check(await _settled(client, doc, ["cl100k_base"]), doc.text)
        await _edit(client, doc, rng, 20, ["cl100k_base"])
        for change in ({"compare": ["bert-base-uncased", "cl100k_base"]},
                       {"encoding": "gpt-4o", "compare": ["mistral-7b-v0.1"]}):
            client.workspace_did_change_configuration(_config(change))
            doc.change([(5, 0, "typed at once ")])  # waits for the rebuild, then applies
            answer = result_dict(await token_count(client, URI))
            names = change["compare"]
            assert [c["encoding"] for c in answer["compare"]] == names
            assert answer["version"] == doc.version
            _check(answer, doc.text)
            await _edit(client, doc, rng, 20, names)
        assert _latest(client)["encoding"] == "o200k_base"  # type: ignore[index]
        assert not client.messages
