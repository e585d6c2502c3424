"""Reading the pages' Markdown: front matter, fenced code blocks, headings, figures,
tables, asides.

Shared by the quality-gate tests (snippets, i18n agreement, prose numbers, links).
A small line-based reader, enough for this site's Markdown: fences may be indented
(inside admonitions and content tabs) and carry markdown-exec options
(``exec="on" source="block"``) or attr_list classes (``{.partial}``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from llmlab.build.course import split_front_matter

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
EXAMPLES = ROOT / "examples"
LANGS = ("zh", "en")

_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^`\n]*)$")
_ATTR = re.compile(r'([\w-]+)="([^"]*)"')


@dataclass
class Block:
    """One fenced code block of a page."""

    page: str  # e.g. "zh/lectures/attention-from-scratch.md"
    line: int  # 1-based line of the opening fence
    lang: str  # "python", "bash", "" ...
    attrs: dict[str, str]
    classes: list[str]
    code: str
    indent: str = ""

    @property
    def executed(self) -> bool:
        return self.attrs.get("exec") in ("on", "true", "1")

    @property
    def partial(self) -> bool:
        """Marked ```` ```python {.partial} ````: a fragment shown for reading only."""
        return "partial" in self.classes

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def _parse_info(info: str) -> tuple[str, dict[str, str], list[str]]:
    info = info.strip()
    classes: list[str] = []
    lang = ""
    braces = re.search(r"\{([^}]*)\}", info)
    if braces:
        classes = re.findall(r"\.([\w-]+)", braces.group(1))
        info = (info[: braces.start()] + info[braces.end():]).strip()
    if info and not _ATTR.match(info):
        lang = info.split()[0]
    if not lang and classes:
        lang, classes = classes[0], classes[1:]  # ```{.python .partial}
    return lang, dict(_ATTR.findall(info)), classes


def fenced_blocks(text: str, page: str = "") -> list[Block]:
    """Every fenced code block of ``text``, in order (nested fences are not needed)."""
    blocks: list[Block] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence = m.group("indent"), m.group("fence")
        lang, attrs, classes = _parse_info(m.group("info"))
        body: list[str] = []
        j = i + 1
        closing = re.compile(rf"^[ \t]*{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$")
        while j < len(lines) and not closing.match(lines[j]):
            line = lines[j]
            body.append(line[len(indent):] if line.startswith(indent) else line.lstrip())
            j += 1
        blocks.append(Block(page, i + 1, lang, attrs, classes, "\n".join(body) + "\n",
                            indent))
        i = j + 1
    return blocks


def python_blocks(text: str, page: str = "") -> list[Block]:
    return [b for b in fenced_blocks(text, page) if b.lang in ("python", "py")]


def page_paths(lang: str) -> list[str]:
    """Relative paths (``lectures/x.md``) of the Markdown pages of one language."""
    base = DOCS / lang
    return sorted(p.relative_to(base).as_posix() for p in base.rglob("*.md")
                  if "notebooks" not in p.relative_to(base).parts)


def read_page(lang: str, rel: str) -> str:
    """The page's Markdown, front matter left out (as MkDocs renders it)."""
    text = (DOCS / lang / rel).read_text(encoding="utf-8")
    return split_front_matter(text, f"docs/{lang}/{rel}")[1]


def front_matter(lang: str, rel: str) -> dict:
    """The page's YAML front matter (``{}`` if it has none): MkDocs' ``page.meta``."""
    text = (DOCS / lang / rel).read_text(encoding="utf-8")
    return split_front_matter(text, f"docs/{lang}/{rel}")[0]


def lecture_pages() -> list[str]:
    return [p for p in page_paths("zh") if p.startswith("lectures/")]


def strip_code(text: str) -> str:
    """The Markdown with every fenced block removed (line count kept)."""
    lines = text.splitlines()
    for block in fenced_blocks(text):
        n = block.code.count("\n")
        for k in range(block.line - 1, min(block.line + n + 1, len(lines))):
            lines[k] = ""
    return "\n".join(lines)


@dataclass
class Structure:
    """What both languages of a page must have the same number of."""

    headings: dict[int, int] = field(default_factory=dict)  # level -> count
    tables: int = 0
    admonitions: dict[str, int] = field(default_factory=dict)  # "!!! note" -> count
    tabs: int = 0
    images: int = 0  # Markdown images and <img> written in the page
    fences: list[str] = field(default_factory=list)  # language and options per block


def structure(text: str) -> Structure:
    s = Structure()
    for block in fenced_blocks(text):
        opts = " ".join(f"{k}={v}" for k, v in sorted(block.attrs.items()))
        s.fences.append(f"{block.lang} {opts} {' '.join(block.classes)}".strip())
    prose = strip_code(text)
    in_table = False
    for line in prose.splitlines():
        m = re.match(r"^(#{1,6})\s+\S", line)
        if m:
            level = len(m.group(1))
            s.headings[level] = s.headings.get(level, 0) + 1
        m = re.match(r"^\s*(!!!|\?\?\?\+?)\s+([\w-]+)", line)
        if m:
            key = f"{m.group(1)} {m.group(2)}"
            s.admonitions[key] = s.admonitions.get(key, 0) + 1
        if re.match(r"^\s*===\s+\"", line):
            s.tabs += 1
        is_row = bool(re.match(r"^\s*\|.*\|\s*$", line))
        if is_row and not in_table:
            s.tables += 1
        in_table = is_row
        s.images += len(re.findall(r"!\[[^\]]*\]\(|<img\b", line))
    return s


def markdown_links(text: str) -> list[tuple[str, str]]:
    """``(label, target)`` of each inline Markdown link outside code."""
    prose = strip_code(text)
    prose = re.sub(r"`[^`\n]*`", "", prose)
    prose = re.sub(r"\$[^$\n]*\$", "", prose)  # inline math: [0, 1) is no link
    return re.findall(r"(?<!!)\[([^\]\n]+)\]\(([^)\s]+)\)", prose)


def notebook_code_cells(path: Path) -> list[str]:
    """The code cells of a jupytext percent notebook, in order."""
    import jupytext

    notebook = jupytext.read(path)
    return [cell.source for cell in notebook.cells
            if cell.cell_type == "code" and cell.source.strip()]
