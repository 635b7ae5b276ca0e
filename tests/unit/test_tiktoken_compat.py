"""``livetok.incremental.tiktoken_compat``: tiktoken's module API and defaults, against tiktoken.

tiktoken's own test suite runs against this module in ``test_tiktoken_upstream.py``; these are
the checks that suite does not make: every public name of tiktoken is here, the defaults raise
where tiktoken's raise, the errors for what livetok does not have.
"""

from __future__ import annotations

import inspect
import pickle

import pytest
import tiktoken
from hypothesis import given
from hypothesis import strategies as st

import livetok.incremental.tiktoken_compat as compat
from livetok.incremental import Encoding as LivetokEncoding
from livetok.incremental import VocabularyError, get_encoding

from .._refs import BPE_NAMES, tiktoken_ref

#: tiktoken's public API that the compat module leaves out, and why (docs/index.md says so too)
NOT_PROVIDED = {
    "encode_to_numpy": "numpy is no dependency of livetok: np.array(enc.encode(text))",
    "encode_with_unstable": "tiktoken calls it unstable; no Document needs it",
}


def test_every_public_name_of_tiktoken_is_here():
    """The module's names (``tiktoken.__init__``) and every public method and property of
    ``tiktoken.Encoding``, with the same keyword arguments and defaults, less NOT_PROVIDED."""
    for name in [n for n in dir(tiktoken) if not n.startswith("_")]:
        if name in ("core", "model", "registry", "load"):  # submodules, not API
            continue
        assert hasattr(compat, name), name
    for name, member in inspect.getmembers(tiktoken.Encoding):
        if name.startswith("_") or name in NOT_PROVIDED:
            continue
        ours = getattr(compat.Encoding, name, None)
        assert ours is not None, f"compat.Encoding lacks {name}"
        if callable(member) and not isinstance(member, type):
            want = inspect.signature(member).parameters
            got = inspect.signature(ours).parameters
            for p in want.values():
                if p.kind is p.KEYWORD_ONLY or p.default is not p.empty:
                    assert p.name in got, f"{name}({p.name}=...)"
                    assert got[p.name].default == p.default or (
                        p.default == set() and got[p.name].default == frozenset()
                    ), f"{name}({p.name}=...): default {got[p.name].default!r}, not {p.default!r}"


@pytest.mark.parametrize("name", BPE_NAMES)
def test_encode_defaults_raise_as_tiktokens(name):
    """The one default livetok changes (``disallowed_special``) is tiktoken's again here."""
    enc = compat.get_encoding(name)
    tk = tiktoken_ref(name)
    text = "hello <|endoftext|> world"
    for call in (lambda e: e.encode(text), lambda e: e.encode_batch([text])):
        with pytest.raises(ValueError, match="disallowed special token '<\\|endoftext\\|>'"):
            call(tk)
        with pytest.raises(ValueError, match="disallowed special token '<\\|endoftext\\|>'"):
            call(enc)
    assert enc.encode_ordinary(text) == tk.encode_ordinary(text) == get_encoding(name).encode(text)
    assert enc.encode_ordinary_batch([text]) == tk.encode_ordinary_batch([text])
    assert enc.encode(text, disallowed_special=()) == tk.encode(text, disallowed_special=())
    assert enc.count(text) == len(tk.encode_ordinary(text))  # livetok's extra: never raises
    assert list(enc.encode_stream([text])) == tk.encode_ordinary(text)


_BITS = ["<|endoftext|>", "<|endofprompt|>", "<|fim_prefix|>", "<|fim_middle|>", "<|", "|>",
         "hi", " ", "\n", "😀", "\ud83d", "\udc4d", "中文"]


@pytest.mark.parametrize("name", BPE_NAMES)
@given(parts=st.lists(st.sampled_from(_BITS), max_size=12), data=st.data())
def test_encode_equals_tiktoken_or_raises_alike(name, parts, data):
    """Any text and any allowed/disallowed arguments: the same ids as tiktoken's ``encode``,
    or a ``ValueError`` where it raises one."""
    enc = compat.get_encoding(name)
    tk = tiktoken_ref(name)
    text = "".join(parts)
    specials = sorted(tk.special_tokens_set)
    subsets = st.sets(st.sampled_from(specials)) if specials else st.just(set())
    kwargs = {}
    if data.draw(st.booleans()):
        kwargs["allowed_special"] = data.draw(st.just("all") | subsets)
    if data.draw(st.booleans()):
        kwargs["disallowed_special"] = data.draw(st.just("all") | subsets.map(tuple))
    try:
        want = tk.encode(text, **kwargs)
    except ValueError:
        with pytest.raises(ValueError):
            enc.encode(text, **kwargs)
        return
    assert enc.encode(text, **kwargs) == want


def test_module_functions_as_tiktokens():
    assert compat.list_encoding_names() == [
        n for n in tiktoken.list_encoding_names() if not n.startswith("p50k")]
    enc = compat.get_encoding("o200k_base")
    assert isinstance(enc, compat.Encoding) and isinstance(enc, LivetokEncoding)
    assert enc is compat.get_encoding("o200k_base") is compat.encoding_for_model("gpt-4o")
    # the same vocabulary as livetok's own encoding, not a second copy
    assert enc.mergeable_ranks is get_encoding("o200k_base").mergeable_ranks
    assert get_encoding("o200k_base").encode("<|endoftext|>") == enc.encode_ordinary(
        "<|endoftext|>")  # livetok's own encoding keeps its default
    assert compat.get_encoding("gpt2").name == "gpt2"
    assert compat.encoding_for_model("gpt-oss-120b").name == "o200k_harmony"
    assert compat.encoding_for_model("gpt-3.5-turbo-0301").name == "cl100k_base"
    assert compat.encoding_name_for_model("text-davinci-003") == "p50k_base"
    assert compat.MODEL_TO_ENCODING == tiktoken.model.MODEL_TO_ENCODING


def test_errors_say_what_is_missing():
    with pytest.raises(ValueError, match="Expected a string in get_encoding"):
        compat.get_encoding(None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown encoding 'o300k_base'"):
        compat.get_encoding("o300k_base")
    with pytest.raises(ValueError, match="'bert-base-uncased' is not a tiktoken-style encoding"):
        compat.get_encoding("bert-base-uncased")
    with pytest.raises(VocabularyError, match="p50k_base.*no package"):
        compat.get_encoding("p50k_base")
    with pytest.raises(VocabularyError, match="'text-davinci-edit-001' uses the encoding 'p50k_edit'"):
        compat.encoding_for_model("text-davinci-edit-001")
    with pytest.raises(KeyError, match="Could not automatically map llama"):
        compat.encoding_for_model("llama")


def test_constructor_and_pickle_as_tiktokens():
    """tiktoken's constructor (``explicit_n_vocab`` checked), its private attributes that
    code reads, and pickling: a registry encoding by name, any other by its vocabulary."""
    base = compat.get_encoding("r50k_base")
    assert (base._pat_str, base._special_tokens) == (base.pat_str, base.special_tokens)
    assert base._mergeable_ranks is base.mergeable_ranks
    kw = dict(pat_str=base._pat_str, mergeable_ranks=base._mergeable_ranks,
              special_tokens=base._special_tokens)
    assert compat.Encoding("r50k_copy", explicit_n_vocab=50257, **kw).n_vocab == 50257
    with pytest.raises(ValueError, match="explicit_n_vocab=50000"):
        compat.Encoding("r50k_copy", explicit_n_vocab=50000, **kw)
    assert pickle.loads(pickle.dumps(base)) is base
    mine = compat.Encoding("mine", pat_str=base._pat_str, mergeable_ranks=base._mergeable_ranks,
                           special_tokens={"<|pickle|>": 100_000})
    back = pickle.loads(pickle.dumps(mine))
    assert type(back) is compat.Encoding and back.name == "mine"
    assert back.encode("<|pickle|>", allowed_special="all") == [100_000]
    with pytest.raises(ValueError):
        back.encode("<|pickle|>")  # tiktoken's default survives the round trip


def test_docs_show_the_one_line_switch():
    from pathlib import Path

    docs = (Path(__file__).resolve().parents[2] / "docs" / "index.md").read_text()
    assert "import livetok.incremental.tiktoken_compat as tiktoken" in docs
    for name, reason in NOT_PROVIDED.items():
        assert name in docs, f"docs/index.md does not say that {name} is left out ({reason})"


def test_the_registry_is_the_one_cache():
    """tiktoken_compat keeps no cache of its own: its encoding of a name sits in the registry's
    cache beside livetok's (sharing the vocabulary, also under an alias), and registering
    another factory for the name drops both; a subclass encoding a factory returns pickles by
    name too."""
    from livetok.incremental.names import registry

    base = get_encoding("r50k_base")
    mine = compat.get_encoding("r50k_base")
    assert registry.is_registered(base) and registry.is_registered(mine, "tiktoken defaults")
    assert not registry.is_registered(mine) and mine.mergeable_ranks is base.mergeable_ranks
    assert compat.get_encoding("gpt-4") is compat.get_encoding("cl100k_base")

    class Mine(LivetokEncoding):
        pass

    def factory() -> Mine:
        return base._variant("test-one-cache", cls=Mine)  # type: ignore[return-value]

    registry.register_encoding("test-one-cache", factory)
    try:
        first = get_encoding("test-one-cache")
        assert type(first) is Mine and pickle.loads(pickle.dumps(first)) is first
        old = compat.get_encoding("test-one-cache")
        assert compat.get_encoding("test-one-cache") is old
        registry.register_encoding("test-one-cache", factory)  # a new factory: both dropped
        assert get_encoding("test-one-cache") is not first
        assert compat.get_encoding("test-one-cache") is not old
        assert not registry.is_registered(old, "tiktoken defaults")
    finally:
        registry._FACTORIES.pop("test-one-cache", None)
        registry._LOADED.pop("test-one-cache", None)
        registry._LOADED.pop(("test-one-cache", "tiktoken defaults"), None)
