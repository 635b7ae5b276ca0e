"""Names: which tokenizer a name means. An encoding's name (``o200k_base``, a ``tokenizer.json``
path, ``hf:...``) becomes an encoding object (:mod:`.registry`), a model's name its tokenizer
(:mod:`.catalog`, :mod:`.openai_models`); ``tiktoken``'s API on top of them is the package's
second face, :mod:`livetok.incremental.tiktoken_compat`.

This room sits above the families (it builds their encodings) and the vocabularies
(:mod:`livetok.incremental.vocab`, which it asks for files); nothing below imports it.
"""
