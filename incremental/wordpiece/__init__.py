"""WordPiece (BERT): the BERT normalizer and pre-tokenizer, and LinMaxMatch / E2E WordPiece.

After *Fast WordPiece Tokenization* (Song et al., 2021): ``linmaxmatch`` is the trie with
failure links, ``e2e`` the end-to-end variant, ``encoding`` the encoding behind the shared
``PieceEncoding`` protocol.
"""
