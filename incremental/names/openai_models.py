"""Which encoding each OpenAI model uses: tiktoken's ``model.py`` tables, for model names.

The tables are tiktoken's (0.14.0), verbatim and in its order, so that
:func:`encoding_name_for_model` answers as tiktoken's does for every model, including those
whose encoding livetok cannot load without a file (``p50k_base``, ``p50k_edit``: no package
ships their vocabulary); :func:`encoding_for_model` then says which encoding is missing.

>>> encoding_name_for_model("gpt-4o-2024-08-06")
'o200k_base'
"""

from __future__ import annotations

from typing import Any, Callable

from ..vocab.readers import VocabularyError
from .registry import get_encoding

__all__ = [
    "MODEL_TO_ENCODING",
    "MODEL_PREFIX_TO_ENCODING",
    "encoding_name_for_model",
    "encoding_for_model",
    "encoding_for_model_with",
]

#: model-name prefixes (a dated or fine-tuned model), tried in this order after an exact name
MODEL_PREFIX_TO_ENCODING: dict[str, str] = {
    "o1-": "o200k_base",
    "o3-": "o200k_base",
    "o4-mini-": "o200k_base",
    # chat
    "gpt-5": "o200k_base",
    "gpt-4.5-": "o200k_base",
    "gpt-4.1-": "o200k_base",
    "chatgpt-4o-": "o200k_base",
    "gpt-4o-": "o200k_base",  # e.g., gpt-4o-2024-05-13
    "gpt-4-": "cl100k_base",  # e.g., gpt-4-0314, etc., plus gpt-4-32k
    "gpt-3.5-turbo-": "cl100k_base",  # e.g, gpt-3.5-turbo-0301, -0401, etc.
    "gpt-35-turbo-": "cl100k_base",  # Azure deployment name
    "gpt-oss-": "o200k_harmony",
    # fine-tuned
    "ft:gpt-4o": "o200k_base",
    "ft:gpt-4": "cl100k_base",
    "ft:gpt-3.5-turbo": "cl100k_base",
    "ft:davinci-002": "cl100k_base",
    "ft:babbage-002": "cl100k_base",
}

#: exact model names
MODEL_TO_ENCODING: dict[str, str] = {
    # reasoning
    "o1": "o200k_base",
    "o3": "o200k_base",
    "o4-mini": "o200k_base",
    # chat
    "gpt-5": "o200k_base",
    "gpt-4.1": "o200k_base",
    "gpt-4o": "o200k_base",
    "gpt-4": "cl100k_base",
    "gpt-3.5-turbo": "cl100k_base",
    "gpt-3.5": "cl100k_base",  # Common shorthand
    "gpt-35-turbo": "cl100k_base",  # Azure deployment name
    # base
    "davinci-002": "cl100k_base",
    "babbage-002": "cl100k_base",
    # embeddings
    "text-embedding-ada-002": "cl100k_base",
    "text-embedding-3-small": "cl100k_base",
    "text-embedding-3-large": "cl100k_base",
    # DEPRECATED MODELS
    # text (DEPRECATED)
    "text-davinci-003": "p50k_base",
    "text-davinci-002": "p50k_base",
    "text-davinci-001": "r50k_base",
    "text-curie-001": "r50k_base",
    "text-babbage-001": "r50k_base",
    "text-ada-001": "r50k_base",
    "davinci": "r50k_base",
    "curie": "r50k_base",
    "babbage": "r50k_base",
    "ada": "r50k_base",
    # code (DEPRECATED)
    "code-davinci-002": "p50k_base",
    "code-davinci-001": "p50k_base",
    "code-cushman-002": "p50k_base",
    "code-cushman-001": "p50k_base",
    "davinci-codex": "p50k_base",
    "cushman-codex": "p50k_base",
    # edit (DEPRECATED)
    "text-davinci-edit-001": "p50k_edit",
    "code-davinci-edit-001": "p50k_edit",
    # old embeddings (DEPRECATED)
    "text-similarity-davinci-001": "r50k_base",
    "text-similarity-curie-001": "r50k_base",
    "text-similarity-babbage-001": "r50k_base",
    "text-similarity-ada-001": "r50k_base",
    "text-search-davinci-doc-001": "r50k_base",
    "text-search-curie-doc-001": "r50k_base",
    "text-search-babbage-doc-001": "r50k_base",
    "text-search-ada-doc-001": "r50k_base",
    "code-search-babbage-code-001": "r50k_base",
    "code-search-ada-code-001": "r50k_base",
    # open source
    "gpt2": "gpt2",
    "gpt-2": "gpt2",  # Maintains consistency with gpt-4
}


def encoding_name_for_model(model_name: str) -> str:
    """The name of the encoding ``model_name`` uses, as tiktoken's ``encoding_name_for_model``:
    an exact name first, then the first prefix that matches (so a future dated model such as
    ``gpt-4o-2030-01-01`` is known too); ``KeyError`` for a model it does not know.

    >>> encoding_name_for_model("gpt-3.5-turbo-0301"), encoding_name_for_model("gpt2")
    ('cl100k_base', 'gpt2')

    Runtime complexity: ``O(prefixes)``.
    """
    if not isinstance(model_name, str):
        raise TypeError(f"model_name must be a str, not {type(model_name).__name__}")
    name = MODEL_TO_ENCODING.get(model_name)
    if name is not None:
        return name
    for prefix, name in MODEL_PREFIX_TO_ENCODING.items():
        if model_name.startswith(prefix):
            return name
    raise KeyError(
        f"Could not automatically map {model_name} to a tokeniser. Please use "
        "`get_encoding` to explicitly get the tokeniser you expect (livetok knows "
        "o200k_base, cl100k_base, r50k_base, ...: list_encodings())."
    )


def encoding_for_model(model_name: str) -> Any:
    """The encoding ``model_name`` uses (tiktoken's ``encoding_for_model``), loaded offline.

    ``KeyError`` for a model that is not known; for a known model whose encoding cannot be
    loaded here (``p50k_base``: no package ships it), a :class:`.VocabularyError` (a
    ``ValueError``) naming the model, the encoding and how to supply its file.

    >>> encoding_for_model("gpt-4o").name
    'o200k_base'

    Runtime complexity: as :func:`get_encoding`.
    """
    return encoding_for_model_with(model_name, get_encoding)


def encoding_for_model_with(model_name: str, get: Callable[[str], Any]) -> Any:
    """:func:`encoding_for_model` with ``get`` loading the encoding by name (the
    tiktoken-compatible module passes its own)."""
    name = encoding_name_for_model(model_name)
    try:
        return get(name)
    except VocabularyError as exc:
        raise VocabularyError(f"model {model_name!r} uses the encoding {name!r}: {exc}") from exc
