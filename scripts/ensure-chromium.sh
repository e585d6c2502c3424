#!/usr/bin/env bash
# The browser tests drive Debian's Chromium (Playwright must not download its own).
# Installs it (and CJK fonts for readable screenshots) when missing and we are root.
set -euo pipefail
if [ -n "${LLMLAB_CHROMIUM:-}" ] && [ -x "${LLMLAB_CHROMIUM}" ]; then
  exit 0
fi
if command -v chromium >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq chromium fonts-noto-cjk >/dev/null
  command -v chromium >/dev/null
  exit 0
fi
echo "The browser tests need Chromium (Debian: sudo apt-get install chromium fonts-noto-cjk)," >&2
echo "or LLMLAB_CHROMIUM set to a Chromium or Chrome binary." >&2
exit 1
