"""Run a command with busy processes beside it, as on a shared machine.

    python benchmarks/under_load.py -- make build           # two busy processes
    python benchmarks/under_load.py --busy 2 -- .venv/bin/pytest -m "site or browser"
    python benchmarks/under_load.py --busy 0 -- make build  # the same, on its own

The build and the tests must pass on a busy machine exactly as on a quiet one: no
timing is asserted anywhere (only printed). This starts ``--busy`` processes that
each keep one core busy (a Python loop), runs the command beside them, stops them,
and prints the command's exit code, its wall time, and the CPU time the busy
processes took meanwhile (how much of the machine they had). The exit code is the
command's own, so a CI step or a person can run it as the check it describes.
"""

from __future__ import annotations

import argparse
import os
import resource
import signal
import subprocess
import sys
import time

BUSY = "while True: pass"


def run_beside(command: list[str], busy: int) -> dict:
    """Run ``command`` with ``busy`` CPU-burning processes beside it; what happened."""
    if busy < 0:
        raise ValueError(f"busy must be a number of processes >= 0, got {busy}")
    if not command:
        raise ValueError("command must name a program to run, got nothing")
    burners = [subprocess.Popen([sys.executable, "-c", BUSY]) for _ in range(busy)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    try:
        returncode = subprocess.call(command)
    finally:
        wall = time.perf_counter() - start
        for proc in burners:
            proc.send_signal(signal.SIGTERM)
        for proc in burners:
            proc.wait()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    # children's CPU: the command's and the burners' (reaped now), in seconds
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return {"returncode": returncode, "wall_seconds": wall, "busy": busy,
            "children_cpu_seconds": cpu, "cores": os.cpu_count(),
            "busy_pids": [proc.pid for proc in burners]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--busy", type=int, default=2,
                        help="processes keeping a core busy beside the command (%(default)s)")
    parser.add_argument("command", nargs=argparse.REMAINDER,
                        help="the command, after --")
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    try:
        result = run_beside(command, args.busy)
    except ValueError as error:
        parser.error(str(error))
    print(f"under_load: `{' '.join(command)}` with {result['busy']} busy process(es) on "
          f"{result['cores']} cores: exit code {result['returncode']}, "
          f"{result['wall_seconds']:.0f} s wall, {result['children_cpu_seconds']:.0f} "
          "CPU-seconds in child processes (the command's and the busy ones')", flush=True)
    return result["returncode"]


if __name__ == "__main__":
    sys.exit(main())
