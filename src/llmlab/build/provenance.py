"""Where a build's numbers came from: package, commit, torch, device, threads.

Taught on: the home page ("How the numbers are made").
"""

from __future__ import annotations

import dataclasses
import os
import platform
import subprocess
from pathlib import Path

from llmlab import __version__

__all__ = ["BuildInfo", "build_info", "git_commit"]


@dataclasses.dataclass(frozen=True)
class BuildInfo:
    """What produced the numbers on a page.

    Attributes:
        llmlab_version: Version of the installed ``llmlab`` package.
        git_commit: Short commit of the source tree, or ``"unknown"``.
        torch_version: ``torch.__version__``.
        device: The device the examples run on (``"cpu"`` unless stated).
        threads: ``torch.get_num_threads()`` at the time of the call.
        python: The Python version.
        machine: The processor architecture, e.g. ``x86_64``.
    """

    llmlab_version: str
    git_commit: str
    torch_version: str
    device: str
    threads: int
    python: str
    machine: str

    def rows(self) -> list[tuple[str, str]]:
        """``(field, value)`` pairs, in display order."""
        return [(f.name, str(getattr(self, f.name))) for f in dataclasses.fields(self)]


def git_commit() -> str:
    """Short commit of the source tree, or ``"unknown"``.

    CI systems name the commit in the environment (``LLMLAB_GIT_COMMIT``,
    ``GITHUB_SHA``); a checkout asks git. Importing this module does not import
    torch, so the site's build hook can ask cheaply.
    """
    for var in ("LLMLAB_GIT_COMMIT", "GITHUB_SHA"):
        if os.environ.get(var):
            return os.environ[var][:12]
    here = Path(__file__).resolve().parent
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short=12", "HEAD"],
            cwd=here,
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return out.stdout.strip() or "unknown"


def build_info(device: str = "cpu") -> BuildInfo:
    """Describe the environment this process computes in.

    Args:
        device: The device the caller runs its examples on.

    Returns:
        A :class:`BuildInfo`.
    """
    import torch  # here, not at the top: git_commit() alone must stay light

    if not isinstance(device, str) or not device:
        raise TypeError(f"device must be a non-empty str such as 'cpu', got {device!r}")

    return BuildInfo(
        llmlab_version=__version__,
        git_commit=git_commit(),
        torch_version=torch.__version__,
        device=device,
        threads=torch.get_num_threads(),
        python=platform.python_version(),
        machine=platform.machine(),
    )
