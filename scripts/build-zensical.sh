#!/usr/bin/env bash
# Informational: build the site with Zensical, Material for MkDocs' successor
# (Material's end of life is 5 May 2027), to see what of the site survives without
# MkDocs 1. `make build-zensical` runs precompute first, then this. What it showed
# last time, and the plan: CONTRIBUTING.md, "Zensical".
#   VENV (default .venv): the project's venv. ZVENV (default .venv-zensical): the
#   current Zensical release, in a venv of its own made from the same Python, that
#   sees VENV's packages (torch, llmlab, markdown-exec) after its own through a .pth
#   file: one small wheel to install, not a second torch.
# Zensical runs no hooks and has no static-i18n (it ignores the plugin): the blocks
# run through markdown-exec alone, with what hooks/llmlab_build.py would have set in
# the environment; the site goes to site-zensical/. The hook's HTML transforms then
# run over it (python -m llmlab.build.html).
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

# The site's own config, built into site-zensical/ (site/ is MkDocs').
root=$PWD
config=$root/.zensical.yml
trap 'rm -f "$config"' EXIT
printf 'INHERIT: mkdocs.yml\nsite_dir: site-zensical\n' > "$config"
cache=$(cd "${LLMLAB_CACHE_DIR:-.cache/llmlab}" && pwd)
# What the hook sets for every block (on_config, on_pre_build); LLMLAB_LANG it sets
# per page, which nothing here can: blocks print in llmlab's default language.
export LLMLAB_OUTPUT=markdown LLMLAB_CACHE_MISS=error LLMLAB_CACHE_DIR=$cache NO_COLOR=1
# The notebook stubs include (pymdownx.snippets) the Markdown precompute wrote under
# $cache/site; the hook adds that folder to snippets' base_path, whose default is the
# working folder: Zensical builds from there.
say "building the site with Zensical into site-zensical/"
start=$SECONDS
status=0
(cd "$cache/site" && "$root/$zvenv/bin/zensical" build -f "$config") || status=$?
say "zensical build exited with $status after $((SECONDS - start)) s"

# The hook's HTML transforms (MathML, Chinese line breaks, figure files, slim code
# blocks), as a post-build pass over what Zensical wrote; informational, like the rest.
if [ -d site-zensical ]; then
  "$venv/bin/python" -m llmlab.build.html site-zensical ||
    say "python -m llmlab.build.html failed (exit $?)"
fi

# A few lines on what came out, for the CI log.
"$venv/bin/python" - <<'EOF' || true
import json, re
from pathlib import Path
site = Path("site-zensical")
if not site.is_dir():
    raise SystemExit("build-zensical: no site-zensical/ was written")
for lang in ("zh", "en"):
    pages = sorted(site.glob(f"{lang}/**/index.html"))
    downloads = sorted(p.name for p in site.glob(f"{lang}/notebooks/**/*") if p.suffix in (".ipynb", ".py"))
    html = "".join(p.read_text("utf-8") for p in pages)
    tex = html.count('class="arithmatex"')
    print(f"build-zensical: {lang}/: {len(pages)} pages, {html.count('<table')} tables, "
          f"{html.count('<math')} MathML formulas, {tex} left as TeX, "
          f"{len(downloads)} notebook downloads")
print(f"build-zensical: site root index.html: {(site / 'index.html').is_file()}; "
      f"search index: {', '.join(str(p.relative_to(site)) for p in site.glob('search*')) or 'none'}")
EOF
exit "$status"
