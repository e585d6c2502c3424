"""Seeded experiments: ``run_<name>(..., seed=0) -> <Name>Result``.

Each is CPU-friendly and deterministic, decorated with
:func:`llmlab.build.cache.cached`, and returns a dataclass that can render itself
(``to_markdown()``, ``to_svg()``). Nothing here prints.
"""
