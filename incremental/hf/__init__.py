"""HuggingFace ``tokenizer.json`` pipelines (Llama 3, Qwen 3, DeepSeek V3, gpt-oss, Tekken,
Gemma, Llama 2, BERT, XLM-R, ...): one reader that builds a livetok encoding from the file's
own normalizer, pre-tokenizer, model and added tokens.

``hf`` composes the families: it may import the core and the tokenizer families
(``bytelevel``, ``wordpiece``, ``sentencepiece``) to reuse their algorithms, and no family
imports it (``tests/unit/test_layout.py``). ``normalizers``, ``pretokenizers`` and ``models``
mirror the file's sections; ``added`` splits the text on added tokens; ``encoding`` puts them
behind the shared ``PieceEncoding`` protocol; ``reader`` reads the file and says what it does
not implement.
"""
