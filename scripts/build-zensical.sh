#!/usr/bin/env bash
# Informational: build the site with Zensical, Material for MkDocs' successor
# (Material's end of life is 5 May 2027), to see what of the site survives without
# MkDocs 1. `make build-zensical` runs precompute first, then this. What it showed
# last time, and the plan: CONTRIBUTING.md, "Zensical".
#   VENV (default .venv): the project's venv. ZVENV (default .venv-zensical): the
#   current Zensical release, in a venv of its own made from the same Python, that
#   sees VENV's packages (torch, llmlab, markdown-exec) after its own through a .pth
#   file: one small wheel to install, not a second torch.
# Zensical runs no hooks and has no static-i18n (it ignores the plugin): one build per
# language (llmlab.build.languages), the blocks run through markdown-exec alone, with
# what hooks/llmlab_build.py would have set in the environment; the site goes to
# site-zensical/. The hook's HTML transforms and the notebooks' downloads then follow
# (python -m llmlab.build.html, llmlab.build.notebooks.write_downloads).
# Never `zensical build --clean`: it deletes the whole .cache/ folder, the
# experiment cache .cache/llmlab with it.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${VENV:-.venv}
zvenv=${ZVENV:-.venv-zensical}
say() { printf 'build-zensical: %s\n' "$*"; }

if [ ! -x "$zvenv/bin/python" ]; then
  say "creating $zvenv"
  "$venv/bin/python" -m venv "$zvenv"
fi
say "installing the current Zensical release into $zvenv"
"$zvenv/bin/python" -m pip install -q --disable-pip-version-check --upgrade zensical
purelib=$("$zvenv/bin/python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')
"$venv/bin/python" - "$purelib" <<'EOF'
import sys, sysconfig
from pathlib import Path
own = sysconfig.get_path("purelib")
Path(sys.argv[1], "llmlab-venv.pth").write_text(f"import site; site.addsitedir({own!r})\n")
EOF
say "zensical $("$zvenv/bin/zensical" --version), markdown-exec" \
    "$("$zvenv/bin/python" -c 'from importlib.metadata import version as v; print(v("markdown-exec"))')"

# One build per language, as static-i18n lays the site out (Zensical has no i18n): each
# config is mkdocs.yml with that language's folder, nav titles, interface and language
# selector, and the folder the snippets include from (llmlab.build.languages), written
# beside mkdocs.yml (not INHERIT: CONTRIBUTING.md), into site-zensical/ (site/ is MkDocs').
root=$PWD
site_url=${SITE_URL:-http://127.0.0.1:8000/}
cache=$(cd "${LLMLAB_CACHE_DIR:-.cache/llmlab}" && pwd)
trap 'rm -f "$root"/.zensical-*.yml' EXIT
# What the hook sets for every block (on_config, on_pre_build); LLMLAB_LANG, which it
# sets per page, is each build's own.
export LLMLAB_OUTPUT=markdown LLMLAB_CACHE_MISS=error LLMLAB_CACHE_DIR=$cache NO_COLOR=1
rm -rf site-zensical
status=0
for lang in $("$venv/bin/python" -c 'from llmlab.report import LANGUAGES; print(*LANGUAGES)'); do
  config=$root/.zensical-$lang.yml
  # The notebook stubs and the home page include (pymdownx.snippets) the Markdown
  # precompute wrote under $cache/site: the config names it as snippets' base_path.
  "$venv/bin/python" -c 'import sys; from llmlab.build.languages import language_config
print(language_config(*sys.argv[1:]), end="")' \
    "$root" "$lang" "$site_url" site-zensical "$cache/site" > "$config"
  say "building the $lang pages with Zensical into site-zensical/"
  start=$SECONDS
  code=0
  LLMLAB_LANG=$lang "$zvenv/bin/zensical" build -f "$config" || code=$?
  say "zensical build ($lang) exited with $code after $((SECONDS - start)) s"
  [ "$code" = 0 ] || status=$code
done

# What the hook does after the pages, as passes over what Zensical wrote (informational,
# like the rest): the HTML transforms (MathML, Chinese line breaks, figure files, slim
# code blocks, language links) and the notebooks' downloads next to their pages.
if [ -d site-zensical ]; then
  "$venv/bin/python" -m llmlab.build.html site-zensical --site-url "$site_url" ||
    say "python -m llmlab.build.html failed (exit $?)"
  "$venv/bin/python" -c 'import sys; from llmlab.build.notebooks import write_downloads
print(f"build-zensical: {write_downloads(*sys.argv[1:])} notebook downloads written")' \
    site-zensical "$cache" "$site_url" || say "write_downloads failed (exit $?)"
fi

# A few lines on what came out, for the CI log.
"$venv/bin/python" - <<'EOF' || true
import json, re
from pathlib import Path
site = Path("site-zensical")
if not site.is_dir():
    raise SystemExit("build-zensical: no site-zensical/ was written")
from llmlab.build.languages import language_prefix
from llmlab.report import LANGUAGES
for lang in LANGUAGES:
    folder = site / language_prefix(lang)
    pages = sorted(p for p in folder.glob("**/index.html")
                   if lang != LANGUAGES[0] or not p.relative_to(folder).parts[0] in LANGUAGES)
    downloads = sorted(p.name for p in folder.glob("notebooks/**/*") if p.suffix in (".ipynb", ".py"))
    html = "".join(p.read_text("utf-8") for p in pages)
    tex = html.count('class="arithmatex"')
    langs = sorted(set(re.findall(r'<html lang="([^"]+)"', html)))
    print(f"build-zensical: {lang} ({folder.relative_to(site)}/): {len(pages)} pages "
          f"(<html lang> {', '.join(langs)}), {html.count('<table')} tables, "
          f"{html.count('<math')} MathML formulas, {tex} left as TeX, "
          f"{len(downloads)} notebook downloads")
print(f"build-zensical: site root index.html: {(site / 'index.html').is_file()}; "
      f"search indexes: {', '.join(str(p.relative_to(site)) for p in site.glob('**/search*.json')) or 'none'}")
# Against MkDocs' build, where there is one (make build): each page's article text.
if Path("site").is_dir():
    from bs4 import BeautifulSoup

    def article(path):
        node = BeautifulSoup(path.read_text("utf-8"), "html.parser").select_one("article")
        return " ".join(node.get_text(" ").split()) if node else None

    pages = sorted(Path("site").glob("**/index.html"))
    differ = [str(p.relative_to("site")) for p in pages
              if article(p) != (article(site / p.relative_to("site"))
                                if (site / p.relative_to("site")).is_file() else "")]
    print(f"build-zensical: article text as in site/ (MkDocs): {len(pages) - len(differ)} of "
          f"{len(pages)} pages{'; not: ' + ', '.join(differ) if differ else ''}")
EOF
exit "$status"
