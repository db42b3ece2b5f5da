# SPDX-License-Identifier: Apache-2.0
"""One fresh process: the first load_checkpoint (nothing warmed up but torch's
CUDA context, which the application owns anyway) and the second, as JSON."""
import json
import os
import sys
import time

t_start = time.perf_counter()
import torch  # noqa: E402

torch.empty(1, device="cuda")
t_cuda = time.perf_counter()
from ufile.safetensors import load_checkpoint  # noqa: E402

t_import = time.perf_counter()

opts = json.loads(sys.argv[2]) if len(sys.argv) > 2 else {}
times, phases = [], []
for _ in range(2):
    t0 = time.perf_counter()
    seen: dict = {}
    out = load_checkpoint(sys.argv[1], device="cuda", times=seen, **opts)
    torch.cuda.synchronize()
    times.append(time.perf_counter() - t0)
    phases.append({k: round(v, 3) for k, v in seen.items()})
    nbytes = sum(t.numel() * t.element_size() for t in out.values())
    del out
print(json.dumps({"startup_s": t_cuda - t_start, "import_ufile_s": t_import - t_cuda,
                  "first_s": times[0], "second_s": times[1],
                  "bytes": nbytes, "phases_s": phases, "pid": os.getpid()}))
