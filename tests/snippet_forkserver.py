"""A fork server for the snippet test: each snippet in a new process that has torch loaded.

Not imported by the tests: ``test_snippets.py`` runs this file's text with
``python -I -c`` (isolated: no PYTHONPATH, no user site, no repository folder on
``sys.path``). The server imports torch and numpy, nothing of ``llmlab``, and then,
for each request on stdin (a JSON line ``{"script": ..., "timeout": ...}``), forks a
child that runs the script as ``__main__`` in the script's folder, with its output
in ``stdout.txt`` and ``stderr.txt`` there, in a namespace of its own: a snippet that forgets
``import torch`` fails with a ``NameError`` as it would in a fresh interpreter. Its
random generators (``random``, numpy's, torch's) are seeded from the OS, as a new
interpreter's are; only the string hash seed is the server's. What the fork saves is
only the seconds of importing torch, once per snippet. The reply
is a JSON line ``{"rc": ..., "seconds": ...}``; a child past its timeout is killed
with its process group (a snippet may start worker processes).
"""

import json
import os
import signal
import sys
import time

import numpy  # loaded once, before any fork
import torch


def _child(script: str) -> None:
    folder = os.path.dirname(script)
    os.setsid()  # its own process group: a timeout kills what it started too
    os.chdir(folder)
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
    out = os.open(os.path.join(folder, "stdout.txt"), flags)
    err = os.open(os.path.join(folder, "stderr.txt"), flags)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(out, 1)
    os.dup2(err, 2)
    sys.stdin = open(0, closefd=False)  # noqa: SIM115
    sys.stdout = open(1, "w", buffering=1, closefd=False)  # noqa: SIM115
    sys.stderr = open(2, "w", buffering=1, closefd=False)  # noqa: SIM115
    sys.argv = [script]
    # a new interpreter seeds its generators from the OS: so does each child
    import random

    random.seed()
    numpy.random.seed()
    torch.seed()
    code = 0
    try:
        import runpy

        runpy.run_path(script, run_name="__main__")
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:  # noqa: BLE001  (report it as python would, then exit 1)
        import traceback

        traceback.print_exc()
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _wait(pid: int, timeout: float) -> int:
    deadline = time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() > deadline:
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            os.waitpid(pid, 0)
            return -signal.SIGKILL
        time.sleep(0.01)


def main() -> None:
    for line in sys.stdin:
        request = json.loads(line)
        start = time.perf_counter()
        pid = os.fork()
        if pid == 0:
            _child(request["script"])
        rc = _wait(pid, request["timeout"])
        reply = {"rc": rc, "seconds": time.perf_counter() - start}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


main()
