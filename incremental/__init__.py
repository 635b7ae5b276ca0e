"""livetok's pure core: exact tokenizers and the incremental document.

No I/O beyond loading vocabularies, no language-server code. Code written for tiktoken can
switch with one import: ``import livetok.incremental.tiktoken_compat as tiktoken``.
"""

from .document import Document, EditResult, TokenInfo
from .bytelevel.encoding import Encoding, UnknownTokenError
from .names.catalog import Model, find_model, list_models
from .vocab.readers import VocabularyError
from .names.openai_models import encoding_for_model, encoding_name_for_model
from .piece_encoding import PieceEncoding
from .names.registry import get_encoding, list_encodings, register_encoding
from .text import join_surrogates, sanitize

__all__ = [
    "Document",
    "EditResult",
    "Model",
    "TokenInfo",
    "Encoding",
    "PieceEncoding",
    "UnknownTokenError",
    "VocabularyError",
    "encoding_for_model",
    "encoding_name_for_model",
    "find_model",
    "get_encoding",
    "join_surrogates",
    "list_encodings",
    "list_models",
    "register_encoding",
    "sanitize",
]
