#!/usr/bin/env bash
# What the site build and the browser tests need from the system: Chromium (the browser
# tests drive Debian's; Playwright must not download its own), a CJK font (Chinese figure
# labels) and, where it can, a math font (MathML in screenshots). Installs what is missing when
# we are root on Debian; otherwise says what to install.
set -euo pipefail
need=()
if ! { [ -n "${LLMLAB_CHROMIUM:-}" ] && [ -x "${LLMLAB_CHROMIUM}" ]; } \
    && ! command -v chromium >/dev/null 2>&1; then
  need+=(chromium)
fi
if ! fc-list 2>/dev/null | grep -qi "Noto Sans CJK"; then
  need+=(fonts-noto-cjk)
fi
# a math font only makes screenshots nicer: installed when we can, never required
if [ "$(id -u)" = "0" ] && ! fc-list 2>/dev/null | grep -qi "TeX Gyre Termes Math"; then
  need+=(fonts-texgyre-math)
fi
[ ${#need[@]} -eq 0 ] && exit 0
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${need[@]}" >/dev/null
  exit 0
fi
echo "Missing: ${need[*]} (Debian: sudo apt-get install ${need[*]});" >&2
echo "for the browser, LLMLAB_CHROMIUM may instead point at a Chromium or Chrome binary." >&2
exit 1
