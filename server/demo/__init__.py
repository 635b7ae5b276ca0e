"""The web demo's site: the HTTP side (:mod:`.site`) and the built page in ``static/``
(``livetok demo``: :mod:`livetok.server.cli.demo`)."""
