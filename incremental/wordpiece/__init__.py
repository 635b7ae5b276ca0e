"""WordPiece (BERT): the BERT normalizer and pre-tokenizer, and LinMaxMatch / E2E WordPiece.

After *Fast WordPiece Tokenization* (Song et al., 2021): ``linmaxmatch`` is the trie with
failure links (Algorithms 1 and 2), ``e2e`` the end-to-end variant (Section 4),
``bert_normalize`` BERT's normalizer and pre-tokenizer, ``encoding`` the encoding behind the
shared ``PieceEncoding`` protocol, ``load`` builds one from a ``vocab.txt`` or a
``tokenizer.json``; ``_reference`` holds the slow MaxMatch references (tests only).
"""
