"""tiktoken's module-level API and defaults over livetok's encodings: the one-line switch.

Code written for tiktoken runs on livetok by changing its import::

    import livetok.incremental.tiktoken_compat as tiktoken

    enc = tiktoken.get_encoding("o200k_base")        # offline: no download
    enc = tiktoken.encoding_for_model("gpt-4o")      # tiktoken's model tables
    enc.encode("hello world")                        # the same ids as tiktoken

What differs from :mod:`livetok.incremental` is tiktoken's one default that livetok changes
on purpose: here :meth:`Encoding.encode` raises ``ValueError`` on text that spells a special
token (``disallowed_special="all"``), as tiktoken's does; ``encode_ordinary`` and livetok's own
``get_encoding`` treat such text as text. The encodings are livetok's tiktoken-style ones
(:func:`list_encoding_names`), sharing their vocabulary with :func:`livetok.incremental.get_encoding`'s.
tiktoken's ``p50k_base`` and ``p50k_edit`` ship in no package: :func:`get_encoding` says how to
read them from a file, and :func:`encoding_name_for_model` still names them.

>>> enc = get_encoding("cl100k_base")
>>> enc.encode("hello world")
[15339, 1917]
>>> enc.encode("<|endoftext|>")
Traceback (most recent call last):
...
ValueError: Encountered text corresponding to disallowed special token '<|endoftext|>'. ...
"""

from __future__ import annotations

from typing import AbstractSet, Any, Collection, Iterable, Literal, Mapping

from .names import registry
from .bytelevel.encoding import Encoding as _Encoding
from .bytelevel.encoding import unpickle_encoding
from .names.openai_models import MODEL_PREFIX_TO_ENCODING, MODEL_TO_ENCODING, encoding_for_model_with
from .names.openai_models import encoding_name_for_model

__all__ = [
    "Encoding",
    "get_encoding",
    "encoding_for_model",
    "encoding_name_for_model",
    "list_encoding_names",
    "MODEL_TO_ENCODING",
    "MODEL_PREFIX_TO_ENCODING",
]

#: tiktoken's encodings that livetok has, in tiktoken's order (``p50k_base``/``p50k_edit``:
#: no package ships them; ``get_encoding`` reads them from a file you pass it)
_NAMES = ("gpt2", "r50k_base", "cl100k_base", "o200k_base", "o200k_harmony")
#: the key under which the registry keeps these encodings beside its own (``registry.derived``)
_KIND = "tiktoken defaults"

class Encoding(_Encoding):
    """livetok's :class:`~livetok.incremental.Encoding` with tiktoken's constructor and
    defaults: :meth:`encode` and :meth:`encode_batch` raise ``ValueError`` on text that
    spells a special token unless it is allowed (``disallowed_special="all"``).

    >>> base = get_encoding("r50k_base")
    >>> enc = Encoding("mine", pat_str=base._pat_str, mergeable_ranks=base._mergeable_ranks,
    ...                special_tokens={"<|mine|>": 50257})
    >>> enc.encode("hi<|mine|>", allowed_special="all")
    [5303, 50257]
    """

    def __init__(
        self,
        name: str,
        *,
        pat_str: str,
        mergeable_ranks: Mapping[bytes, int],
        special_tokens: Mapping[str, int],
        explicit_n_vocab: int | None = None,
    ) -> None:
        super().__init__(
            name, pat_str=pat_str, mergeable_ranks=mergeable_ranks, special_tokens=special_tokens
        )
        if explicit_n_vocab:
            n = len(self.mergeable_ranks) + len(self.special_tokens)
            if n != explicit_n_vocab or self.n_vocab != explicit_n_vocab:
                raise ValueError(
                    f"explicit_n_vocab={explicit_n_vocab}, but {name} has {n} tokens and ids "
                    f"up to {self.max_token_value}: pass the vocabulary's own size, or None"
                )

    def encode(
        self,
        text: str,
        *,
        allowed_special: AbstractSet[str] | Literal["all"] = frozenset(),
        disallowed_special: Collection[str] | Literal["all"] = "all",
    ) -> list[int]:
        """Token ids of ``text`` as tiktoken's ``encode``: text that spells a special token
        raises ``ValueError`` unless ``allowed_special`` names it (its id) or
        ``disallowed_special`` leaves it out (ordinary text).

        >>> enc = get_encoding("cl100k_base")
        >>> enc.encode("hi<|endoftext|>", allowed_special="all")
        [6151, 100257]

        Runtime complexity: as livetok's ``encode``, plus one scan for the special tokens.
        """
        return super().encode(
            text, allowed_special=allowed_special, disallowed_special=disallowed_special
        )

    def encode_batch(
        self,
        texts: Iterable[str],
        *,
        num_threads: int = 8,
        allowed_special: AbstractSet[str] | Literal["all"] = frozenset(),
        disallowed_special: Collection[str] | Literal["all"] = "all",
    ) -> list[list[int]]:
        """:meth:`encode` of each text (tiktoken's ``encode_batch``, its defaults).

        Runtime complexity: as :meth:`encode` of each.
        """
        return super().encode_batch(
            texts, allowed_special=allowed_special, disallowed_special=disallowed_special
        )

    # tiktoken's private attributes, which code and tiktoken's own tests read
    @property
    def _pat_str(self) -> str:
        return self.pat_str

    @property
    def _mergeable_ranks(self) -> dict[bytes, int]:
        return self.mergeable_ranks

    @property
    def _special_tokens(self) -> dict[str, int]:
        return self.special_tokens

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickling as tiktoken's: one of :func:`get_encoding`'s encodings travels as its name."""
        if registry.is_registered(self, _KIND):
            return get_encoding, (self.name,)
        return unpickle_encoding, (type(self), self._constructor_args())


def get_encoding(encoding_name: str) -> Encoding:
    """The encoding called ``encoding_name`` with tiktoken's defaults, loaded once, offline.

    ``ValueError`` for a name livetok does not know, for a non-tiktoken encoding (WordPiece,
    SentencePiece: use :func:`livetok.incremental.get_encoding`) and, naming the file to pass
    to :func:`livetok.incremental.get_encoding`, for ``p50k_base``/``p50k_edit``.

    >>> get_encoding("gpt2").name, get_encoding("gpt2").encode("hello world")
    ('gpt2', [31373, 995])

    Runtime complexity: ``O(vocabulary)`` the first time, ``O(1)`` after.
    """
    if not isinstance(encoding_name, str):
        raise ValueError(f"Expected a string in get_encoding, got {type(encoding_name)}")
    base = registry.get_encoding(encoding_name)  # ValueError for an unknown name
    if not isinstance(base, _Encoding):
        raise ValueError(
            f"{encoding_name!r} is not a tiktoken-style encoding; tiktoken_compat has "
            f"{', '.join(list_encoding_names())}; use livetok.incremental.get_encoding for it"
        )
    def build() -> Encoding:
        enc = base._variant(base.name, cls=Encoding)
        assert isinstance(enc, Encoding)  # cls=Encoding
        return enc

    # kept in the registry's cache, beside the encoding it shares its vocabulary with
    return registry.derived(base.name, _KIND, build)


def list_encoding_names() -> list[str]:
    """Names of the tiktoken encodings :func:`get_encoding` loads here (tiktoken's
    ``list_encoding_names`` less ``p50k_base`` and ``p50k_edit``, which need a file).

    >>> list_encoding_names()
    ['gpt2', 'r50k_base', 'cl100k_base', 'o200k_base', 'o200k_harmony']

    Runtime complexity: ``O(encodings)``.
    """
    known = set(registry.list_encodings())
    return [n for n in _NAMES if n in known]


def encoding_for_model(model_name: str) -> Encoding:
    """The encoding ``model_name`` uses, with tiktoken's defaults (tiktoken's
    ``encoding_for_model``): ``KeyError`` for an unknown model, ``ValueError`` naming the
    encoding for a model whose encoding needs a file here (``text-davinci-003``: ``p50k_base``).

    >>> encoding_for_model("gpt-4o-mini").name
    'o200k_base'

    Runtime complexity: as :func:`get_encoding`.
    """
    return encoding_for_model_with(model_name, get_encoding)  # type: ignore[no-any-return]
