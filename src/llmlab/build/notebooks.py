"""The example notebooks: executed once, in IPython, then split by language.

A notebook is a jupytext percent file in ``examples/``; :func:`run_notebooks`
executes it in a fresh process and writes, per language, the notebook page's
Markdown and its ``.ipynb`` and ``.py`` downloads (:func:`split_notebook`,
:func:`notebook_markdown`).
"""

from __future__ import annotations

import copy
import hashlib
import json
import multiprocessing
import os
import re
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Any
from llmlab.build import cache
from llmlab.report import LANGUAGES, img_tag

__all__ = ["notebook_key", "notebook_markdown", "notebooks", "output_markdown",
           "process_context", "run_notebook", "run_notebooks", "split_notebook",
           "write_downloads"]


def notebooks(examples: str | Path) -> list[Path]:
    """The jupytext notebooks in ``examples`` (``.py`` files with a ``jupyter:`` header)."""
    return [path for path in sorted(Path(examples).glob("*.py"))
            if path.read_text(encoding="utf-8").startswith("# ---\n# jupyter:")]


# --------------------------------------------------------------------------
# notebooks: executed once, shown per language
# --------------------------------------------------------------------------
def split_notebook(nb: Any, lang: str) -> Any:
    """The notebook for one language: markdown cells marked ``lang`` (or unmarked),
    and every :class:`llmlab.report.Localized` output in ``lang`` (its metadata
    holds every language's). Cell ids follow the cells' order, so the same
    notebook gives the same file whichever run executed it.
    """
    out = copy.deepcopy(nb)
    out.cells = [c for c in out.cells if c.metadata.get("lang", lang) == lang]
    for i, cell in enumerate(out.cells):
        cell.metadata.pop("lang", None)
        cell.id = f"cell-{i + 1}"
        for output in cell.get("outputs", []):
            if output.output_type != "display_data":
                continue
            if "llmlab" in output.metadata:
                _localize_output(output, lang)
            elif "text/markdown" in output.data and _OBJECT_REPR.fullmatch(
                    output.data.get("text/plain", "")):  # e.g. IPython's Markdown
                output.data["text/plain"] = output.data["text/markdown"]
    return out


# what IPython shows as text for an object without a text repr of its own
_OBJECT_REPR = re.compile(r"<[\w.]+ object(?: at 0x[0-9a-f]+)?>")


def _localize_output(output: Any, lang: str) -> None:
    """A Localized output in ``lang`` only: its data, text and alt in that language."""
    meta = output.metadata
    own = meta.pop("llmlab")[lang]
    if "image/svg+xml" in output.data:  # a figure: its alt text in every language too
        meta["alt"] = meta["alt"][lang]
        output.data["image/svg+xml"] = own
        output.data["text/plain"] = meta["alt"]
    else:
        output.data["text/markdown"] = output.data["text/plain"] = own


def output_markdown(output: Any) -> str:
    """One output of a notebook already split for a language (:func:`split_notebook`)."""
    if output.output_type == "stream":
        return f"```text\n{output.text.rstrip()}\n```"
    data, meta = output.get("data", {}), output.get("metadata", {})
    if "image/svg+xml" in data:

        return img_tag(data["image/svg+xml"], str(meta.get("alt", "")),
                       digest=meta.get("digest") or None)
    if "text/markdown" in data:
        return data["text/markdown"]
    if "text/html" in data:
        return data["text/html"]
    return f"```text\n{data.get('text/plain', '').rstrip()}\n```"


def notebook_markdown(nb: Any, name: str, lang: str) -> str:
    """The site page of an executed notebook ``name`` in ``lang``."""
    label = {"zh": ("下载：", "运行："), "en": ("Download: ", "Run it: ")}[lang]
    parts = []
    for i, cell in enumerate(split_notebook(nb, lang).cells):
        if cell.cell_type == "markdown":
            parts.append(cell.source)
        elif cell.cell_type == "code":
            parts.append(f"```python\n{cell.source}\n```")
            parts += [output_markdown(o) for o in cell.get("outputs", [])]
        if i == 0:  # under the title: the downloads, in this language
            parts.append(
                f'{label[0]}<a href="{name}.ipynb" download><code>{name}.ipynb</code></a>'
                f' · <a href="{name}.py" download><code>{name}.py</code></a> · '
                f"{label[1]}`python {name}.py`")
    return "\n\n".join(parts) + "\n"


def _execute(path: str, out: str, source: str) -> None:
    """Run the notebook ``source`` (the text of ``path``, as read when its key was
    made) cell by cell in IPython; write it with its outputs.

    Runs in a process of its own (forked on Linux from this one, with torch,
    IPython and matplotlib imported once), in the notebook's folder, as a kernel
    would. A cell's printed text is shown before what it displays.
    """
    import jupytext
    import nbformat
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output

    os.chdir(Path(path).parent)
    os.environ["LLMLAB_OUTPUT"] = "markdown"  # print(a table): as the pages print it
    nb = jupytext.reads(source, fmt="py:percent")
    shell = InteractiveShell.instance()
    for i, cell in enumerate(c for c in nb.cells if c.cell_type == "code"):
        with capture_output() as captured:
            result = shell.run_cell(cell.source, store_history=False)
        error = result.error_before_exec or result.error_in_exec
        if error is not None:
            raise RuntimeError(f"{Path(path).name}, code cell {i + 1}: "
                               f"{type(error).__name__}: {error}") from error
        cell.outputs = [nbformat.v4.new_output("stream", name=name, text=text)
                        for name, text in (("stdout", captured.stdout),
                                           ("stderr", captured.stderr)) if text]
        cell.outputs += [nbformat.v4.new_output("display_data", data=o.data,
                                                metadata=o.metadata)
                         for o in captured.outputs]
    tmp = Path(f"{out}.{os.getpid()}.tmp")
    tmp.write_text(nbformat.writes(nb), encoding="utf-8")
    tmp.replace(out)

def process_context() -> multiprocessing.context.BaseContext:
    """The way the build starts its processes (its workers, a notebook's run)."""
    # Fork on Linux: the workers start with torch and the experiments imported
    # once, here. macOS and Windows spawn fresh interpreters (fork is unsafe there).
    return multiprocessing.get_context("fork" if sys.platform.startswith("linux") else "spawn")


def notebook_key(source: str) -> str:
    """The cache key of a notebook's run: its text, what it calls, the versions."""
    versions = [metadata.version(p) for p in ("torch", "ipython", "jupytext")]
    return hashlib.sha256(json.dumps([source, cache.snippet_hash(source), versions])
                          .encode()).hexdigest()


def run_notebook(path: str, out: str, source: str) -> float:
    """Execute the notebook ``source`` (read from ``path``) into ``out`` in a fresh
    process; the seconds."""
    start = time.perf_counter()
    proc = process_context().Process(target=_execute, args=(path, out, source))
    proc.start()
    proc.join()
    if proc.exitcode:
        raise RuntimeError(f"notebook {path} failed: see its traceback above")
    return time.perf_counter() - start


def run_notebooks(examples: Path, seconds: dict[str, float]) -> list[dict[str, Any]]:
    """Write each executed notebook's pages and downloads per language.

    ``seconds``: per notebook file name, how long executing it took (this run's).

    Raises:
        ValueError: A notebook's text is not the one executed (it was edited while
            precompute ran): naming the file; nothing is written for it or for
            the notebooks after it.
    """
    import jupytext
    import nbformat

    executed = cache.cache_dir() / "notebooks"
    paths = notebooks(examples)
    report = []
    for path in paths:
        key = notebook_key(path.read_text(encoding="utf-8"))
        if not (executed / f"{key}.ipynb").is_file():
            raise ValueError(f"{path} was changed or added while precompute ran (what "
                             "ran is not this text of it); run precompute again")
        nb = nbformat.read(executed / f"{key}.ipynb", as_version=4)
        for lang in LANGUAGES:
            site = cache.cache_dir() / "site" / lang / "notebooks"
            site.mkdir(parents=True, exist_ok=True)
            own = split_notebook(nb, lang)
            files = {f"{path.stem}.md": notebook_markdown(nb, path.stem, lang),
                     f"{path.stem}.ipynb": nbformat.writes(own),
                     f"{path.stem}.py": jupytext.writes(own, fmt="py:percent")}
            for file, text in files.items():
                if not (site / file).is_file() or (site / file).read_text("utf-8") != text:
                    (site / file).write_text(text, encoding="utf-8")
        report.append({"notebook": path.name, "key": key[:16], "file": f"{key}.ipynb",
                       "seconds": seconds.get(path.name)})
    return report


def write_downloads(site_dir: str | Path, cache_dir: str | Path, site_url: str) -> int:
    """Put each notebook's downloads next to its page in a built site; the files written.

    The ``.ipynb`` and ``.py`` files :func:`run_notebooks` wrote per language under
    ``cache_dir/site/<lang>/notebooks/`` go to ``<prefix>notebooks/<name>/`` in
    ``site_dir`` (:func:`llmlab.build.languages.language_prefix`), with their links to
    the site's pages made full addresses under ``site_url``
    (:func:`llmlab.build.html.download_links`). A language whose ``notebooks/`` the
    site does not have is skipped. The build hook calls it after the pages; so can a
    builder without hooks.
    """
    from llmlab.build.html import download_links
    from llmlab.build.languages import language_prefix
    from llmlab.checks import check_str, check_type

    check_type("site_dir", site_dir, (str, Path), expected="a folder (str or Path)")
    check_type("cache_dir", cache_dir, (str, Path), expected="a folder (str or Path)")
    check_str("site_url", site_url, nonempty=True)
    site, written = Path(site_dir), 0
    for lang in LANGUAGES:
        prefix = language_prefix(lang)
        pages = site / prefix / "notebooks"
        if not pages.is_dir():
            continue
        root = site_url.rstrip("/") + "/" + prefix
        for path in sorted((Path(cache_dir) / "site" / lang / "notebooks").glob("*.*")):
            if path.suffix in (".ipynb", ".py"):
                (pages / path.stem).mkdir(exist_ok=True)
                (pages / path.stem / path.name).write_text(
                    download_links(path.read_text(encoding="utf-8"),
                                   f"notebooks/{path.stem}.md", root), encoding="utf-8")
                written += 1
    return written
