"""The LSP session: the server and its lifecycle (:mod:`.session`), the handler registry
(:mod:`.handlers`), request handlers (:mod:`.requests`) and what they show (:mod:`.views`),
open documents and positions (:mod:`.documents`, :mod:`.lineindex`, :mod:`.positions`), the
settings (:mod:`.settings`), and the wire: framing, transport, the stdio front, big texts,
background work (``docs/architecture.md``)."""
