# SPDX-License-Identifier: Apache-2.0
"""How the ranks of a collective load agree (_dist_exec's Executor): the
status all-reduces issued every ``_dist_exec.AGREE_EVERY`` collectives (and
at each segment's end, _dist_stream), looked at once complete to yield what
they cover; the gates that wait for each status ``_dist_exec.GATE_LAG``
collectives later at the latest, so that after a failure every rank stops at
the same collective; the final agreement over the whole group."""
from __future__ import annotations

from typing import Any, Iterator


class Agreement:
    """Mixed into Executor, whose state it uses: g and agree (groups), cuda,
    side, status and landed streams, checkpoints, cp_log, gated, covered, aborted,
    failed, works, direct futures and their ends, parts and their last
    collectives, the allocator, _on and _await_prepared."""

    def _gate(self, t: int | None) -> bool:
        """Before op ``t`` (None: now), waits for each status issued
        GATE_LAG ops or more earlier (every one for None) and looks at it:
        the ops where ranks stop after a failure are then the same on every
        rank. False once one says a rank failed. The lag lets the walk issue
        what its own reads have completed while the collectives ahead of it
        still wait for a slower rank's reads."""
        from ._dist_exec import GATE_LAG   # looked up per call: tests set it
        while self.gated < len(self.cp_log):
            upto, value, done = self.cp_log[self.gated]
            if t is not None and upto + GATE_LAG > t:
                break
            if self.cuda:
                done.synchronize()
            else:
                done.wait()
            self.gated += 1
            if int(value.item()) != 1:
                self.aborted = True
                self._note("aborted", t)
                return False
        return True

    def _checkpoint(self, upto: int) -> None:
        """An asynchronous all-reduce of every rank's status (1: fine)."""
        self._await_prepared()
        torch = self.torch
        with self._on(self.side):
            st = torch.full((1,), 0 if self.failed else 1, dtype=torch.int32,
                            device=self.device)
            work = self.g.dist.all_reduce(st, op=self.g.dist.ReduceOp.MIN, group=self.g.group,
                                          async_op=True)
            if self.cuda:   # on a stream of its own: packing never waits for it
                with torch.cuda.stream(self.status_stream):
                    work.wait()
                    i = self.n_checkpoints % self.status_host.numel()
                    host = self.status_host[i:i + 1]
                    host.copy_(st, non_blocking=True)
                    done = torch.cuda.Event()
                    done.record()
                self.checkpoints.append((upto, host, done, st))
                self.cp_log.append((upto, host, done))
            else:
                self.checkpoints.append((upto, st, work, st))
                self.cp_log.append((upto, st, work))
            self.n_checkpoints += 1

    def _ready(self, final: bool = False, block: bool = False) -> Iterator[tuple[str, Any]]:
        """Yields what agreed checkpoints cover, without waiting for any unless
        ``block`` (every checkpoint, in order, once every collective is issued);
        ``final``: everything, after the final agreement."""
        while self.checkpoints and not final and self.covered >= 0:
            upto, value, done, _ = self.checkpoints[0]
            if block:
                if self.cuda:
                    done.synchronize()
                else:
                    done.wait()
            elif self.cuda and not done.query():
                break
            elif not self.cuda and (not done.is_completed() or not self._works_done(upto)):
                break
            self._let_go(upto)
            self.checkpoints.popleft()
            if int(value.item()) != 1:
                self.covered = -1            # a rank failed: nothing more is yielded
                return
            self.covered = upto
            if self.cuda:
                self.torch.cuda.current_stream().wait_event(done)
                self.torch.cuda.current_stream().wait_stream(self.landed)
        if not final and self.covered <= 0:
            return
        names = [n for n in self.parts if n not in self.yielded] if final else \
            self._newly_complete(everything=block)
        for name in names:
            self.yielded.add(name)
            tensor = self._tensor(name)
            self.yielded_since.append(name)   # let go of at the next segment
            yield name, tensor
            del tensor

    def _newly_complete(self, everything: bool) -> list:
        """The parts complete and not yet yielded, in the parts' order. Only
        the parts that a direct read's end or an agreed status concerns since
        the last call are looked at, not every part after every collective;
        ``everything``: every part (a segment's end, the walk's end)."""
        touched = set()
        while self.direct_ends:
            touched.add(self.direct_ends.popleft())
        while self.agreed_upto < len(self.by_last_op) and \
                self.by_last_op[self.agreed_upto][0] < self.covered:
            touched.add(self.by_last_op[self.agreed_upto][1])
            self.agreed_upto += 1
        if everything:
            touched = self.parts
        done = [n for n in touched if n not in self.yielded and self._complete(n)]
        return sorted(done, key=self.part_index.__getitem__)

    def _complete(self, name: str) -> bool:
        """Its collectives agreed, and its direct reads (a part may have both:
        bytes only it wants, bytes it shares) all submitted, done and fine."""
        if name in self.last_op and self.last_op[name] >= self.covered:
            return False
        futures = self.direct_futures.get(name)
        if self.direct_left[name] or not all(
                f.done() and not f.cancelled() and f.exception() is None for f in futures or ()):
            return False
        return name in self.last_op or bool(futures)

    def _let_go(self, upto: int) -> None:
        """Waits for the works of the collectives before ``upto`` and drops
        them: on CUDA the ``landed`` stream waits (what a status covers has
        completed on NCCL's one stream in issue order, but gloo completes each
        collective on a stream of its own, and a status may end before an
        earlier collective), on CPU complete already. torch keeps an
        asynchronous NCCL collective's tensors until its work is waited for
        (or its watchdog notices, later): a tensor let go of would otherwise
        stay allocated."""
        with self._on(self.landed):
            while self.works and self.works[0][0] < upto:
                self.works.popleft()[1].wait()

    def _works_done(self, upto: int) -> bool:
        while self.works and self.works[0][0] < upto:
            if not self.works[0][1].is_completed():
                return False
            self.works.popleft()
        return True

    def _finish(self) -> None:
        """Waits for this rank's reads and collectives; the final agreement."""
        for futures in list(self.direct_futures.values()):
            for f in futures:
                try:
                    f.result()
                except Exception as exc:  # noqa: BLE001 - agreed below
                    self._fail(f"{type(exc).__name__}: {exc}")
        self._let_go(len(self.plan.ops))
        for name in self.parts:   # empty tensors and parts no read or collective touched
            if self.failed or self.aborted:
                break
            if name in self.yielded:
                continue
            try:
                self._tensor(name)
            except Exception as exc:  # noqa: BLE001 - agreed below
                self._fail(f"allocating tensor {name!r}: {type(exc).__name__}: {exc}")
        self._note("reads done")
        self._await_prepared()
        self.agreeing = True
        torch = self.torch
        with self._on(self.side):
            flag = torch.full((1,), 0 if self.failed else 1, dtype=torch.int32,
                              device=self.device)
            self.g.dist.all_reduce(flag, op=self.g.dist.ReduceOp.MIN, group=self.agree.group,
                                   async_op=True).wait()
            ok = int(flag.item()) == 1
        self._note("agreed", ok)
        self._write_trace()
        if not ok:
            from ._dist import raise_failures
            raise_failures(self.agree.objects(self.failed))
        if self.cuda:
            torch.cuda.current_stream().wait_stream(self.side)
            torch.cuda.current_stream().wait_stream(self.landed)
