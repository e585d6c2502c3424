#!/usr/bin/env bash
# What the browser tests need from the system: a Chromium (Debian's; Playwright must not
# download its own; LLMLAB_CHROMIUM may name another Chromium or Chrome binary, on any
# system) and, where it can, a math font (MathML in screenshots). The CJK font the pages
# and figures need is ensure-fonts.sh's. Installs what is missing when we are root on
# Debian; otherwise says what to install.
set -euo pipefail
if [ -n "${LLMLAB_CHROMIUM:-}" ]; then
  [ -x "$LLMLAB_CHROMIUM" ] && exit 0
  echo "LLMLAB_CHROMIUM=$LLMLAB_CHROMIUM is not an executable file" >&2
  exit 1
fi
need=()
command -v chromium >/dev/null 2>&1 || need+=(chromium)
# a math font only makes screenshots nicer: installed when we can, never required
if [ "$(id -u)" = "0" ] && command -v fc-list >/dev/null 2>&1 \
    && ! fc-list 2>/dev/null | grep -qi "TeX Gyre Termes Math"; then
  need+=(fonts-texgyre-math)
fi
[ ${#need[@]} -eq 0 ] && exit 0
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "browser: installing ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${need[@]}" >/dev/null
  exit 0
fi
if [[ " ${need[*]} " == *" chromium "* ]]; then
  echo "browser: no chromium; install it (Debian: sudo apt-get install chromium) or point" \
       "LLMLAB_CHROMIUM at a Chromium or Chrome binary" >&2
  exit 1
fi
