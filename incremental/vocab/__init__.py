"""The vocabularies: finding, reading, caching and naming the files an encoding is built from.

The engine (``document``, ``tokenseq``, ``glue``, ``pairmerge``, ``piece_encoding``, ``stream``)
imports nothing from here; the families and the package face do.
"""
