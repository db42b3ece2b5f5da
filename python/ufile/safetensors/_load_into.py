# SPDX-License-Identifier: Apache-2.0
"""Loading a checkpoint into tensors that already exist (a model's
parameters), alone or as a collective load over a process group.

Each target is turned into what this rank wants (_dist_plan.Want: a box of a
checkpoint tensor) and the memory it lands in: the destination itself when
its view is contiguous and of the checkpoint's dtype (the bytes are read or
received straight into it, no copy), the destination's tail for a cast to
wider elements (widened in place), else a temporary of the part's size,
copied into the view once the part is complete. With a group, the set-up of
the collective load (_dist_setup: options, hosts, one header reader a copy,
the files' identities) comes first; the ranks exchange their wants once;
every rank then computes the same plan (its host's, when the group spans
several), and the collective executor (_dist_exec) carries it out into those
memories."""
from __future__ import annotations

import contextlib
import math
import pickle
import zlib
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Mapping, Union

from . import _dist, _dist_box, _dist_hosts, _dist_partial, _dist_setup, _frameworks, _loader
from ._dist_exec import Executor
from ._dist_plan import Part, Want, make_plan
from ._format import DTYPES, TensorInfo
from ._load_targets import Dest, resolve_targets

Rename = Union[Callable[[str], Union[str, None]], Mapping[str, str], None]


def load_into(headers_fn: Callable[[], list], targets: Mapping[str, Any], group: Any,
              rename: Rename, cast: bool, strict: bool, options: dict,
              source: Any = None) -> list[str]:
    """The names of the checkpoint tensors loaded; see ufile.safetensors.load_into.
    ``source``: the checkpoint's path (which copy of it a host holds)."""
    import torch
    fw = _frameworks.get("pt")
    if group is None:
        device = _targets_device(targets)
        g, headers, dests, ex = _alone(fw, device, headers_fn, targets, rename, cast, strict,
                                       options)
        executors: Iterator[Executor] = iter([ex])
    else:
        g, device, setups, opts = _set_up(fw, group, targets, options, source)
    ctx = torch.cuda.device(device) if device != "cpu" else contextlib.nullcontext()
    with ctx:
        if group is not None:
            headers, dests, executors = _agree(g, fw, device, setups, opts, group, headers_fn,
                                               targets, rename, cast, strict, source)
        staged: dict = {}
        for ex in executors:   # one, or one a group of files (copies lacking some)
            ex.destination = lambda key, part: _memory(fw, device, dests[key], part, staged)
            parts = _dist.run_executor(ex, g.rank)
            try:
                for key, got in parts:
                    if key in staged:
                        _complete(dests[key].view, got, staged.pop(key))
            finally:
                parts.close()   # a failure here: this rank joins the rest as a failed rank
                ex.close()      # (the generator closes it too, once started)
    loaded = {d.name for d in dests.values()}
    return [n for n in _dist.checkpoint_order(headers) if n in loaded]


def _alone(fw: Any, device: str, headers_fn: Callable[[], list], targets: Mapping,
           rename: Rename, cast: bool, strict: bool, options: dict) -> tuple:
    """(group of one, headers, destinations, executor) of a load with no
    group; errors are raised as they are."""
    opts = _loader.Options(**options).resolved()
    if opts.register_buffers:
        raise ValueError("register_buffers is not supported by load_into")
    total, depth = _dist.staging_sizes(opts)
    headers = headers_fn()
    dests = resolve_targets(headers, targets, rename, cast, strict)
    chunk, slab = _dist.split_staging(total, depth, 1)
    wants = [{k: Want(d.name, d.box) for k, d in dests.items()}]
    g = _Solo(device)
    ex = Executor(make_plan(headers, {}, [], chunk, slab, wants=wants), headers, g, fw,
                  device, opts, depth)
    return g, headers, dests, ex


def _set_up(fw: Any, group: Any, targets: Mapping, options: dict, source: Any) -> tuple:
    """The collective set-up (_dist_setup: options, hosts, copies), agreed:
    (group, device, every rank's set-up, options). An error in the targets'
    devices or the options raises on every rank."""
    import torch
    error, raw = None, None
    try:
        device = _targets_device(targets) if targets else _group_device(group)
    except Exception as exc:  # noqa: BLE001 - agreed in the set-up, raised on every rank
        error = f"{type(exc).__name__}: {exc}"
        device = f"cuda:{torch.cuda.current_device()}" if torch.cuda.is_available() else "cpu"
    try:
        raw = _loader.Options(**options)
    except Exception as exc:  # noqa: BLE001 - agreed in the set-up, raised on every rank
        error = error or f"{type(exc).__name__}: {exc}"
    g = _dist._Group(group, device)
    setup, opts = _dist_setup.setup_state(g, fw, device, raw, error,
                                          _dist_setup.source_path(source), False,
                                          _dist.staging_sizes)
    setups = g.objects(setup)
    _dist_setup.check_setup(setups)
    return g, device, setups, opts


def _agree(g: Any, fw: Any, device: str, setups: list, opts: Any, group: Any,
           headers_fn: Callable[[], list], targets: Mapping, rename: Rename, cast: bool,
           strict: bool, source: Any) -> tuple:
    """Headers (one reader a copy of the checkpoint), every rank's wants and
    the files' identities exchanged and agreed; (headers, destinations, the
    executors of this rank's plans, made in turn: its host's when the group
    spans several, one a group of files when copies lack some, _dist_partial)."""
    hosts = [s["host"] for s in setups]
    world = _dist_hosts.is_world(g.dist, group)
    headers, idents, error = _dist_partial.headers_of(g, setups, headers_fn, world,
                                                      _dist_setup.source_path(source))
    state, dests = _local_state(headers, error, targets, rename, cast, strict)
    state["identity"] = _dist_setup.identity_digest(idents)
    states = g.objects(state)
    _dist._check_agreement(g, states, (headers, None, None, []), hosts, idents)
    names = _dist.checkpoint_order(headers)
    shapes = [i.shape for h in headers for i in (h.tensors[n] for n in h.offset_order())]
    wants = [_decode(names, s["wants"], shapes) for s in states]
    total, depth = _dist.staging_sizes(opts)
    def executors() -> Iterator[Executor]:
        for group_headers, lacking in _dist_partial.load_groups(headers, setups):
            held = {n for h in group_headers for n in h.tensors}
            yield _dist._executor(g, hosts, world, group_headers, {}, [], fw, device, opts,
                                  total, depth, False, lacking=lacking,
                                  wants=[{k: w for k, w in mine.items() if w.name in held}
                                         for mine in wants])
    return headers, dests, executors()


CAST_CHUNK = 1 << 20    # elements converted at a time by an in-place cast


def _memory(fw: Any, device: str, dest: Dest, part: Part, staged: dict) -> Any:
    """Where ``part`` is read to: the destination view; for a cast into a
    contiguous destination of elements as wide or wider, the destination's
    last bytes (widened in place once complete); else a temporary."""
    if dest.in_place:
        return dest.view
    size = DTYPES[part.dtype][0]
    view = dest.view
    if view.is_contiguous() and view.element_size() % size == 0:
        raw = view.reshape(-1).view(fw.torch.uint8)
        tail = raw[raw.numel() - size * view.numel():]
        staged[dest.key] = "tail"
        return tail.view(fw.dtype(TensorInfo(part.name, part.dtype, (), 0, 0), "")) \
            .view(part.shape)
    info = TensorInfo(part.name, part.dtype, part.shape, 0, size * math.prod(part.shape))
    staged[dest.key] = "temporary"
    return fw.empty(info, "", device)


def _complete(view: Any, got: Any, how: str) -> None:
    """Copies (converts) a staged part into its destination. Read into the
    destination's tail, it is widened front to back a chunk at a time: the
    elements written never reach the bytes of those not yet read, and each
    chunk's own source is copied out first."""
    if how == "temporary":
        view.copy_(got)
        return
    src, dst = got.reshape(-1), view.reshape(-1)
    for i in range(0, dst.numel(), CAST_CHUNK):
        dst[i:i + CAST_CHUNK].copy_(src[i:i + CAST_CHUNK].clone())


def _group_device(group: Any) -> str:
    """Where a rank with no targets (an empty DCP plan) joins the others'
    collectives: the current GPU on an NCCL group, else the CPU."""
    import torch
    import torch.distributed as dist
    if "nccl" in str(dist.get_backend(group)).lower() and torch.cuda.is_available():
        return f"cuda:{torch.cuda.current_device()}"
    return "cpu"


def _targets_device(targets: Mapping[str, Any]) -> str:
    """The one device every destination is on ("cpu" or "cuda:N")."""
    from ._load_targets import tensors_of
    devices = {str(t.device) for t in tensors_of(targets)}
    if len(devices) > 1:
        raise ValueError(f"load_into: the destinations are on several devices "
                         f"({sorted(devices)}); load each device's separately")
    device = devices.pop() if devices else "cpu"
    return _frameworks.normalize_device(device)


def _local_state(headers: list | None, error: str | None, targets: Mapping, rename: Rename,
                 cast: bool, strict: bool) -> tuple[dict, Any]:
    """What this rank wants, as plain data for the exchange, and its
    destinations; ``error``: the headers could not be read."""
    try:
        if error:
            raise _dist._Reported(error)
        dests = resolve_targets(headers, targets, rename, cast, strict)
        names = _dist.checkpoint_order(headers)
        index = {n: i for i, n in enumerate(names)}
        wants = _encode([(index[d.name], d.box) for d in dests.values()], headers)
        return {"error": None, "fingerprint": _dist._fingerprint(headers),
                "names": len(names), "bytes": sum(h.file_size for h in headers),
                "dims": "", "wants": wants}, dests
    except _dist._Reported as exc:
        return {"error": str(exc)}, None
    except Exception as exc:  # noqa: BLE001 - reported to every rank, then raised
        return {"error": f"{type(exc).__name__}: {exc}"}, None


def _encode(wants: list, headers: list) -> bytes:
    """A rank's wants for the exchange: (index delta, box or None for the
    whole tensor), pickled and compressed (boxes repeat from layer to layer):
    about 2 bytes a tensor for a tensor-parallel model."""
    shapes = [i.shape for h in headers for i in (h.tensors[n] for n in h.offset_order())]
    rows, last = [], 0
    for i, box in wants:
        rows.append((i - last, None if box == _dist_box.whole(shapes[i]) else box))
        last = i
    return zlib.compress(pickle.dumps(rows, protocol=4), 6)


def _decode(names: list, encoded: bytes, shapes: list) -> dict:
    """A rank's wants as {part key: Want}: a tensor's first part is keyed by
    its name, a second by name#1, and so on (as resolve_targets keys them)."""
    wants, i = [], 0
    for delta, box in pickle.loads(zlib.decompress(encoded)):
        i += delta
        wants.append((i, _dist_box.whole(shapes[i]) if box is None else box))
    out: dict = {}
    for i, box in wants:
        name = names[i]
        key, n = name, 1
        while key in out:
            key, n = f"{name}#{n}", n + 1
        out[key] = Want(name, tuple(tuple(p) for p in box))
    return out


class _Done:
    """The completed Work of a collective on one rank."""

    def wait(self) -> bool:
        return True

    def is_completed(self) -> bool:
        return True


class _SoloDist:
    """The collectives the executor issues, on a group of one rank."""

    class ReduceOp:
        MIN = "min"
        SUM = "sum"

    @staticmethod
    def broadcast(buf: Any, src: int, group: Any = None, async_op: bool = False) -> _Done:
        return _Done()

    @staticmethod
    def all_reduce(t: Any, op: Any = None, group: Any = None, async_op: bool = False) -> _Done:
        return _Done()

    @staticmethod
    def all_to_all_single(out: Any, inp: Any, output_split_sizes: Any = None,
                          input_split_sizes: Any = None, group: Any = None,
                          async_op: bool = False) -> _Done:
        out.copy_(inp[:out.numel()])
        return _Done()

    @staticmethod
    def reduce_scatter_tensor(out: Any, inp: Any, op: Any = None, group: Any = None,
                              async_op: bool = False) -> _Done:
        out.copy_(inp[:out.numel()])
        return _Done()


@dataclass
class _Solo:
    """A load with no process group: the executor's group, of one rank."""
    device: str
    rank: int = 0
    size: int = 1
    group: Any = None
    dist: Any = _SoloDist

    def global_rank(self, rank: int) -> int:
        return rank

    def objects(self, obj: Any) -> list:
        return [obj]

    def agree(self, error: str | None) -> None:
        if error:
            _dist.raise_failures([error])

    def agree_later(self, error: str | None) -> Any:
        return lambda: self.agree(error)
