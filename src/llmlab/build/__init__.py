"""The course's build: what turns ``llmlab`` and the pages into the site.

The package imports the report layer, never the reverse. Its modules:

* :mod:`~llmlab.build.cache`: the content-addressed result cache and ``@cached``
  (the one piece experiments use);
* :mod:`~llmlab.build.manifest`: the experiment calls read from the pages' blocks;
* :mod:`~llmlab.build.scheduler`: the worker processes that compute them;
* :mod:`~llmlab.build.notebooks`: the example notebooks, executed and split by language;
* :mod:`~llmlab.build.precompute`: the program (``python -m llmlab.build.precompute``);
* :mod:`~llmlab.build.blocks`: the pages' executed blocks, each run once (markdown-exec's
  formatter, for the site's build hook);
* :mod:`~llmlab.build.html`: the transforms of the finished HTML (the hook's, and
  ``python -m llmlab.build.html`` over a built site);
* :mod:`~llmlab.build.course`: the lecture list, from the navigation and the pages;
* :mod:`~llmlab.build.languages`: one config per language, for a builder without
  static-i18n (``scripts/build-zensical.sh``);
* :mod:`~llmlab.build.provenance`: what built the site (commit, versions, machine).

Nothing is imported here, so that ``from llmlab.build.cache import cached`` loads
the cache alone.
"""
