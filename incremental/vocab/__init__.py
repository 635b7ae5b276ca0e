"""The vocabularies: finding (:mod:`.find`), reading (:mod:`.readers`) and caching
(:mod:`.parse_store`) the files an encoding is built from, offline and bounded.

The families import this room to read their files; the engine (``document``, ``tokenseq``,
``glue``, ``pairmerge``, ``piece_encoding``, ``stream``) imports nothing from here, and which
name means which file is :mod:`livetok.incremental.names`'s business.
"""
