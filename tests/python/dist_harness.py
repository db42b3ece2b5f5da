# SPDX-License-Identifier: Apache-2.0
"""Runs a function on N processes of one torch.distributed group, with a
deadline: a process still running at the deadline is killed and the run fails,
so a hang is a failure, never a stuck test run.

  results = run(worker, nprocs, args, backend="gloo", deadline=120)

``worker(rank, nprocs, *args)`` runs after init_process_group; its return
value (picklable) or its exception (type name and message) is the rank's
result: {"ok": value} or {"error": "Type: message"}.

Over gloo the processes are forked from a fork server that has imported torch
once (a spawned process imports it anew: test_dist_hosts_cpu.py took 85 s
spawning its processes, 19 s forking them, on a 2-core VM); each starts with
the caller's environment as it is at the call, as a spawned one would. Over
NCCL they are spawned."""
from __future__ import annotations

import multiprocessing as mp
import os
import socket
import traceback
from datetime import timedelta
from typing import Any, Callable


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


_context: Any = None


def _processes(backend: str) -> Any:
    """Spawning for NCCL; else the fork server's context, made once a
    process, torch preloaded."""
    global _context
    if backend == "nccl":
        return mp.get_context("spawn")
    if _context is None:
        _context = mp.get_context("forkserver")
        _context.set_forkserver_preload(["torch", "torch.distributed"])
    return _context


def _main(worker: Callable, rank: int, nprocs: int, port: int, backend: str, args: tuple,
          queue: Any, pg_timeout: float, env: dict) -> None:
    os.environ.clear()   # the caller's, not the fork server's (made at its first run)
    os.environ.update(env)
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    try:
        import torch
        import torch.distributed as dist
        if backend == "nccl":
            torch.cuda.set_device(rank % torch.cuda.device_count())
        dist.init_process_group(backend, init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                                world_size=nprocs, timeout=timedelta(seconds=pg_timeout))
        try:
            result = {"ok": worker(rank, nprocs, *args)}
        except BaseException as exc:  # noqa: BLE001 - the rank's outcome
            result = {"error": f"{type(exc).__name__}: {exc}", "type": type(exc).__name__,
                      "trace": traceback.format_exc()}
        queue.put((rank, result))
        try:
            dist.destroy_process_group()
        except Exception:  # noqa: BLE001 - the result is already reported
            pass
    except BaseException as exc:  # noqa: BLE001 - set-up failed
        queue.put((rank, {"error": f"setup: {type(exc).__name__}: {exc}",
                          "type": type(exc).__name__, "trace": traceback.format_exc()}))


def run(worker: Callable, nprocs: int, args: tuple = (), backend: str = "gloo",
        deadline: float = 120, pg_timeout: float = 60) -> list:
    """Each rank's result, in rank order. Raises TimeoutError naming the ranks
    still running at the deadline (after killing them)."""
    ctx = _processes(backend)
    queue = ctx.Queue()
    port = free_port()
    env = dict(os.environ)
    procs = [ctx.Process(target=_main, args=(worker, r, nprocs, port, backend, args, queue,
                                             pg_timeout, env), daemon=True)
             for r in range(nprocs)]
    for p in procs:
        p.start()
    results: dict = {}
    import queue as _queue
    import time
    end = time.monotonic() + deadline
    while len(results) < nprocs and time.monotonic() < end:
        try:
            rank, res = queue.get(timeout=0.2)
            results[rank] = res
        except _queue.Empty:
            if all(not p.is_alive() for p in procs) and queue.empty():
                break
    for p in procs:
        p.join(timeout=max(0.0, min(10.0, end - time.monotonic())))
    stuck = [r for r, p in enumerate(procs) if p.is_alive()]
    for p in procs:
        if p.is_alive():
            p.kill()
            p.join()
    if stuck and len(results) < nprocs:
        raise TimeoutError(f"ranks {stuck} still running after {deadline} s (killed)")
    return [results.get(r, {"error": f"exited with code {procs[r].exitcode} and no result",
                            "type": "Exit"}) for r in range(nprocs)]
