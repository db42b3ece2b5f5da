# SPDX-License-Identifier: Apache-2.0
"""What the ranks of a collective load exchange before the first read, for a
checkpoint of many tensors, measured on the pickled objects themselves (what
all_gather_object and broadcast_object_list send), without starting a group:

  PYTHONPATH=python /usr/bin/python3 bench/loader/dist_exchange_size.py [TENSORS]

Prints, for 8 and 64 ranks (8 a host), the bytes one rank's state takes in
each exchange and the bytes each rank receives:
- the set-up (options, host, copy): every rank receives every rank's;
- the selection and split (digests; a bitmap when a rank selects a subset):
  every rank receives every rank's;
- the headers, sent by one rank of each host to the host's other ranks (each
  of those receives them once; a rank alone on its copy reads them itself).
A tensor count of 90,000 (default) is a large mixture-of-experts checkpoint."""
from __future__ import annotations

import os
import pickle
import sys
import types
import zlib

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))

from ufile.safetensors import _dist, _dist_setup  # noqa: E402
from ufile.safetensors._format import Header, TensorInfo  # noqa: E402

PER_HOST = 8


def headers(count: int, files: int = 64) -> list:
    """``count`` bf16 expert tensors, named as transformers names them, in
    ``files`` shards."""
    out, per = [], -(-count // files)
    for f in range(files):
        tensors, pos = {}, 0
        for i in range(f * per, min(count, (f + 1) * per)):
            name = f"model.layers.{i // 1000}.mlp.experts.{i % 1000}.down_proj.weight"
            tensors[name] = TensorInfo(name, "BF16", (2048, 768), pos, pos + 2048 * 768 * 2)
            pos += 2048 * 768 * 2
        out.append(Header(f"/ckpt/model-{f + 1:05d}-of-{files:05d}.safetensors", 8 + 4096,
                          8 + 4096 + pos, None, tensors))
    return out


def sizes(count: int) -> dict:
    hs = headers(count)
    group = types.SimpleNamespace(backend_error=lambda: None)
    opts = types.SimpleNamespace(resolved=lambda: types.SimpleNamespace(
        register_buffers=False, max_device_bytes=None, staging_buffers=None, direct=True,
        request_bytes=16 << 20, inflight=16))
    setup, _ = _dist_setup.setup_state(group, types.SimpleNamespace(name="pt"), "cuda:0", opts,
                                       None, "/ckpt", False, _dist.staging_sizes)
    fw = types.SimpleNamespace(name="pt")
    opts = types.SimpleNamespace(register_buffers=False, max_device_bytes=None,
                                 staging_buffers=None)
    states = {}
    for label, select in (("all selected", None),
                          ("an expert of each layer", lambda n: ".experts.3." in n),
                          ("a random ninth", lambda n: zlib.crc32(n.encode()) % 9 == 0)):
        states[label], _ = _dist._local_state(lambda: hs, fw, {r"down_proj": 1}, select,
                                              "cuda:0", opts)
        states[label]["identity"] = "0" * 64
    idents = [(os.path.basename(h.path), h.file_size, "0" * 64) for h in hs]
    return {"setup": len(pickle.dumps(setup)),
            **{f"state, {k}": len(pickle.dumps(v)) for k, v in states.items()},
            "headers": len(_dist_setup.pack((hs, idents, None)))}


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 90_000
    s = sizes(count)
    print(f"{count} tensors; one rank's pickled objects: " +
          ", ".join(f"{k} {v} B" for k, v in s.items()))
    for ranks in (8, 64):
        print(f"{ranks} ranks ({ranks // PER_HOST} hosts of {PER_HOST}), bytes each rank "
              f"receives (the group as a whole: {ranks} times that):")
        for k, v in s.items():
            if k.startswith("state, "):
                print(f"  every rank's set-up and state, {k[7:]}: {ranks * (s['setup'] + v)}")
        print(f"  the headers, to each of the {ranks - ranks // PER_HOST} ranks that do not "
              f"read them: {s['headers']}")

if __name__ == "__main__":
    main()
