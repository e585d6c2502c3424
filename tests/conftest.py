"""Shared fixtures: one full site build per test session, a local HTTP server."""

from __future__ import annotations

import dataclasses
import functools
import http.server
import os
import re
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SUBPATH = "/llm-lab/"  # the test build is published under a sub-path, like GitHub Pages


def _load(folder: str, name: str):
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"{folder}_{name}",
                                                  ROOT / folder / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_benchmark(name: str):
    """``benchmarks/<name>.py`` as a module (the scripts are not a package)."""
    return _load("benchmarks", name)


def run_script(name: str, argv: list[str], monkeypatch: pytest.MonkeyPatch,
               **replace: object) -> None:
    """Run ``scripts/<name>.py``'s ``main()`` with ``argv`` after it, its module's
    names in ``replace`` (experiments, say) replaced for the test."""
    script = _load("scripts", name)
    for attr, value in replace.items():
        monkeypatch.setattr(script, attr, value)
    monkeypatch.setattr(sys, "argv", [f"{name}.py", *argv])
    script.main()


def build_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", NO_MKDOCS_2_WARNING="1")
    env.update(extra)
    return env


def run_mkdocs_build(
    config: Path, site_dir: Path, env: dict[str, str], timeout: float = 1800
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config),
         "-d", str(site_dir)],
        cwd=config.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@dataclass
class BuiltSite:
    site_dir: Path
    seconds: float
    log: str
    port: int | None = None
    cache_dir: Path | None = None  # the experiment cache this build filled
    subpath: str = SUBPATH  # where the site is served
    cold: bool = True  # built here with an empty cache (not LLMLAB_PREBUILT_SITE)
    site_url: str = ""  # the address it was built for, when not where it is served

    def html(self, rel: str) -> str:
        return (self.site_dir / rel).read_text(encoding="utf-8")


@pytest.fixture(scope="session")
def built_site(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> BuiltSite:
    """A cold, strict build of the real site (empty experiment cache), under a sub-path.

    Built once per test session: under pytest-xdist (``make test`` runs two
    processes), the first process that needs it builds it, holding a lock, and the
    others read what it recorded (pytest-xdist's documented recipe).

    With ``LLMLAB_PREBUILT_SITE`` (and ``SITE_URL``, the address it was built for),
    the tests check that build instead (the Pages workflow builds the site once);
    its experiment cache is ``LLMLAB_CACHE_DIR`` or the checkout's ``.cache/llmlab``.
    """
    if worker_id == "master" or os.environ.get("LLMLAB_PREBUILT_SITE"):
        return _build_site(tmp_path_factory)
    import json

    from filelock import FileLock

    shared = tmp_path_factory.getbasetemp().parent  # this session's, every worker's
    record = shared / "built-site.json"
    with FileLock(str(shared / "built-site.lock")):
        if record.is_file():
            fields = json.loads(record.read_text(encoding="utf-8"))
            return BuiltSite(**{k: Path(v) if k in ("site_dir", "cache_dir") else v
                                for k, v in fields.items()})
        site = _build_site(tmp_path_factory)
        fields = {k: str(v) if isinstance(v, Path) else v
                  for k, v in dataclasses.asdict(site).items()}
        record.write_text(json.dumps(fields), encoding="utf-8")
        return site


def _build_site(tmp_path_factory: pytest.TempPathFactory) -> BuiltSite:
    prebuilt = os.environ.get("LLMLAB_PREBUILT_SITE")
    if prebuilt:
        from urllib.parse import urlsplit

        cache = Path(os.environ.get("LLMLAB_CACHE_DIR", ROOT / ".cache" / "llmlab"))
        site_url = os.environ.get("SITE_URL", "http://127.0.0.1:8000/")  # mkdocs.yml's
        subpath = urlsplit(site_url).path or "/"
        return BuiltSite(site_dir=Path(prebuilt).resolve(), seconds=0.0, log="",
                         port=_free_port(), cache_dir=cache.resolve(),
                         subpath=subpath.rstrip("/") + "/", cold=False,
                         site_url=site_url.rstrip("/") + "/")
    tmp = tmp_path_factory.mktemp("site-build")
    site_dir = tmp / "site"
    port = _free_port()
    env = build_env(
        LLMLAB_CACHE_DIR=str(tmp / "cache"),
        SITE_URL=f"http://127.0.0.1:{port}{SUBPATH}",
    )
    start = time.perf_counter()
    proc = run_mkdocs_build(ROOT / "mkdocs.yml", site_dir, env)
    seconds = time.perf_counter() - start
    log = proc.stdout + proc.stderr
    if proc.returncode != 0:
        pytest.fail(f"mkdocs build --strict failed ({proc.returncode}):\n{log[-6000:]}")
    return BuiltSite(site_dir=site_dir, seconds=seconds, log=log, port=port,
                     cache_dir=tmp / "cache")


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class _SubpathHandler(http.server.SimpleHTTPRequestHandler):
    """Serves the site folder at its sub-path, as a Pages host would; 404 elsewhere."""

    subpath = SUBPATH

    def translate_path(self, path: str) -> str:
        if not path.startswith(self.subpath):
            return str(Path(self.directory) / "__outside_subpath__")
        return super().translate_path("/" + path[len(self.subpath):])

    def log_message(self, *args: object) -> None:  # keep test output clean
        pass


@pytest.fixture(scope="session")
def site_server(built_site: BuiltSite):
    """The built site over HTTP on 127.0.0.1, at the port its site_url names."""
    handler = type("Handler", (_SubpathHandler,), {"subpath": built_site.subpath})
    handler = functools.partial(handler, directory=str(built_site.site_dir))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", built_site.port), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{built_site.port}{built_site.subpath}"
    server.shutdown()
    server.server_close()


# ---------------------------------------------------------------------------
# A minimal site that uses the project's own configuration and hooks, for the
# tests that must watch a build fail (or a server re-render) quickly.
# ---------------------------------------------------------------------------
def write_mini_site(root: Path, pages: dict[str, str], notebooks: dict[str, str] | None = None,
                    watch: list[str] | None = None) -> Path:
    """Write ``pages`` (paths under docs/, e.g. ``zh/index.md``), notebooks and a config.

    The config is the project's mkdocs.yml with its docs_dir and nav pointed at this
    folder, its hook and theme overrides at the project's, so every plugin and hook
    is the real one.
    Each notebook gets its
    stub page in both languages, as the real site's do.
    """
    docs = root / "docs"
    for rel, text in pages.items():
        path = docs / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    (root / "examples").mkdir(exist_ok=True)
    nav = ["  - index.md"]
    for name, text in (notebooks or {}).items():
        (root / "examples" / name).write_text(text, encoding="utf-8")
        stem = Path(name).stem
        nav.append(f"  - notebooks/{stem}.md")
        for lang in ("zh", "en"):
            stub = docs / lang / "notebooks" / f"{stem}.md"
            stub.parent.mkdir(parents=True, exist_ok=True)
            stub.write_text(f"---\nsummary: the notebook {stem} ({lang})\n---\n\n"
                            f'--8<-- "{lang}/notebooks/{stem}.md"\n', encoding="utf-8")
    (docs / "assets").symlink_to(ROOT / "docs" / "assets", target_is_directory=True)
    text = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    text = text.replace("docs_dir: docs", f"docs_dir: {docs}")
    text = text.replace("custom_dir: overrides", f"custom_dir: {ROOT / 'overrides'}")
    text = text.replace("  - hooks/llmlab_build.py", f"  - {ROOT / 'hooks' / 'llmlab_build.py'}")
    text = re.sub(r"\nwatch:\n(  - .*\n)+", "\nwatch:\n" + "".join(
        f"  - {w}\n" for w in (watch or [str(docs)])), text)
    text = re.sub(r"\nnav:\n(?:  .*\n?)*$", "\nnav:\n" + "\n".join(nav) + "\n", text)
    config = root / "mkdocs.yml"
    config.write_text(text, encoding="utf-8")
    return config


@pytest.fixture
def build_hook(monkeypatch: pytest.MonkeyPatch):
    """hooks/llmlab_build.py as a module, for tests of its helpers."""
    import importlib.util

    monkeypatch.setenv("LLMLAB_CACHE_DIR", "unused")  # it sets a default on import
    spec = importlib.util.spec_from_file_location("llmlab_build", ROOT / "hooks" / "llmlab_build.py")
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    return hook


def search_sections(html: str) -> list[tuple[str, str, str]]:
    """What Material's search indexer reads of ``html``: each section's id, title, text."""
    from material.plugins.search.plugin import Parser

    parser = Parser()
    parser.feed(html)
    parser.close()
    return [(section.id, "".join(section.title), "".join(section.text))
            for section in parser.data]
