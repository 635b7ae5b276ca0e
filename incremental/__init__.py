"""livetok's pure core: exact tokenizers and the incremental document.

No I/O beyond loading vocabularies, no language-server code.
"""

from .document import Document, EditResult, TokenInfo
from .encoding import Encoding, sanitize
from .load import VocabularyError
from .protocol import PieceEncoding
from .registry import get_encoding, list_encodings, register_encoding

__all__ = [
    "Document",
    "EditResult",
    "TokenInfo",
    "Encoding",
    "PieceEncoding",
    "VocabularyError",
    "get_encoding",
    "list_encodings",
    "register_encoding",
    "sanitize",
]
