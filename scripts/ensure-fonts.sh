#!/usr/bin/env bash
# A CJK font for the Chinese figure labels: any of llmlab.report.CJK_FONTS that
# Matplotlib can use (Noto Sans CJK, Source Han Sans, PingFang SC, Microsoft YaHei...).
# Installed when we are root on Debian/Ubuntu; otherwise named, and we stop.
# Matplotlib's font list, cached before the font came, is refreshed.
set -euo pipefail
cd "$(dirname "$0")/.."
py=${VENV:-.venv}/bin/python
check() {
  "$py" - <<'PY'
import os, sys
import matplotlib
from matplotlib import font_manager
from llmlab.report import cjk_font
font = cjk_font()  # adds fonts installed since Matplotlib cached its list
if font is None:
    sys.exit(1)
# save the refreshed list, so that later processes find the font at once
name = f"fontlist-v{font_manager.FontManager.__version__}.json"
font_manager.json_dump(font_manager.fontManager, os.path.join(matplotlib.get_cachedir(), name))
print(f"fonts: Chinese figure labels use {font}")
PY
}
check && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "fonts: installing fonts-noto-cjk (Chinese figure labels)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq fonts-noto-cjk >/dev/null
  check && exit 0
fi
echo "fonts: no CJK font for the Chinese figure labels; install one, e.g." \
     "Debian/Ubuntu: sudo apt-get install fonts-noto-cjk; Fedora: sudo dnf install" \
     "google-noto-sans-cjk-fonts; macOS and Windows have PingFang SC / Microsoft YaHei" >&2
exit 1
