"""livetok's language server and command line (pygls + lsprotocol on top of the core)."""
