"""Training on several processes with ``torch.distributed``: DDP and FSDP.

The course's own training loop, ``llmlab.training.train``, runs unchanged on every
rank, each on its share of every batch; PyTorch's distributed engine does the rest.

* :func:`launch` runs a function on ``world_size`` local processes (new
  interpreters, as ``torchrun`` starts them) with a process group set up (gloo on
  CPUs, NCCL on GPUs), and returns what each rank returned.
  It always stops and joins its processes: a rank that fails raises
  :class:`WorkerError`, one that hangs a ``TimeoutError``.
* :func:`init_distributed` sets up the process group of a script started by
  ``torchrun`` (or a single process without it); :func:`resolve_backend` picks
  ``"nccl"`` or ``"gloo"``.
* :func:`wrap_ddp` (``DistributedDataParallel``: every rank holds everything, the
  gradients are averaged) and :func:`shard_fsdp` (``fully_shard``: every rank
  holds ``1/world_size`` of the parameters, gradients and optimizer state).
* :func:`distributed_train` runs ``train`` on one rank (its rows of each batch,
  the loss averaged across ranks); :func:`parallel_train` checks its arguments,
  launches it with DDP or FSDP (``strategy``) and returns every rank's
  :class:`RankTrainResult`.
* :class:`AllReduceTimer` (a DDP communication hook) and
  :func:`all_reduce_seconds` measure the communication.

Taught on: "Where the compute and the memory go" (training on many devices).
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import io
import json
import os
import pickle
import runpy
import select
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import types
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
import torch.distributed as dist
from torch import Tensor, nn
from torch.nn.parallel import DistributedDataParallel

from llmlab._surgery import device_of
from llmlab.checks import (
    check_callable,
    check_choice,
    check_divisible,
    check_finite_float,
    check_int,
    check_str,
    check_token_ids,
    check_type,
)
from llmlab.memory import gradient_bytes, optimizer_state_bytes, parameter_bytes
from llmlab.models.llama import LlamaConfig, TransformerLM
from llmlab.training.loop import TrainEvent, _check_train_args, train
from llmlab.training.optim import AdamW

__all__ = [
    "BACKENDS",
    "STRATEGIES",
    "AllReduceTimer",
    "RankInfo",
    "RankTrainResult",
    "WorkerError",
    "all_reduce_seconds",
    "distributed_train",
    "init_distributed",
    "launch",
    "parallel_train",
    "resolve_backend",
    "shard_fsdp",
    "start_fork_server",
    "wrap_ddp",
]

BACKENDS = ("auto", "gloo", "nccl")
"""Accepted ``backend`` values: ``"auto"`` is NCCL on GPUs, gloo on CPUs."""

STRATEGIES = ("ddp", "fsdp")
"""Accepted ``strategy`` values of :func:`parallel_train`: :func:`wrap_ddp` or
:func:`shard_fsdp`."""

Dataset = np.ndarray | Tensor


class WorkerError(RuntimeError):
    """A rank raised an exception (or died); the message holds its traceback.

    Attributes:
        rank: The rank that failed.
        remote_traceback: Its traceback, as text.
    """

    def __init__(self, rank: int, world_size: int, remote_traceback: str) -> None:
        super().__init__(f"rank {rank} of {world_size} failed:\n{remote_traceback}")
        self.rank = rank
        self.remote_traceback = remote_traceback


# --------------------------------------------------------------------------
# backends and process groups
# --------------------------------------------------------------------------
def resolve_backend(backend: str = "auto", world_size: int = 1) -> str:
    """``"nccl"`` or ``"gloo"`` for ``world_size`` local processes.

    ``"auto"`` is NCCL when CUDA has a GPU for every process, gloo otherwise
    (NCCL cannot put two ranks on one GPU, and has no CPU tensors).

    Raises:
        ValueError: ``backend`` is not in :data:`BACKENDS`, or NCCL is asked for
            without enough GPUs.

    Taught on: "Where the compute and the memory go".
    """
    check_choice("backend", backend, BACKENDS)
    check_int("world_size", world_size)
    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if backend == "auto":
        return "nccl" if gpus >= world_size and dist.is_nccl_available() else "gloo"
    if backend == "nccl" and gpus < world_size:
        raise ValueError(
            f"backend='nccl' needs a CUDA GPU per process: world_size is {world_size}, "
            f"{gpus} GPU(s) available; use backend='gloo' (or 'auto') on CPUs")
    return backend


@dataclasses.dataclass(frozen=True)
class RankInfo:
    """Where this process stands in its process group.

    Attributes:
        rank: Its rank, ``0 .. world_size - 1``.
        world_size: Processes in the group.
        local_rank: Its rank on this machine (its GPU index under NCCL).
        backend: ``"gloo"`` or ``"nccl"``.
        device: Where its tensors go: ``cuda:<local_rank>`` or ``cpu``.
    """

    rank: int
    world_size: int
    local_rank: int
    backend: str
    device: torch.device


def _rank_info(backend: str) -> RankInfo:
    local_rank = int(os.environ.get("LOCAL_RANK", dist.get_rank()))
    device = torch.device("cpu")
    if backend == "nccl":
        device = torch.device("cuda", local_rank)
        torch.cuda.set_device(device)
    return RankInfo(dist.get_rank(), dist.get_world_size(), local_rank, backend, device)


def init_distributed(backend: str = "auto", timeout: float = 300.0) -> RankInfo:
    """Set up the process group of this process (``torchrun``, or alone).

    Under ``torchrun`` (``RANK``, ``WORLD_SIZE``, ``MASTER_ADDR`` and
    ``MASTER_PORT`` are set) this joins the group it describes (``env://``).
    Without it the process is a group of one, so the same script also runs as
    ``python script.py``. Call ``torch.distributed.destroy_process_group()``
    at the end.

    Args:
        backend: ``"auto"``, ``"gloo"`` or ``"nccl"`` (see :func:`resolve_backend`).
        timeout: Seconds a collective may wait for the other ranks, ``> 0``.

    Taught on: "Where the compute and the memory go".
    """
    check_choice("backend", backend, BACKENDS)  # before any process group is set up
    check_finite_float("timeout", timeout, minimum=0.0, open_min=True)
    seconds = datetime.timedelta(seconds=timeout)
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:
        world_size = int(os.environ["WORLD_SIZE"])
        local = int(os.environ.get("LOCAL_WORLD_SIZE", world_size))
        backend = resolve_backend(backend, local)
        if backend == "nccl":  # each process on its own GPU, before NCCL starts
            torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", 0)))
        dist.init_process_group(backend, init_method="env://", timeout=seconds)
    else:
        backend = resolve_backend(backend, 1)
        dist.init_process_group(backend, store=dist.HashStore(), rank=0, world_size=1,
                                timeout=seconds)
    return _rank_info(backend)


# --------------------------------------------------------------------------
# launching local processes
# --------------------------------------------------------------------------
# A rank runs this module's code, never the caller's script (multiprocessing's spawn
# and forkserver import it in every child). On POSIX it is forked from a fork
# server: an interpreter of its own that runs _serve, started at the first launch
# (or by start_fork_server) with this process's sys.path and flags, which imports
# torch once and forks a rank per request (as torchrun's ranks, and multiprocessing's
# forkserver, start from a clean interpreter; a later launch costs milliseconds, not
# an import of torch per rank). Processes forked from the one that started it (a
# pool's workers) use it too: a request is one short line, written whole (at most
# PIPE_BUF bytes, which a pipe never interleaves); the rest is a file in the launch's
# folder. Elsewhere each rank is a new interpreter running _worker.
_WORKER = ("import sys; sys.path[:] = {path!r}; "
           "from llmlab.distributed import _worker; _worker()")
_SERVE = ("import sys; sys.path[:] = {path!r}; "
          "from llmlab.distributed import _serve; _serve()")
_SERVER: dict[str, Any] = {}  # the fork server: "process", "key", "owner" (who started it)
_SERVER_LOCK = threading.Lock()

_GRACE_S = 0.5
"""After a first failure, how long :func:`launch` collects the others before
raising the one that came first."""

_POLL_S = 0.02
"""How often :func:`launch` looks for the ranks' messages and exits."""

_importing_main = False
"""True while a rank imports the caller's script (see :func:`_import_main`)."""


class _CallPickler(pickle.Pickler):
    """Pickles the call; notes whether it names something of ``__main__``."""

    uses_main = False

    def reducer_override(self, obj: object) -> object:
        if isinstance(obj, type | types.FunctionType) and \
                getattr(obj, "__module__", None) == "__main__":
            self.uses_main = True
        return NotImplemented  # pickle it as usual (functions and classes: by name)


class _ResultUnpickler(pickle.Unpickler):
    """Reads a rank's result: what the rank knew as ``__mp_main__`` is ``__main__``."""

    def find_class(self, module: str, name: str) -> Any:
        return super().find_class("__main__" if module == "__mp_main__" else module,
                                  name)


def _main_module() -> tuple[str | None, str | None]:
    """How a rank imports this process's ``__main__``: (module name, or script path).

    Raises:
        ValueError: ``__main__`` has no file (an interactive session, ``-c``).
    """
    main = sys.modules.get("__main__")
    name = getattr(getattr(main, "__spec__", None), "name", None)
    if name and not name.endswith("__main__"):  # python -m package.module
        return name, None
    path = getattr(main, "__file__", None)
    if not path:
        raise ValueError("fn (or an argument) is defined in an interactive __main__, "
                         "which the processes cannot import: define it in a module "
                         "(a .py file)")
    return None, os.path.abspath(path)


def _pickle_call(fn: Callable[..., Any], args: tuple,
                 kwargs: dict[str, Any]) -> dict[str, Any]:
    """What every rank reads first: the call, pickled; how it imports ``__main__``."""
    buffer = io.BytesIO()
    pickler = _CallPickler(buffer, protocol=pickle.HIGHEST_PROTOCOL)
    for name, value in (("fn", fn), ("args", args), ("kwargs", kwargs)):
        try:
            pickler.dump(value)  # by reference for functions: module and name
        except Exception as error:  # noqa: BLE001 - whatever pickle raises
            raise TypeError(f"{name} must be picklable (it is sent to the processes), "
                            f"got {type(error).__name__}: {error}") from error
    return {"call": buffer.getvalue(), "argv": list(sys.argv),
            "main": _main_module() if pickler.uses_main else None}


def _import_main(name: str | None, path: str | None) -> None:
    """The caller's main module, as ``__mp_main__`` (its guarded code does not run).

    As multiprocessing does: ``__main__`` names it too, so that what was pickled
    as ``__main__.fn`` is found.
    """
    global _importing_main
    main = types.ModuleType("__mp_main__")
    _importing_main = True  # a launch the script does not guard fails, not recurses
    try:
        if name is not None:
            namespace = runpy.run_module(name, run_name="__mp_main__", alter_sys=True)
        else:
            namespace = runpy.run_path(path, run_name="__mp_main__")
    finally:
        _importing_main = False
    main.__dict__.update(namespace)
    sys.modules["__main__"] = sys.modules["__mp_main__"] = main


def _watch_parent() -> None:
    """End this rank, and what it started, when the launching process is gone.

    The parent holds this process's stdin open and writes nothing: end of file
    means it died (killed, say) without stopping its ranks.
    """
    channel = os.dup(0)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)  # fn, and what it starts, read an empty stdin
    os.close(null)

    def watch() -> None:
        while os.read(channel, 4096):
            pass
        if os.name == "posix":
            os.killpg(os.getpgrp(), signal.SIGKILL)
        os._exit(1)

    threading.Thread(target=watch, name="llmlab-parent-watch", daemon=True).start()


def _run_rank(folder: str, rank: int) -> int:
    """One rank: join the group, run ``fn``, report; the exit code.

    The call is in ``folder`` (``call.pickle``). The message (a result or a
    traceback) goes out before the rank leaves the group: when a rank fails, its
    peers fail next (their connections close), and the parent must be able to
    tell the cause from the consequences (messages carry the time they left).
    """
    try:
        with open(os.path.join(folder, "call.pickle"), "rb") as file:
            job = pickle.load(file)
        sys.argv = job["argv"]
        if job["main"] is not None:
            _import_main(*job["main"])
        unpickler = pickle.Unpickler(io.BytesIO(job["call"]))
        fn, args, kwargs = (unpickler.load() for _ in range(3))
        world_size, port, backend = job["world_size"], job["port"], job["backend"]
        os.environ.update(RANK=str(rank), WORLD_SIZE=str(world_size),
                          LOCAL_RANK=str(rank), LOCAL_WORLD_SIZE=str(world_size),
                          MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        torch.set_num_threads(job["threads"])
        if backend == "nccl":  # each process on its own GPU, before NCCL starts
            torch.cuda.set_device(rank)
        wait = datetime.timedelta(seconds=job["timeout"])
        store = dist.TCPStore("127.0.0.1", port, world_size, is_master=False,
                              timeout=wait)
        dist.init_process_group(backend, store=store, rank=rank, world_size=world_size,
                                timeout=wait)
        # every rank has joined before fn runs: one that ran fn and left at once would
        # close the connections a rank that started later is still setting up
        dist.barrier(device_ids=[rank] if backend == "nccl" else None)
        message = (True, time.time(), pickle.dumps(fn(*args, **kwargs)))
    except BaseException:  # noqa: BLE001 - every failure goes back to the parent
        message = (False, time.time(), traceback.format_exc())
    _write_whole(os.path.join(folder, f"{rank}.pickle"), pickle.dumps(message))
    if dist.is_initialized():
        dist.destroy_process_group()
    return 0 if message[0] else 1


def _write_whole(path: str, data: bytes) -> None:
    """Write ``data`` to ``path`` so that a reader sees all of it or no file."""
    partial = f"{path}.partial"
    with open(partial, "wb") as file:
        file.write(data)
    os.replace(partial, path)


def _worker() -> None:
    """A rank as a new interpreter (not POSIX): ``sys.argv[1:]`` is the launch's
    folder and the rank."""
    folder, rank = sys.argv[1], int(sys.argv[2])
    _watch_parent()
    sys.exit(_run_rank(folder, rank))


def _serve() -> None:
    """The fork server: an interpreter of its own that forks a rank per request.

    A request is a JSON line on stdin, the launch's folder and the rank; the
    launching process's pid, working folder, environment and ``sys.path`` are in
    ``<folder>/request.json``. The rank's pid goes to ``<folder>/<rank>.pid`` and,
    once the rank is reaped, its exit code to ``<folder>/<rank>.exit``. End of
    stdin (every process that could write to it is gone) ends the server.
    """
    import torch.distributed.fsdp  # noqa: F401 - once, before any fork
    try:  # optimizers import it when the first is built: half a second per rank
        import torch._dynamo  # noqa: F401
    except ImportError:
        pass
    children: dict[int, str] = {}  # pid -> its exit file
    pending = b""
    while True:
        ready = select.select([0], [], [], _POLL_S)[0]
        if ready:
            data = os.read(0, 1 << 16)
            if not data:
                break
            pending += data
            while b"\n" in pending:
                line, pending = pending.split(b"\n", 1)
                request = json.loads(line)
                with open(os.path.join(request["folder"], "request.json"),
                          encoding="utf-8") as file:
                    request.update(json.load(file))
                sys.stdout.flush()
                sys.stderr.flush()
                pid = os.fork()
                if pid == 0:
                    _forked_rank(request)  # never returns
                where = os.path.join(request["folder"], str(request["rank"]))
                children[pid] = f"{where}.exit"
                _write_whole(f"{where}.pid", str(pid).encode())
        while children:
            pid, status = os.waitpid(-1, os.WNOHANG)
            if not pid:
                break
            path = children.pop(pid, None)
            if path is not None and os.path.isdir(os.path.dirname(path)):
                _write_whole(path, str(os.waitstatus_to_exitcode(status)).encode())


def _forked_rank(request: dict[str, Any]) -> None:
    """A rank forked by :func:`_serve`: the launching process's folder, environment and
    ``sys.path``, a session of its own; it ends when the launching process is gone."""
    code = 1
    try:
        os.setsid()  # its own process group: a launch that stops it stops what it started
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        sys.path[:] = request["path"]
        _watch_launcher(request["parent"])
        code = _run_rank(request["folder"], request["rank"])
    except BaseException:  # noqa: BLE001 - it must not return into the server's loop
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _watch_launcher(pid: int) -> None:
    """End this rank, and what it started, once process ``pid`` (the launch) is gone."""
    def watch() -> None:
        while True:
            time.sleep(0.5)
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                os.killpg(os.getpgrp(), signal.SIGKILL)

    threading.Thread(target=watch, name="llmlab-launcher-watch", daemon=True).start()


def _running(server: subprocess.Popen, owner: int) -> bool:
    """Whether ``server`` (started by process ``owner``) still runs. A process forked
    from its owner cannot wait on it (it is not its child): it asks the system."""
    if owner == os.getpid():
        return server.poll() is None
    try:
        os.kill(server.pid, 0)
    except OSError:
        return False
    return True


def _fork_server() -> subprocess.Popen:
    """The fork server for the current interpreter flags and ``sys.path``: this
    process's, or the one of the process it was forked from; started (again) when
    there is none or it has ended."""
    key = (tuple(_interpreter_flags()), tuple(sys.path))
    server, owner = _SERVER.get("process"), _SERVER.get("owner")
    if server is None or _SERVER["key"] != key or not _running(server, owner):
        if server is not None and owner == os.getpid() and server.poll() is None:
            server.stdin.close()  # it ends at end of input
        command = [sys.executable, *_interpreter_flags(), "-c",
                   _SERVE.format(path=sys.path)]
        # a session of its own: a Ctrl-C at the terminal stops the launch, not it
        server = subprocess.Popen(command, stdin=subprocess.PIPE, start_new_session=True)
        _SERVER.update(process=server, key=key, owner=os.getpid())
    return server


def start_fork_server() -> None:
    """Start the fork server that :func:`launch` forks its processes from (POSIX),
    now rather than at the first launch: it imports torch (a second or more) while
    this process goes on, and processes forked from this one later (a pool's
    workers) launch from it too instead of each starting one of their own.
    Elsewhere, where each process is a new interpreter, it does nothing."""
    if os.name == "posix":
        with _SERVER_LOCK:
            _fork_server()


class _ForkedRank:
    """A rank forked by the fork server, with the parts of ``Popen`` that
    :func:`launch` uses (``pid``, ``poll``, ``wait``), read from the files the
    server writes: its pid, then, once it is reaped, its exit code."""

    def __init__(self, server: subprocess.Popen, folder: str, rank: int) -> None:
        self.server, self.stdin, self.owner = server, None, _SERVER["owner"]
        self.where = os.path.join(folder, str(rank))
        self._pid: int | None = None

    @property
    def pid(self) -> int | None:
        if self._pid is None:
            try:
                with open(f"{self.where}.pid", encoding="utf-8") as file:
                    self._pid = int(file.read())
            except FileNotFoundError:
                pass
        return self._pid

    def poll(self) -> int | None:
        try:
            with open(f"{self.where}.exit", encoding="utf-8") as file:
                return int(file.read())
        except FileNotFoundError:
            pass
        if _running(self.server, self.owner):
            return None
        if self.pid is None:
            return -1  # the server died before forking it
        try:  # no server to reap it: is it still there?
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return -1
        return None

    def wait(self, timeout: float | None = None) -> int:
        end = None if timeout is None else time.monotonic() + timeout
        while (code := self.poll()) is None:
            if end is not None and time.monotonic() >= end:
                raise subprocess.TimeoutExpired("rank", timeout)
            time.sleep(_POLL_S)
        return code


def _start_ranks(world_size: int, folder: str) -> list[Any]:
    """The ranks, started: forked by this process's fork server (POSIX), else each
    a new interpreter."""
    if os.name != "posix":
        return [_start(rank, folder) for rank in range(world_size)]
    _write_whole(os.path.join(folder, "request.json"), json.dumps(
        {"parent": os.getpid(), "cwd": os.getcwd(), "env": dict(os.environ),
         "path": sys.path}).encode())
    lines = [json.dumps({"folder": folder, "rank": rank}).encode() + b"\n"
             for rank in range(world_size)]
    if max(map(len, lines)) > select.PIPE_BUF:
        raise ValueError(f"the launch folder's path is too long for the fork server "
                         f"({len(folder)} characters): set TMPDIR to a shorter one")
    with _SERVER_LOCK:
        for attempt in range(2):
            server = _fork_server()
            try:  # a line at a time, each whole: other processes may write to it too
                for line in lines:
                    os.write(server.stdin.fileno(), line)
                break
            except BrokenPipeError:  # it ended since: start another (once)
                _SERVER.clear()
                if attempt:
                    raise
    return [_ForkedRank(server, folder, rank) for rank in range(world_size)]


def _interpreter_flags() -> list[str]:
    """This interpreter's isolation, bytecode and optimisation flags (``sys.flags``),
    for the ranks: a script run with ``-I`` gets ranks run with ``-I``."""
    f = sys.flags
    flags = ["-I"] if f.isolated else (["-E"] * f.ignore_environment
                                       + ["-s"] * f.no_user_site
                                       + ["-P"] * getattr(f, "safe_path", False))
    return flags + ["-B"] * f.dont_write_bytecode + ["-O"] * f.optimize


def _start(rank: int, folder: str) -> subprocess.Popen:
    """Rank ``rank``'s interpreter, in a process group of its own (POSIX)."""
    command = [sys.executable, *_interpreter_flags(), "-c", _WORKER.format(path=sys.path),
               folder, str(rank)]
    group = {"start_new_session": True} if os.name == "posix" else {
        "creationflags": subprocess.CREATE_NEW_PROCESS_GROUP}
    return subprocess.Popen(command, stdin=subprocess.PIPE, cwd=os.getcwd(), **group)


def _kill(process: Any, force: bool) -> None:
    """Terminate (or kill) the rank and what it started: its process group (POSIX)."""
    if os.name != "posix":
        if process.poll() is None:
            process.kill()
        return
    if process.pid is None:  # not forked yet: nothing to stop
        return
    try:
        os.killpg(process.pid, signal.SIGKILL if force else signal.SIGTERM)
    except (ProcessLookupError, PermissionError):  # the group is gone
        pass


def _stop(processes: Sequence[Any]) -> None:
    """Stop every rank and what it started; reap them.

    A rank still running is terminated, and killed if it has not gone within 5 s;
    then its process group is killed, for what the rank started. (A rank the fork
    server had not forked by then finds no launch folder and exits at once.)
    """
    for p in processes:
        if p.poll() is None:
            _kill(p, force=False)
    for p in processes:
        with contextlib.suppress(subprocess.TimeoutExpired):
            p.wait(timeout=5.0)
        _kill(p, force=True)
        with contextlib.suppress(subprocess.TimeoutExpired):
            p.wait(timeout=5.0)  # killed: reaped at once
        if p.stdin is not None:
            p.stdin.close()


def launch(
    fn: Callable[..., Any],
    args: tuple = (),
    kwargs: dict[str, Any] | None = None,
    *,
    world_size: int = 2,
    backend: str = "auto",
    timeout: float = 60.0,
    threads: int = 1,
) -> list[Any]:
    """Run ``fn(*args, **kwargs)`` on ``world_size`` new processes; their results.

    Each process joins one process group (``torch.distributed``) before ``fn``
    runs, so ``fn`` can call ``dist.get_rank()``, collectives, ``DDP`` or
    ``fully_shard`` as a ``torchrun`` script would, and leaves it after. The
    group meets at a ``TCPStore`` this process opens on ``127.0.0.1`` on a port
    the system picks (``port=0``: free by construction, no race).

    However a launch ends, no process is left behind: a rank that raises (or
    dies) makes the launch stop every rank and raise :class:`WorkerError` with
    that rank's traceback (the first failure: the others' follow from it); a
    launch still running after ``timeout`` seconds (a rank that hangs) stops
    every rank, and what it started, and raises ``TimeoutError``.

    Each process starts from a clean interpreter running llmlab's code, as
    ``torchrun``'s do: on POSIX it is forked from a fork server (an interpreter of
    its own, started at the first launch, that imports torch once: later
    launches start in milliseconds); elsewhere it is a new interpreter (each
    imports torch: a second or more of CPU). It gets
    this process's ``sys.path``, working folder, environment and ``sys.argv``, and imports
    ``fn`` from its module: the script that calls ``launch`` does not run again
    in the processes, guarded or not. Only a function (or an argument's class)
    defined in the script itself makes each process import the script, as
    ``__mp_main__`` (as multiprocessing does): such a script must guard its own
    work with ``if __name__ == "__main__":``, and a function defined
    interactively (no file) cannot be launched.

    Args:
        fn: A module-level function (it is sent to the processes by name), whose
            arguments and result can be pickled.
        args: Positional arguments for ``fn``.
        kwargs: Keyword arguments for ``fn``.
        world_size: Processes, ``>= 1``.
        backend: ``"auto"``, ``"gloo"`` or ``"nccl"`` (see :func:`resolve_backend`).
        timeout: Seconds for the whole launch (the processes' start included),
            and for any collective, ``> 0``.
        threads: ``torch.set_num_threads`` in each process.

    Returns:
        ``[result of rank 0, result of rank 1, ...]``.

    Raises:
        TypeError, ValueError: An argument is wrong (``fn``, ``args`` or
            ``kwargs`` cannot be pickled, say), before any process starts.
        WorkerError: A rank raised, or died without a result.
        TimeoutError: Not every rank finished within ``timeout``.

    Taught on: "Where the compute and the memory go".
    """
    if _importing_main:
        raise RuntimeError("launch() was called while a process it started imported "
                           "the script that defines fn: put the script's own work "
                           "under if __name__ == \"__main__\":")
    check_callable("fn", fn)
    qualname = getattr(fn, "__qualname__", "")
    if "<lambda>" in qualname or "<locals>" in qualname:
        raise ValueError(f"fn must be a module-level function (the processes import it "
                         f"by name), got {qualname}")
    if not isinstance(args, tuple):
        raise TypeError(f"args must be a tuple, got {type(args).__name__}")
    if kwargs is not None and not isinstance(kwargs, dict):
        raise TypeError(f"kwargs must be a dict, got {type(kwargs).__name__}")
    check_int("world_size", world_size)
    check_finite_float("timeout", timeout, minimum=0.0, open_min=True)
    check_int("threads", threads)
    backend = resolve_backend(backend, world_size)
    job = _pickle_call(fn, args, kwargs or {})  # every check before a process starts
    deadline = time.monotonic() + timeout
    store = dist.TCPStore("127.0.0.1", 0, world_size, is_master=True,
                          timeout=datetime.timedelta(seconds=timeout),
                          wait_for_workers=False)
    job.update(world_size=world_size, port=store.port, backend=backend,
               timeout=timeout, threads=threads)
    folder = tempfile.mkdtemp(prefix="llmlab-launch-")
    processes: list[Any] = []
    try:
        with open(os.path.join(folder, "call.pickle"), "wb") as file:
            pickle.dump(job, file)
        processes += _start_ranks(world_size, folder)
        results = _collect(processes, folder, deadline, timeout)
        for p in processes:
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.wait(timeout=max(0.0, deadline - time.monotonic()) + 5.0)
    finally:
        _stop(processes)
        shutil.rmtree(folder, ignore_errors=True)
        del store
    return results


def _message(folder: str, rank: int) -> tuple[bool, float, Any] | None:
    """Rank ``rank``'s message (ok, the time it was sent, payload), if it sent one."""
    try:
        with open(os.path.join(folder, f"{rank}.pickle"), "rb") as file:
            return pickle.load(file)
    except FileNotFoundError:
        return None


def _collect(processes: Sequence[Any], folder: str, deadline: float,
             timeout: float) -> list[Any]:
    """Every rank's result, or the first failure raised (see :func:`launch`)."""
    world_size = len(processes)
    results: dict[int, Any] = {}
    failures: list[tuple[int, float, int, str]] = []  # (order, time, rank, text)
    grace_end = None
    pending = set(range(world_size))
    while pending:
        now = time.monotonic()
        if grace_end is not None and now >= grace_end:
            break
        if now >= deadline:
            if failures:
                break
            raise TimeoutError(
                f"rank(s) {sorted(pending)} of {world_size} did not finish within "
                f"timeout={timeout:g} s (rank(s) {sorted(results)} did); every rank "
                "was stopped")
        for rank in sorted(pending):
            exitcode = processes[rank].poll()  # first: a rank writes, then exits
            message = _message(folder, rank)
            if message is None and exitcode is None:
                continue
            pending.discard(rank)
            if message is None:  # died without a word: the likeliest cause of the rest
                message = (None, time.time(),
                           f"the process exited with code {exitcode} before returning "
                           "a result (a traceback, if any, is on stderr)\n")
            ok, sent, payload = message
            if ok:
                results[rank] = _ResultUnpickler(io.BytesIO(payload)).load()
                continue
            failures.append((0 if ok is None else 1, sent, rank, payload))
            if grace_end is None:
                grace_end = time.monotonic() + _GRACE_S
        time.sleep(_POLL_S)
    if failures:
        _, _, rank, text = min(failures)
        raise WorkerError(rank, world_size, text)
    return [results[rank] for rank in range(world_size)]


# --------------------------------------------------------------------------
# DDP and FSDP
# --------------------------------------------------------------------------
# a local composite (a module with parameters, and a process group), built from llmlab.checks
def _check_model(model: object) -> nn.Module:
    check_type("model", model, nn.Module, expected="a torch.nn.Module")
    if next(model.parameters(), None) is None:
        raise ValueError("model has no parameters: there is nothing to synchronise")
    if not dist.is_initialized():
        raise RuntimeError("no process group: call init_distributed() first, or run "
                           "under launch() or torchrun")
    return model


def wrap_ddp(model: nn.Module, **ddp_kwargs: Any) -> DistributedDataParallel:
    """``DistributedDataParallel(model)``, on the GPU of this rank under NCCL.

    DDP makes every rank start from rank 0's weights (a broadcast), then
    averages the gradients across ranks during ``backward()`` (an all-reduce
    per bucket of about 25 MB, overlapped with the rest of the backward pass),
    so every rank takes the same optimizer step.

    Taught on: "Where the compute and the memory go".
    """
    model = _check_model(model)
    device = device_of(model)
    device_ids = [device.index] if device.type == "cuda" else None
    return DistributedDataParallel(model, device_ids=device_ids, **ddp_kwargs)


def shard_fsdp(model: nn.Module) -> nn.Module:
    """Shard ``model`` with FSDP2's ``fully_shard``: each block, then the whole.

    Every parameter becomes a ``DTensor`` split along its first dimension, so a
    rank stores ``1/world_size`` of it (and of its gradient and AdamW state).
    Before a block runs, its parameters are gathered (all-gather) and freed
    after; the gradients are reduce-scattered, each rank keeping its shard.
    Build the optimizer after sharding. ``model`` is changed in place.

    Taught on: "Where the compute and the memory go".
    """
    from torch.distributed.fsdp import fully_shard

    model = _check_model(model)
    for block in getattr(model, "layers", []):
        fully_shard(block)
    fully_shard(model)
    return model


# --------------------------------------------------------------------------
# training: llmlab.training.train on every rank
# --------------------------------------------------------------------------
@dataclasses.dataclass
class RankTrainResult:
    """What one rank saw in :func:`distributed_train`.

    Attributes:
        rank: This rank.
        world_size: Ranks in the group.
        backend: ``"gloo"`` or ``"nccl"``.
        strategy: ``"ddp"``, ``"fsdp"`` or ``"none"`` (the model as given).
        losses: Loss of the whole (global) batch at each step: the mean of the
            ranks' losses (all-reduced), equal to one process's loss on it.
        local_losses: This rank's loss on its share of the batch.
        grad_norms: Global gradient norm before clipping, each step.
        first_gradients: Every parameter's full gradient after the first
            backward pass (after the all-reduce), by name, on the CPU.
        final_parameters: Every parameter's full value at the end, by name.
        parameter_bytes: Parameter bytes this rank stores (its shards, under FSDP).
        gradient_bytes: Gradient bytes this rank stores after the last step.
        optimizer_state_bytes: AdamW state bytes this rank stores.
        parameter_type: What a parameter is (``"Parameter"``; ``"DTensor"``
            under FSDP).
        seconds: Wall time of the loop.
    """

    rank: int
    world_size: int
    backend: str
    strategy: str
    losses: list[float]
    local_losses: list[float]
    grad_norms: list[float]
    first_gradients: dict[str, Tensor]
    final_parameters: dict[str, Tensor]
    parameter_bytes: int
    gradient_bytes: int
    optimizer_state_bytes: int
    parameter_type: str
    seconds: float


def _full(t: Tensor) -> Tensor:
    """The whole tensor on the CPU (a DTensor is gathered: every rank must call)."""
    full_tensor = getattr(t, "full_tensor", None)
    whole = full_tensor() if callable(full_tensor) else t
    return whole.detach().cpu().clone()


def _named_parameters(model: nn.Module) -> list[tuple[str, nn.Parameter]]:
    inner = model.module if isinstance(model, DistributedDataParallel) else model
    return list(inner.named_parameters())


def distributed_train(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    train_data: Dataset,
    *,
    steps: int,
    batch_size: int,
    context_length: int,
    lr_schedule: Callable[[int], float] | None = None,
    max_grad_norm: float | None = 1.0,
    seed: int = 0,
    strategy: str = "none",
) -> RankTrainResult:
    """``llmlab.training.train`` on one rank of a group, on its share of each batch.

    Every rank draws the same global batch of ``batch_size`` windows (one
    generator seeded with ``seed`` on every rank, so the batches are those of a
    single-process ``train`` with the same seed) and keeps its share: rows
    ``rank · b .. (rank + 1) · b`` with ``b = batch_size / world_size``
    (``train``'s ``batch_rows``). The mean of the ranks' mean losses is then the
    loss of the whole batch, and the average of their gradients (what DDP's
    all-reduce computes) is its gradient. ``train`` checks the arguments it
    shares with this function.

    Args:
        model: Wrapped by :func:`wrap_ddp` or sharded by :func:`shard_fsdp`.
        optimizer: Built on the wrapped/sharded model's parameters.
        train_data: 1-D integer token ids, the same on every rank.
        steps: Optimizer steps, ``>= 1``.
        batch_size: Windows per step over all ranks; a multiple of the world size.
        context_length: Tokens per window.
        lr_schedule: ``schedule(iteration) -> lr`` (``None``: the optimizer's rate).
        max_grad_norm: Clip the global gradient norm to this (``None``: no clipping).
        seed: Seeds the batch generator (the same on every rank).
        strategy: A label stored in the result (``"ddp"``, ``"fsdp"``, ...).

    Taught on: "Where the compute and the memory go".
    """
    check_str("strategy", strategy)
    if not dist.is_initialized():
        raise RuntimeError("no process group: call init_distributed() first, or run "
                           "under launch() or torchrun")
    rank, world = dist.get_rank(), dist.get_world_size()
    _check_batch_share(batch_size, world)
    share = batch_size // world
    losses: list[float] = []
    first_gradients: dict[str, Tensor] = {}

    def keep_first_gradients(iteration: int) -> None:
        if iteration == 0:  # after DDP's all-reduce (FSDP's reduce-scatter)
            first_gradients.update((name, _full(p.grad))
                                   for name, p in _named_parameters(model))

    def average_loss(event: TrainEvent) -> None:
        # the whole batch's loss: the average of the ranks' losses (summed in the
        # loss's dtype: cross_entropy computes fp16 and bf16 in float32)
        p = next(model.parameters())
        whole = torch.tensor(event.loss, device=p.device,
                             dtype=torch.promote_types(p.dtype, torch.float32))
        dist.all_reduce(whole)
        losses.append(whole.item() / world)

    record = train(model, optimizer, train_data, steps=steps, batch_size=batch_size,
                   context_length=context_length, lr_schedule=lr_schedule,
                   max_grad_norm=max_grad_norm, seed=seed,
                   batch_rows=slice(rank * share, (rank + 1) * share),
                   after_backward=keep_first_gradients, callback=average_loss)
    final = {name: _full(p) for name, p in _named_parameters(model)}
    return RankTrainResult(rank, world, dist.get_backend(), strategy, losses,
                           record.losses, record.grad_norms, first_gradients, final,
                           parameter_bytes(model), gradient_bytes(model),
                           optimizer_state_bytes(optimizer),
                           type(next(model.parameters())).__name__, record.seconds)


# a local composite (batch_size against world_size), built from llmlab.checks
def _check_batch_share(batch_size: object, world_size: object) -> None:
    """Positive ints, ``batch_size`` a multiple of ``world_size`` (an equal share each).

    Raises:
        TypeError, ValueError: As :func:`llmlab.checks.check_int`; ``ValueError``
            if ``world_size`` does not divide ``batch_size``.
    """
    check_int("world_size", world_size)
    check_int("batch_size", batch_size)
    check_divisible("batch_size", batch_size, "world_size", world_size,
                    reason="every rank takes an equal share")


def _train_rank(config: LlamaConfig, train_data: Dataset, *, strategy: str, steps: int,
                batch_size: int, context_length: int, lr: float, weight_decay: float,
                max_grad_norm: float | None, seed: int) -> RankTrainResult:
    """One rank of :func:`parallel_train`, which has checked the arguments: the model
    of ``config`` seeded with ``seed`` (the same weights on every rank), wrapped or
    sharded, our ``AdamW``, :func:`distributed_train`."""
    info = _rank_info(dist.get_backend())
    torch.manual_seed(seed)  # the same initial weights on every rank
    model = TransformerLM.from_config(config, device=info.device)
    model = wrap_ddp(model) if strategy == "ddp" else shard_fsdp(model)
    optimizer = AdamW(model.parameters(), lr=lr, weight_decay=weight_decay)
    return distributed_train(model, optimizer, train_data, steps=steps,
                             batch_size=batch_size, context_length=context_length,
                             max_grad_norm=max_grad_norm, seed=seed, strategy=strategy)


def parallel_train(
    config: LlamaConfig,
    train_data: Dataset,
    *,
    strategy: str = "ddp",
    world_size: int = 2,
    steps: int = 5,
    batch_size: int = 8,
    context_length: int | None = None,
    lr: float = 1e-3,
    weight_decay: float = 0.01,
    max_grad_norm: float | None = 1.0,
    seed: int = 0,
    backend: str = "auto",
    timeout: float = 120.0,
) -> list[RankTrainResult]:
    """Train a :class:`TransformerLM` with DDP or FSDP on ``world_size`` local processes.

    Each rank builds the model of ``config`` seeded with ``seed``, wraps it with
    :func:`wrap_ddp` (``strategy="ddp"``) or shards it with :func:`shard_fsdp`
    (``"fsdp"``), makes our ``AdamW`` and runs :func:`distributed_train`, that is
    ``llmlab.training.train`` on its share of each batch. A single process running
    ``train`` with the same ``config``, ``seed`` and ``batch_size`` sees the same
    batches and computes the same losses. Every argument is checked here, before
    any process starts.

    Args:
        config: The model.
        train_data: 1-D token ids in ``[0, config.vocab_size)``.
        strategy: ``"ddp"`` or ``"fsdp"`` (see :data:`STRATEGIES`).
        world_size: Processes.
        steps: Optimizer steps.
        batch_size: Windows per step over all ranks (a multiple of ``world_size``).
        context_length: Tokens per window (default: ``config.context_length``).
        lr: AdamW's learning rate.
        weight_decay: AdamW's λ.
        max_grad_norm: Gradient clipping (``None``: none).
        seed: Weights and batches.
        backend: ``"auto"``, ``"gloo"`` or ``"nccl"``.
        timeout: Seconds for the whole run (see :func:`launch`).

    Returns:
        One :class:`RankTrainResult` per rank, in rank order.

    Taught on: "Where the compute and the memory go".
    """
    check_str("strategy", strategy)
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy must be one of {', '.join(map(repr, STRATEGIES))}, "
                         f"got {strategy!r}")
    check_type("config", config, LlamaConfig, expected="a LlamaConfig")
    _check_batch_share(batch_size, world_size)
    context_length = _check_train_args(  # what train checks on every rank
        train_data, steps=steps, batch_size=batch_size, context_length=context_length,
        model_context_length=config.context_length, max_grad_norm=max_grad_norm,
        seed=seed)
    check_token_ids("train_data", train_data, config.vocab_size, arrays=True)
    check_finite_float("lr", lr, minimum=0.0)
    check_finite_float("weight_decay", weight_decay, minimum=0.0)
    # launch checks world_size, backend and timeout before it starts a process
    return launch(_train_rank, (config, train_data),
                  dict(strategy=strategy, steps=steps, batch_size=batch_size,
                       context_length=context_length, lr=lr, weight_decay=weight_decay,
                       max_grad_norm=max_grad_norm, seed=seed),
                  world_size=world_size, backend=backend, timeout=timeout)


# --------------------------------------------------------------------------
# measuring the communication
# --------------------------------------------------------------------------
class AllReduceTimer:
    """A DDP communication hook: average each gradient bucket, and time it.

    It does what DDP does by default (divide by the world size, all-reduce the
    bucket's flat buffer) and records, per bucket, the seconds from launching
    the all-reduce to its completion, and the bucket's bytes. Register its
    :meth:`hook` with ``ddp_model.register_comm_hook(None, timer.hook)``.

    Attributes:
        seconds: One entry per bucket all-reduced.
        nbytes: The bytes of each of those buckets.

    Taught on: "Where the compute and the memory go".
    """

    def __init__(self) -> None:
        self.seconds: list[float] = []
        self.nbytes: list[int] = []

    # no annotations: DDP compares them with dist.GradBucket and Future[Tensor],
    # which this module's postponed (string) annotations would not equal
    def hook(self, state, bucket):  # (None, dist.GradBucket) -> Future[Tensor]
        """Average ``bucket``'s gradients across ranks; record the time it takes."""
        buffer = bucket.buffer()
        buffer.div_(dist.get_world_size())
        start = time.perf_counter()
        future = dist.all_reduce(buffer, async_op=True).get_future()

        def finished(fut: torch.futures.Future) -> Tensor:
            self.seconds.append(time.perf_counter() - start)
            self.nbytes.append(buffer.numel() * buffer.element_size())
            return fut.value()[0]

        return future.then(finished)

    def reset(self) -> None:
        """Forget what was recorded."""
        self.seconds.clear()
        self.nbytes.clear()


def all_reduce_seconds(numel: int, repeats: int = 5,
                       dtype: torch.dtype = torch.float32) -> float:
    """Median seconds of one blocking all-reduce of ``numel`` elements, on every rank.

    Call it on every rank at once (it is a collective). One warm-up call first.

    Taught on: "Where the compute and the memory go".
    """
    check_int("numel", numel)
    check_int("repeats", repeats)
    check_type("dtype", dtype, torch.dtype, expected="a torch.dtype (e.g. torch.float32)")
    if not dist.is_initialized():
        raise RuntimeError("no process group: call it inside launch() or torchrun")
    device = torch.device("cuda", torch.cuda.current_device()) \
        if dist.get_backend() == "nccl" else torch.device("cpu")
    buffer = torch.ones(numel, dtype=dtype, device=device)
    dist.all_reduce(buffer)  # warm-up: connections, buffers
    times = []
    for _ in range(repeats):
        dist.barrier()
        start = time.perf_counter()
        dist.all_reduce(buffer)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        times.append(time.perf_counter() - start)
    return statistics.median(times)
