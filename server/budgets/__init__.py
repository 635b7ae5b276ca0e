"""Token budgets as code, pure (no LSP): the budget file and its rules, Markdown sections,
verdicts and baselines. Both ``livetok check`` (:mod:`livetok.server.cli.check`) and the
language server (:mod:`livetok.server.lsp.budget_watch`) use it (``docs/budgets.md``)."""
