"""The ``livetok`` command: the entry point (:mod:`.main`) and one module per subcommand."""
