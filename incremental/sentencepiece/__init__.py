"""SentencePiece BPE models (Mistral v0.1 and other ``.model`` files).

``model_proto`` reads the model file (a protobuf, without the protobuf package); ``bpe`` merges
by score as SentencePiece does; ``encoding`` puts them behind the shared ``PieceEncoding``
protocol; ``_reference`` holds the slow BPE reference (tests only).
"""
