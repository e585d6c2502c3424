#!/usr/bin/env bash
# Create .venv from the project's pinned files, saying what each step does.
#   PYTHON (default python3) makes the venv; VENV (default .venv) is where.
# A torch already in the venv is kept (a CUDA, ROCm or MPS build the reader chose).
# Otherwise torch comes from PyTorch's CPU index on Linux (PyPI's Linux x86-64 wheel
# is the CUDA build, several GB), falling back to the default index with a note.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
venv=${VENV:-.venv}
cpu_index=https://download.pytorch.org/whl/cpu
say() { printf 'setup: %s\n' "$*"; }

if [ ! -x "$venv/bin/python" ]; then
  say "creating $venv with $("$python" --version 2>&1)"
  "$python" -m venv "$venv"
fi
py="$venv/bin/python"
say "updating pip"
"$py" -m pip install -q --upgrade pip

torch=$(grep -v '^#' requirements/torch.txt | grep -m1 .)
if have=$("$py" -c 'import torch; print(torch.__version__)' 2>/dev/null); then
  say "keeping the torch already in $venv ($have)"
elif [ "$(uname -s)" = Linux ]; then
  say "installing $torch, the CPU build, from $cpu_index (about 200 MB)"
  if ! "$py" -m pip install --retries 1 --timeout 30 -r requirements/torch.txt \
       --index-url "$cpu_index"; then
    say "note: $cpu_index could not be used; installing $torch from the default index" \
        "instead (on Linux x86-64 that is the CUDA build, several GB)"
    "$py" -m pip install -r requirements/torch.txt
  fi
else
  say "installing $torch from the default index"
  "$py" -m pip install -r requirements/torch.txt
fi
say "installing the pinned build and test tools (requirements/lock.txt)"
"$py" -m pip install -q -r requirements/lock.txt
say "installing llmlab from this checkout (editable)"
"$py" -m pip install -q --no-deps -e .
say "done: $("$py" -c 'import torch; print("torch", torch.__version__)')"
