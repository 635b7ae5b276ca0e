"""SentencePiece BPE models (Mistral v0.1 and other ``.model`` files).

``model_proto`` reads the model file (a protobuf, without the protobuf package); ``encoding``
merges by score as SentencePiece does, behind the shared ``PieceEncoding`` protocol.
"""
