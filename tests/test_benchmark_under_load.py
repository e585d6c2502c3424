"""benchmarks/under_load.py: a command run beside busy processes, which are stopped after."""

from __future__ import annotations

import os
import sys

import pytest
from conftest import load_benchmark


def test_the_command_runs_beside_busy_processes_and_keeps_its_exit_code() -> None:
    bench = load_benchmark("under_load")
    code = "import os, sys; sys.exit(3 if os.cpu_count() else 0)"
    result = bench.run_beside([sys.executable, "-c", code], busy=2)
    assert result["returncode"] == 3 and result["busy"] == 2
    assert len(result["busy_pids"]) == 2
    for pid in result["busy_pids"]:  # stopped and reaped: no process left behind
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_bad_arguments_are_refused() -> None:
    bench = load_benchmark("under_load")
    with pytest.raises(ValueError, match="busy"):
        bench.run_beside(["true"], busy=-1)
    with pytest.raises(ValueError, match="command"):
        bench.run_beside([], busy=1)
