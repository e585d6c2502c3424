"""Become a notebook's IPython kernel, in a process forked from the build's forkserver.

Not a hook: ``llmlab_build.py`` (section 9) runs this file with ``runpy.run_path``
in a child of the forkserver, which has imported torch already, instead of
starting ``python -m ipykernel_launcher`` afresh. It gets what that command
would have had from the globals the runner sets: ``KERNEL_ARGV`` (the
arguments after ``-m ipykernel_launcher``), ``KERNEL_ENV`` and ``KERNEL_CWD``.
"""

import os
import sys
import traceback

os.setsid()  # its own session, as jupyter_client starts kernels (start_new_session)
os.chdir(KERNEL_CWD)  # noqa: F821 - set by the runner
os.environ.clear()
os.environ.update(KERNEL_ENV)  # noqa: F821
# what a fresh interpreter would have put first on sys.path from PYTHONPATH
for entry in reversed(os.environ.get("PYTHONPATH", "").split(os.pathsep)):
    if entry and entry not in sys.path:
        sys.path.insert(0, entry)
sys.argv = ["ipykernel_launcher", *KERNEL_ARGV]  # noqa: F821

code = 0
try:
    from ipykernel import kernelapp

    kernelapp.launch_new_instance()
except SystemExit as stop:
    code = stop.code if isinstance(stop.code, int) else 1
except BaseException:  # noqa: BLE001 - report it, then exit like a failed kernel
    traceback.print_exc()
    code = 1
finally:
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001, S110 - a closed stream has nothing to flush
            pass
    # Exit now, as the kernel's own process would: the kernel leaves threads
    # (heartbeat, IOPub) that multiprocessing would otherwise wait for.
    os._exit(code)
