# SPDX-License-Identifier: Apache-2.0
"""Carries out one rank's side of a collective load plan (_dist_plan).

One host thread walks the plan's collectives in order with two cursors:
- *prepare* runs ahead and submits this rank's reads, those that gate a
  collective before those into its own tensors (_dist_reader); the tensors are
  allocated on a thread of their own in the order the walk needs them
  (_dist_alloc), so allocation overlaps the reads;
- *issue* starts each collective asynchronously once this rank's own reads for
  it are done; a rank that only receives never waits, so no rank moves in
  lock-step with the others and many collectives are in flight.
Nothing on the way waits for the other ranks: every ``AGREE_EVERY``
collectives a one-integer status is all-reduced asynchronously and looked at
once it has completed (tensors it covers are then yielded), and waited for
``GATE_LAG`` collectives later at the latest (_dist_agree); one final
agreement precedes the return. A rank that fails (read error, out of memory, an
exception of its own, a consumer that stopped) stops reading and keeps joining
the collectives with scratch memory until a status shows its failure, where
every rank stops issuing; so no rank waits for data that will not come, and
every rank raises DistributedLoadError after the final agreement. A bounded
iterator (_dist_stream) also stops at each segment's end to yield before it
allocates more.

CUDA streams: collectives are issued from a side stream; inner-split packing
(_dist_inner) runs on it; statuses complete on a status stream; a yielded
tensor's consumer waits for its collectives' works on a stream that carries
only those waits (``landed``). A staging buffer is read into again (by
ufile, outside any stream) only after the event recorded behind its last
packing has completed: that fence is the one host wait on the data path,
taken only for the collective issued next (ops further ahead wait for a free
slot without blocking), and staging_buffers sets how far it lags."""
from __future__ import annotations

import collections
import contextlib
import math
import threading
from typing import Any, Iterator

from . import _engine
from . import _dist_stream
from ._dist_agree import Agreement
from ._dist_collectives import Collectives
from ._dist_alloc import Allocator, large_pool_bytes
from ._dist_files import Files
from ._dist_plan import AllToAll, Broadcast, Plan
from ._dist_reader import PriorityReader, gating_threads
from ._dist_staging import SCRATCH_RING, staging
from ._format import DTYPES, Header, TensorInfo
from ._timeline import Timeline

AGREE_EVERY = 16      # collectives between two status all-reduces
GATE_LAG = 64         # collectives a status may trail the walk before the walk waits for it
LOOKAHEAD = 4         # collectives prepared ahead of the one issued, per read thread and rank

# Test seams: a callable run on the side stream before each all-to-all packing
# (to delay it), and the staging fence, which a test switches off to show that
# its absence is caught.
before_pack: Any = None
staging_fence = True


class Executor(Agreement, Collectives):
    """This rank's side of ``plan``; ``run`` yields (name, tensor) as each is
    complete and agreed, and raises DistributedLoadError on every rank when any
    rank failed."""

    def __init__(self, plan: Plan, headers: list[Header], g: Any, fw: Any, device: str,
                 opts: Any, depth: int, agree: Any = None, budget: int | None = None,
                 timeline: Timeline | None = None, files: Files | None = None):
        self.plan, self.g, self.fw, self.device, self.opts = plan, g, fw, device, opts
        self.agree = agree or g             # the group the outcome is agreed over
        self.torch = fw.torch
        self.cuda = device != "cpu"
        # One scratch buffer serves collectives completing in issue order
        # (NCCL); gloo's, which complete out of order, each take one of a ring.
        self.in_order = self.cuda and g.in_issue_order()
        self.rank = g.rank
        self.parts = plan.parts[self.rank]
        self.paths = {n: h.path for h in headers for n in h.tensors}
        self.depth = depth
        self.alloc: Allocator | None = None
        # (part key, Part) -> a contiguous tensor of the part's shape and dtype
        # to read into, instead of a new one (load_into).
        self.destination: Any = None
        self.files: dict = {}               # file index -> File
        # The caller's files (opened ahead, closed by the caller), or its own.
        self.own_files = files is None
        self.opened = Files(opts.direct) if files is None else files
        self.failed: str | None = None
        # Threads kept for the reads a collective waits for, where there are any.
        self.reader = PriorityReader(opts.inflight,
                                     gating_threads(opts.inflight) if plan.ops else 0)
        self.prepared: Any = None           # waits for the set-up's agreement (agree_later)
        self.op_futures: dict = {}          # op index -> this rank's read futures
        self.direct_futures: dict = collections.defaultdict(list)   # name -> futures
        self.last_op = self._last_ops()
        self.slots: list = []               # (slab, send) staging per all-to-all slot
        self.slot_of: dict = {}             # op index -> slot
        self.slot_user = [-1] * depth       # the last op prepared into each slot
        self.slot_event: list = [None] * depth
        self.slot_work: list = [None] * depth
        self.scratch: Any = None
        self.scratch_ring: list = []        # gloo: [buffer, last work to receive into it]
        self.scratch_taken: int | None = None
        self.scratch_next = 0
        # Broadcasts this rank reads for ranks of a host that lacks the files
        # (it keeps none of the bytes): a ring of staging buffers, each
        # [buffer, op that last used it, its fence (CUDA event, or CPU work)].
        self.root_ring: list = []
        self.root_of: dict = {}             # op index -> ring index
        self.side: Any = None
        self.status_stream: Any = None
        # Waits only for the collectives let go of (_let_go), in order: a
        # tensor's consumer waits for it, so for its own collectives' results
        # also where the backend (gloo) completes them out of issue order.
        self.landed: Any = None
        self.works: collections.deque = collections.deque()   # (op index, work)
        self.checkpoints: collections.deque = collections.deque()
        self.status_host: Any = None
        self.n_checkpoints = 0
        self.agreeing = False               # the final agreement has begun
        self.issued = 0                     # collectives issued so far
        self.covered = 0                    # collectives agreed so far (-1: a rank failed)
        self.direct_left = collections.Counter(rd.dest for rd in plan.direct[self.rank])
        # What may have become complete (_dist_agree._newly_complete): parts
        # whose direct reads ended (posted by the reader's threads), parts by
        # their last collective.
        self.direct_ends: collections.deque = collections.deque()
        self.by_last_op = sorted((i, n) for n, i in self.last_op.items() if n in self.parts)
        self.agreed_upto = 0                # entries of by_last_op seen agreed
        self.part_index = {name: i for i, name in enumerate(self.parts)}
        self.yielded: set = set()
        self.yielded_since: list = []       # yielded, still referenced until the next segment
        self.order, self.segments = _dist_stream.segments(plan, self.rank, budget)
        self.index = {name: i for i, name in enumerate(self.order)}
        self.alloc_cv = threading.Condition()
        self.alloc_limit = 0                # tensors of ``order`` that may be allocated
        self.closing = False
        self.di = 0                         # this rank's direct reads submitted
        self.cp_log: list = []              # every checkpoint: (upto, value, done)
        self.gated = 0                      # checkpoints looked at by the gates
        self.aborted = False                # a gate saw a failure: nothing more is issued
        # UFILE_DIST_TRACE: this load's timeline (the caller's, begun at its call,
        # which the caller writes: it may span several executors)
        self.timeline = timeline or Timeline("UFILE_DIST_TRACE")
        self.owns_timeline = timeline is None

    # -- set-up --------------------------------------------------------------
    def _last_ops(self) -> dict:
        last: dict = {}
        for i, op in enumerate(self.plan.ops):
            last[op.name] = i
        return last

    def prepare(self) -> str | None:
        """Scratch, staging and files; returns this rank's error or None."""
        torch = self.torch
        try:
            ops = self.plan.ops
            st = staging(self.plan, self.rank, self.depth, self.cuda)
            if ops and self.in_order:
                self.scratch = self.fw.bytes_buffer(st.scratch, self.device)
            elif ops:
                self.scratch_ring = [[self.fw.bytes_buffer(st.scratch, self.device), None]
                                     for _ in range(SCRATCH_RING)]
            self.root_ring = [[self.fw.bytes_buffer(self.plan.chunk, self.device), -1, None]
                              for _ in range(st.roots)]
            self.slots = [(self.fw.bytes_buffer(self.plan.slab, self.device),
                           self.fw.bytes_buffer(st.send, self.device))
                          for _ in range(st.slots)]
            if self.cuda:
                self.side = torch.cuda.Stream()
                self.status_stream = torch.cuda.Stream()
                self.landed = torch.cuda.Stream()
                torch.cuda.current_stream().synchronize()   # memory we reuse is idle
                count = len(ops) // AGREE_EVERY + len(self.segments) + 1
                self.status_host = torch.empty(count, dtype=torch.int32, pin_memory=True)
            self._note("staging allocated")
            for rd in self.plan.direct[self.rank]:
                self._file(rd.file)
            for op in ops:
                rd = op.read if isinstance(op, Broadcast) else op.reads[self.rank]
                if rd is not None and (not isinstance(op, Broadcast) or op.root == self.rank):
                    self._file(rd.file)
            self._note("files opened")
            return None
        except Exception as exc:  # noqa: BLE001 - reported to every rank
            return f"preparing the load: {type(exc).__name__}: {exc}"

    def _file(self, i: int) -> Any:
        if i not in self.files:
            self.files[i] = self.opened.get(self.plan.files[i])
        return self.files[i]

    def _make(self, name: str) -> Any:
        i = self.index.get(name)
        with self.alloc_cv:   # a later segment's tensor waits until that segment opens
            while i is not None and i >= self.alloc_limit and not self.closing:
                self.alloc_cv.wait()
            if self.closing:
                raise RuntimeError("the load is closing")
        part = self.parts[name]
        if self.destination is not None:   # load_into: the caller's memory
            return self.destination(name, part)
        nbytes = math.prod(part.shape) * DTYPES[part.dtype][0]
        info = TensorInfo(name, part.dtype, part.shape, 0, nbytes)
        return self.fw.empty(info, self.paths[part.name], self.device)

    def _tensor(self, name: str) -> Any:
        return self.alloc.get(name)

    def _bytes(self, name: str) -> Any:
        return self._tensor(name).reshape(-1).view(self.torch.uint8)

    def _fail(self, message: str) -> None:
        if self.failed is None:
            self.failed = message
            self._note("failed", message)

    def _note(self, *event: Any) -> None:
        self.timeline.note(*event)

    @contextlib.contextmanager
    def _on(self, stream: Any) -> Iterator[None]:
        """On ``stream`` (CUDA), or as is where there is none (CPU)."""
        if stream is None:
            yield
        else:
            with self.torch.cuda.stream(stream):
                yield

    # -- the walk ------------------------------------------------------------
    def run(self) -> Iterator[tuple[str, Any]]:
        """Yields (name, tensor) as each is complete and agreed. A consumer
        that stops early (closes the iterator, or raises out of its loop)
        makes this rank go on walking as a failed rank, yielding nothing, up
        to where every rank sees the failure; the outcome is not raised here."""
        walk = self._walk()
        try:
            for item in walk:   # not ``yield from``: that would close ``walk`` too
                yield item
        except GeneratorExit:
            if not self.agreeing:
                self._fail(f"rank {self.rank} stopped before the load completed (the "
                           f"iterator was closed, or its consumer raised)")
                try:
                    for _ in walk:
                        pass
                except Exception:  # noqa: BLE001 - the rank is already failing
                    pass
            raise

    def _walk(self) -> Iterator[tuple[str, Any]]:
        # The set-up's agreement completes while the first reads run: it is
        # waited for before this rank's first collective (_await_prepared).
        error = self.prepare()
        self.prepared = self.agree.agree_later(error)
        if error:   # raises here, and on the other ranks before their first collective
            self._await_prepared()
        self._note("prepared")
        # All at once (not into the caller's memory, nor segment by segment):
        # reserved in one allocation.
        once = self.destination is None and len(self.segments) == 1
        self.alloc = Allocator(self.order, self._make, self.torch, self.device, self._note,
                               reserve=large_pool_bytes(self.parts.values()) if once else 0)
        # An exception from a collective (a rank exited, a timeout) leaves the
        # group broken: it propagates, and nothing more is issued on it.
        for s, seg in enumerate(self.segments):
            if s and not (yield from self._settle(seg.first_op)):
                break
            self._open(seg.alloc)
            if not (yield from self._segment(seg)):
                break
        if not self.aborted:
            yield from self._ready(block=True)   # streams what completes, in order
        self._finish()
        yield from self._ready(final=True)

    def _segment(self, seg: Any) -> Iterator[tuple[str, Any]]:
        """Prepares and issues the segment's ops; False: a gate saw a failure."""
        ops = self.plan.ops
        ahead = max(1, LOOKAHEAD * self.opts.inflight * self.g.size)
        prep = seg.first_op
        for t in range(seg.first_op, seg.end_op):
            if not self._gate(t):
                return False
            while prep < seg.end_op and prep < t + ahead and self._can_prepare(prep, t):
                self._submit_direct(self.plan.position(ops[prep]))
                self._prepare(prep)
                prep += 1
            if prep == seg.end_op:
                self._submit_direct(seg.end)
            # Reads into this rank's own tensors run ahead of the prepared
            # collectives (held back by staging slots) up to the lookahead,
            # as far as their tensors are allocated: the reader stays busy.
            horizon = min(t + ahead, seg.end_op)
            self._submit_direct(self.plan.position(ops[horizon]) if horizon < seg.end_op
                                else seg.end, allocated_only=True)
            self._issue(t)
            if (t + 1) % AGREE_EVERY == 0:
                self._checkpoint(t + 1)
            yield from self._ready()
        self._submit_direct(seg.end)
        return True

    def _settle(self, upto: int) -> Iterator[tuple[str, Any]]:
        """A segment's end: a status all-reduce, then this rank's reads and
        that status awaited and every complete tensor yielded (and let go), so
        the next segment's tensors are allocated within the bound. False: a
        rank failed (every rank sees the same status and stops here)."""
        self._checkpoint(upto)
        for futures in self.direct_futures.values():
            for f in futures:
                try:
                    f.result()
                except Exception as exc:  # noqa: BLE001 - agreed at the next status
                    self._fail(f"{type(exc).__name__}: {exc}")
        yield from self._ready(block=True)
        if not self._gate(None):
            return False
        return True

    def _open(self, limit: int) -> None:
        """Lets go of the tensors yielded so far (the consumer's now: kept or
        dropped by it), once the caller's stream has done what the consumer
        queued on them: memory freed here may be read into next, by ufile,
        outside that stream. Then allows the next ``limit`` allocations."""
        if self.yielded_since and self.cuda:
            self.torch.cuda.current_stream().synchronize()
        for name in self.yielded_since:
            self.alloc.release(name)
        self.yielded_since = []
        with self.alloc_cv:
            self.alloc_limit = max(self.alloc_limit, limit)
            self.alloc_cv.notify_all()

    def _submit_direct(self, before: tuple | None, allocated_only: bool = False) -> None:
        """Submits direct reads up to file position ``before`` (None: all);
        ``allocated_only``: stops at the first whose tensor is not allocated
        yet, instead of waiting for it."""
        direct = self.plan.direct[self.rank]
        while self.di < len(direct) and (before is None or
                                         (direct[self.di].file, direct[self.di].offset) < before):
            rd = direct[self.di]
            if allocated_only and not self.failed and not self.alloc.has(rd.dest):
                return
            self.di += 1
            if self.failed:
                continue
            try:
                dest = self.fw.ptr(self._tensor(rd.dest)) + rd.dest_offset
                pieces = _engine.split(self.files[rd.file], dest, rd.size, rd.offset,
                                       f"tensor {rd.dest!r}", self.opts.request_bytes)
                futures = self.reader.submit(pieces, (1, self.di))
                self.direct_futures[rd.dest] += futures
                for f in futures:
                    f.add_done_callback(lambda _, n=rd.dest: self.direct_ends.append(n))
                if self.timeline.events is not None:
                    self._note("direct", self.di, rd.size)
                    futures[-1].add_done_callback(lambda _, i=self.di: self._note("direct read", i))
                self.direct_left[rd.dest] -= 1
            except Exception as exc:  # noqa: BLE001 - reported at the final agreement
                self._fail(f"reading tensor {rd.dest!r}: {type(exc).__name__}: {exc}")

    def _can_prepare(self, p: int, t: int) -> bool:
        """An all-to-all's staging slot is free once the op that used it last
        was issued (its packing then holds the slot's event) and, for an op
        ahead of the next to issue, that packing has run: the walk waits on
        the GPU only for the op it issues next. A staged broadcast's buffer
        is free once the broadcast that used it was issued (it holds the
        fence)."""
        op = self.plan.ops[p]
        if isinstance(op, AllToAll):
            slot = self._slot(p)
            if self.slot_user[slot] >= t:
                return False
            ev = self.slot_event[slot]
            return p == t or ev is None or not staging_fence or ev.query()
        if self._staged(op):
            return self.root_ring[self._root_slot(p)][1] < t
        return True

    def _staged(self, op: Any) -> bool:
        return isinstance(op, Broadcast) and op.root == self.rank and self.rank not in op.ranks

    def _root_slot(self, p: int) -> int:
        if p not in self.root_of:
            self.root_of[p] = len(self.root_of) % len(self.root_ring)
        return self.root_of[p]

    def _slot(self, p: int) -> int:
        if p not in self.slot_of:
            self.slot_of[p] = len(self.slot_of) % len(self.slots)
        return self.slot_of[p]

    def _prepare(self, p: int) -> None:
        op = self.plan.ops[p]
        try:
            if self._staged(op):
                entry = self.root_ring[self._root_slot(p)]
                entry[1] = p
                if entry[2] is not None:   # the broadcast that last sent from it is done
                    if self.cuda:
                        entry[2].synchronize()
                    else:
                        entry[2].wait()
                    entry[2] = None
                if not self.failed:
                    self._read(p, op.read, self.fw.ptr(entry[0]),
                               f"tensor {op.name!r} (for ranks {list(op.ranks)})")
                return
            if isinstance(op, Broadcast):
                if op.root == self.rank and not self.failed:
                    dest = self.fw.ptr(self._tensor(op.name)) + op.lo
                    self._read(p, op.read, dest, f"tensor {op.name!r}")
                return
            slot = self._slot(p)
            self.slot_user[slot] = p
            rd = op.reads[self.rank]
            if rd is not None and not self.failed:
                if staging_fence and self.slot_event[slot] is not None:
                    self.slot_event[slot].synchronize()
                first, count = op.rows[self.rank]
                self._read(p, rd, self.fw.ptr(self.slots[slot][0]),
                           f"tensor {op.name!r} (outer rows {first}..{first + count - 1})")
        except Exception as exc:  # noqa: BLE001 - reported at the final agreement
            self._fail(f"preparing tensor {op.name!r}: {type(exc).__name__}: {exc}")

    def _read(self, p: int, rd: Any, dest: int, what: str) -> None:
        pieces = _engine.split(self.files[rd.file], dest, rd.size, rd.offset, what,
                               self.opts.request_bytes)
        self.op_futures[p] = self.reader.submit(pieces, (0, p))
        self._note("submit", p, rd.size)
        if self.timeline.events is not None:
            self.op_futures[p][-1].add_done_callback(lambda _, p=p: self._note("read", p))

    def _wait_reads(self, p: int) -> None:
        for f in self.op_futures.pop(p, []):
            try:
                f.result()
            except Exception as exc:  # noqa: BLE001 - reported at the final agreement
                self._fail(f"{type(exc).__name__}: {exc}")

    def _await_prepared(self) -> None:
        """The set-up's outcome, before this rank's first collective: raises
        DistributedLoadError on every rank if any rank failed to prepare."""
        if self.prepared is not None:
            outcome, self.prepared = self.prepared, None
            outcome()
            self._note("agreed prepared")

    def _issue(self, t: int) -> None:
        self._await_prepared()
        op = self.plan.ops[t]
        self._wait_reads(t)
        self._note("issue", t)
        self.issued = t + 1
        with self._on(self.side):
            if isinstance(op, Broadcast):
                work = self._broadcast(t, op)
            else:
                work = self._all_to_all(t, op)
        self.works.append((t, work))
        if not self.in_order:
            if self.scratch_taken is not None:
                self.scratch_ring[self.scratch_taken][1] = work
                self.scratch_taken = None

    def _write_trace(self) -> None:
        if self.owns_timeline:
            self.timeline.write(self.rank)

    def close(self) -> None:
        with self.alloc_cv:
            self.closing = True
            self.alloc_cv.notify_all()
        # Reads write through raw pointers: none may run once a tensor or a
        # staging buffer can be freed.
        self.reader.close()   # cancels what has not started, waits for the rest
        if self.alloc is not None:
            self.alloc.close()
        if self.own_files:
            self.opened.close()
        self.files = {}
        if self.side is not None:   # memory freed below is reused behind the side stream
            self.torch.cuda.current_stream().wait_stream(self.side)
        # The executor is in reference cycles (read callbacks, the allocator's
        # maker), which only the garbage collector frees: what it holds goes
        # now, so a caller that drops the outputs frees them, and the staging.
        self.slots, self.scratch, self.scratch_ring, self.root_ring = [], None, [], []
        self.works.clear()
        self.checkpoints.clear()
        self.cp_log = []
        self.op_futures.clear()
        self.direct_futures.clear()
        self.direct_ends.clear()
