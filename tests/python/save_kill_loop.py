# SPDX-License-Identifier: Apache-2.0
"""Kills saves with SIGKILL at random points and checks, after each kill, that
the checkpoint directory holds the previous checkpoint or the new one, byte
for byte, as both kinds of loader see it (save_checks.which).

  save_kill_loop.py --dir DIR --kills N [--seed S]

Each round forks a child that saves one of four checkpoints (3 shards, 3
shards of other bytes under the same names, one file, 2 shards) over the
directory. Half the rounds kill the child from outside after a random delay
within a save's duration; the other half make the child kill itself just
before or just after its k-th file-system call (the _save_io seam), k drawn
over the calls a save makes, so every step of the commit is hit. The parent
never initialises ufile (the child does, after the fork). Prints a JSON
summary; exits 1 at the first directory that is neither checkpoint."""
from __future__ import annotations

import argparse
import json
import os
import random
import signal
import sys
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402

import save_checks  # noqa: E402
from ufile.safetensors import _save_io, save_checkpoint  # noqa: E402

OPS = ("open", "allocate", "write", "fsync", "fsync_dir", "rename", "link", "unlink",
       "write_small")


def variants() -> dict:
    rng = np.random.RandomState(5)

    def sd(n: int, size: int, salt: int) -> dict:
        return {f"model.layers.{i}.weight": torch.from_numpy(
            rng.randint(0, 255, size + i + salt, dtype=np.uint8)) for i in range(n)}
    return {"three": (sd(6, 3000, 0), 6500), "three_other": (sd(6, 3000, 0), 6500),
            "one": (sd(4, 2000, 1), 10**9), "two": (sd(5, 4000, 2), 10000)}


class KillingIO(_save_io.SaveIO):
    """Kills this process just before (or after) its k-th call."""

    def __init__(self, k: int, after: bool):
        self.k, self.after, self.n = k, after, 0

    def _step(self) -> None:
        self.n += 1
        if self.n == self.k:
            os.kill(os.getpid(), signal.SIGKILL)


def _wrap(op: str):
    def call(self, *args):
        if not self.after:
            self._step()
        out = getattr(_save_io.SaveIO, op)(self, *args)
        if self.after:
            self._step()
        return out
    return call


for _op in OPS:
    setattr(KillingIO, _op, _wrap(_op))


def child(directory: str, sd: dict, limit: int, k: int, after: bool) -> None:
    try:
        if k:
            _save_io.IO = KillingIO(k, after)
        save_checkpoint(sd, directory, max_shard_size=limit)
        os._exit(0)
    except BaseException:  # noqa: BLE001 - the parent sees the exit code
        os._exit(3)


def run_round(directory: str, sd: dict, limit: int, delay: float | None, k: int,
              after: bool) -> int:
    """The child's wait status."""
    pid = os.fork()
    if pid == 0:
        child(directory, sd, limit, k, after)
    if delay is not None:
        time.sleep(delay)
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    _, status = os.waitpid(pid, 0)
    return status


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--kills", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    vs = variants()
    snaps = {name: save_checks.of_state_dict(sd) for name, (sd, _) in vs.items()}
    os.makedirs(args.dir, exist_ok=True)
    # Calibration: unkilled saves (their duration bounds the outside kills' delays).
    t0 = time.monotonic()
    for name in ("three", "one", "two"):
        assert os.WEXITSTATUS(run_round(args.dir, vs[name][0], vs[name][1], None, 0, False)) == 0
    span = (time.monotonic() - t0) / 3
    current = ["two"]
    stats = {"kills": 0, "outside": 0, "self": 0, "completed": 0, "saw_old": 0, "saw_new": 0, "saw_both": 0,
             "save_seconds": round(span, 4)}
    calls = 60  # more than a save of these makes: k past the last call completes it
    rounds = 0
    while stats["kills"] < args.kills and rounds < 4 * args.kills:
        rounds += 1
        new = rng.choice([n for n in vs if n not in current])
        outside = rng.random() < 0.5
        delay = rng.uniform(0, span * 1.2) if outside else None
        k = 0 if outside else rng.randint(1, calls)
        status = run_round(args.dir, vs[new][0], vs[new][1], delay, k, rng.random() < 0.5)
        killed = os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
        if not killed and os.WEXITSTATUS(status) != 0:
            print(f"round {rounds}: the save failed (exit {os.WEXITSTATUS(status)})")
            return 1
        try:
            seen = save_checks.which(args.dir, {n: snaps[n] for n in current + [new]})
        except save_checks.Broken as exc:
            print(json.dumps(stats))
            print(f"round {rounds} ({'killed' if killed else 'completed'}, {current} -> "
                  f"{new}): {exc}; directory: {sorted(os.listdir(args.dir))}")
            return 1
        if killed:
            stats["kills"] += 1
            stats["outside" if outside else "self"] += 1
            stats["saw_new" if seen == [new, new] else
                  "saw_old" if new not in seen else "saw_both"] += 1
        else:
            stats["completed"] += 1
            if seen != [new, new]:
                print(f"round {rounds}: a completed save left {seen}, not {new}")
                return 1
        current = sorted(set(seen))
    print(json.dumps(stats))
    return 0 if stats["kills"] >= args.kills else 1


if __name__ == "__main__":
    sys.exit(main())
