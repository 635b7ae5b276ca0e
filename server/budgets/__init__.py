"""Token budgets as code, pure (no LSP): the budget file and its rules, Markdown sections,
verdicts and baselines. Both ``livetok check`` (:mod:`livetok.server.cli.check`) and the
language server (:mod:`livetok.server.lsp.budget_watch`) use it (``docs/budgets.md``).

Import each name from the module that defines it (this package re-exports nothing):

* :mod:`.config`: the budget file's schema and parsing (``parse_config``, ``BudgetConfig``,
  ``BudgetRule``, ``Budget``, ``ConfigError``/``ConfigProblem``);
* :mod:`.discovery`: budget files on disk (``load_config``, ``ConfigFinder``, ``CONFIG_NAMES``);
* :mod:`.frontmatter`: the budget a Markdown file's front matter sets;
* :mod:`.markdown`: Markdown sections (the editor's lenses and section budgets);
* :mod:`.verdicts`: counting and verdicts (``check_text``, ``total_verdicts``, ``Verdict``,
  retrieval chunks);
* :mod:`.baseline`: the ratchet's file (``load_baseline``, ``write_baseline``);
* :mod:`.money`: prices and costs, exactly;
* :mod:`.limits`: the bounds on what a repository's budget files make livetok do.
"""
