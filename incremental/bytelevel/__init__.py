"""Byte-level BPE encodings in tiktoken's style (``o200k_base``, ``cl100k_base``, ``r50k_base``).

A regex pre-tokenizer (``pretokenize``, with the hand-written ``fastsplit`` scanner) cuts the
text into pieces; each piece's UTF-8 bytes are merged by rank (``bpe``); ``encoding`` puts the
two together behind tiktoken's API.
"""
