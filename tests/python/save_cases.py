# SPDX-License-Identifier: Apache-2.0
"""The inputs of the save corpus: each case builds the same tensors, byte for
byte, on any machine (seeded numpy bytes), so files the safetensors package
wrote on one machine (tests/python/save_make_corpus.py) can be compared with
ufile's save of the same inputs on another.

``CASES``: name -> (framework, builder); a builder takes the framework module
(torch or numpy) and returns (tensors, metadata), or raises Unavailable when
the installed framework lacks a dtype the case needs. ``REFUSALS``: inputs the
package refuses, with the same shape."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

# safetensors dtype -> torch attribute (what torch calls it); numpy names where numpy has it.
TORCH_DTYPES = {
    "BOOL": "bool", "U8": "uint8", "I8": "int8", "I16": "int16", "U16": "uint16",
    "F16": "float16", "BF16": "bfloat16", "I32": "int32", "U32": "uint32", "F32": "float32",
    "C64": "complex64", "F64": "float64", "I64": "int64", "U64": "uint64",
    "F8_E5M2": "float8_e5m2", "F8_E4M3": "float8_e4m3fn", "F8_E8M0": "float8_e8m0fnu",
    "F8_E4M3FNUZ": "float8_e4m3fnuz", "F8_E5M2FNUZ": "float8_e5m2fnuz",
}
NUMPY_DTYPES = {
    "BOOL": "bool", "U8": "uint8", "I8": "int8", "I16": "int16", "U16": "uint16",
    "F16": "float16", "I32": "int32", "U32": "uint32", "F32": "float32", "C64": "complex64",
    "F64": "float64", "I64": "int64", "U64": "uint64",
}
_ITEM = {"bool": 1, "uint8": 1, "int8": 1, "int16": 2, "uint16": 2, "float16": 2,
         "bfloat16": 2, "int32": 4, "uint32": 4, "float32": 4, "complex64": 8, "float64": 8,
         "int64": 8, "uint64": 8}


class Unavailable(Exception):
    """The installed framework lacks what the case needs."""


def raw(seed: int, n: int, boolean: bool = False) -> bytes:
    """n deterministic bytes (0/1 for bool)."""
    b = np.random.RandomState(seed).bytes(n)
    if boolean:
        b = (np.frombuffer(b, np.uint8) & 1).tobytes()
    return b


def item_size(attr: str) -> int:
    return _ITEM.get(attr, 1)  # float8 types are one byte


def t(torch: Any, attr: str, shape: tuple, seed: int) -> Any:
    """A torch tensor of ``attr`` and ``shape`` holding raw(seed) bytes."""
    dt = getattr(torch, attr, None)
    if dt is None:
        raise Unavailable(f"torch {torch.__version__} has no {attr}")
    n = int(np.prod(shape, dtype=np.int64)) if shape else 1
    data = raw(seed, n * item_size(attr), attr == "bool")
    u8 = torch.from_numpy(np.frombuffer(data, np.uint8).copy())
    if n == 0:
        return torch.zeros(shape, dtype=dt)
    return u8.view(dt).reshape(shape)


def a(np_: Any, name: str, shape: tuple, seed: int) -> Any:
    """A numpy array of dtype ``name`` and ``shape`` holding raw(seed) bytes."""
    dt = np_.dtype(name)
    n = int(np_.prod(shape, dtype=np_.int64)) if shape else 1
    data = raw(seed, n * dt.itemsize, name == "bool")
    return np_.frombuffer(data, np_.uint8).copy().view(dt).reshape(shape)


_OLD_TORCH = ("BOOL", "U8", "I8", "I16", "F16", "BF16", "I32", "F32", "C64", "F64", "I64")
_NEW_TORCH = _OLD_TORCH + ("U16", "U32", "U64", "F8_E5M2", "F8_E4M3", "F8_E8M0")


def _all_dtypes_pt(names: tuple) -> Callable:
    """One tensor of each dtype of ``names`` (every one must exist in torch)."""
    def build(torch: Any) -> tuple:
        return {f"w.{st.lower()}": t(torch, TORCH_DTYPES[st], (3, 5), 100 + i)
                for i, st in enumerate(names)}, None
    return build


def _one_dtype(st: str) -> Callable:
    def build(torch: Any) -> tuple:
        return {"x": t(torch, TORCH_DTYPES[st], (2, 3, 4), 7), "s": t(torch, "float32", (5,), 8)
                }, None
    return build


def _one_dtype_np(st: str) -> Callable:
    def build(np_: Any) -> tuple:
        return {"x": a(np_, NUMPY_DTYPES[st], (2, 3, 4), 7), "s": a(np_, "float32", (5,), 8)
                }, None
    return build


def _empty_and_scalar(torch: Any) -> tuple:
    return {"empty0": torch.zeros((0,), dtype=torch.float32),
            "empty2": torch.zeros((3, 0, 2), dtype=torch.float16),
            "scalar": t(torch, "float64", (), 3), "scalar_i8": t(torch, "int8", (), 4),
            "x": t(torch, "bfloat16", (4, 4), 5)}, None


def _many(torch: Any) -> tuple:
    attrs = ["float32", "bfloat16", "int8", "float16", "int64", "bool", "uint8", "int32"]
    out = {}
    for i in range(300):
        attr = attrs[i % len(attrs)]
        out[f"model.layers.{i // 8}.p{i % 8}.weight"] = t(torch, attr, (i % 7 + 1, 3), 1000 + i)
    return out, {"format": "pt"}


def _names(torch: Any) -> tuple:
    names = ["a", "ab", "abc", "Z", "é", "名前", 'quote"d', "back\\slash", "tab\tnew\nline",
             "ctl\x01\x1f", "del\x7f", "emoji\U0001F600", "space name", "/slash"]
    return {n: t(torch, "float32", (i + 1,), 200 + i) for i, n in enumerate(names)}, None


def _padding(torch: Any) -> tuple:
    """Header lengths at every residue mod 8: names 1..16 characters long."""
    return {"n" * k: t(torch, "uint8", (k,), 300 + k) for k in range(1, 17)}, None


def _meta(md: dict | None) -> Callable:
    def build(torch: Any) -> tuple:
        return {"w": t(torch, "float32", (2, 2), 9)}, md
    return build


def _disjoint_views(torch: Any) -> tuple:
    """Two disjoint halves of one storage: the package saves them."""
    base = t(torch, "float32", (4, 3), 11)
    top, bottom = base.split(2)
    return {"top": top, "bottom": bottom}, None


def _np_mixed(np_: Any) -> tuple:
    out = {f"a{i}": a(np_, n, (2, i + 1), 400 + i) for i, n in enumerate(NUMPY_DTYPES.values())}
    out["scalar"] = a(np_, "float64", (), 5)
    out["empty"] = np_.zeros((0, 4), dtype=np_.int16)
    return out, {"format": "np"}


def _np_layouts(np_: Any) -> tuple:
    """numpy inputs the package converts: a transposed (non-contiguous) array,
    a Fortran-order one, a big-endian one (byte-swapped to little endian)."""
    base = a(np_, "float32", (4, 6), 12)
    return {"transposed": base.T, "fortran": np_.asfortranarray(a(np_, "int32", (3, 5), 13)),
            "bigendian": a(np_, "float64", (2, 3), 14).astype(">f8"),
            "strided": base[:, ::2]}, None


CASES: dict = {
    "pt_all_dtypes": ("pt", _all_dtypes_pt(_OLD_TORCH)),  # torch 1.13's
    "pt_all_dtypes_new": ("pt", _all_dtypes_pt(_NEW_TORCH)),  # torch 2.x
    "pt_empty_scalar": ("pt", _empty_and_scalar),
    "pt_many": ("pt", _many),
    "pt_names": ("pt", _names),
    "pt_padding": ("pt", _padding),
    "pt_meta_none": ("pt", _meta(None)),
    "pt_meta_empty": ("pt", _meta({})),
    "pt_meta_one": ("pt", _meta({"format": "pt"})),
    "pt_meta_unicode": ("pt", _meta({"name\"é": "value\n名前"})),
    "pt_meta_many": ("pt", _meta({"format": "pt", "step": "1000", "b": "2", "a": "1"})),
    "pt_no_tensors": ("pt", lambda torch: ({}, None)),
    "pt_no_tensors_meta": ("pt", lambda torch: ({}, {"format": "pt"})),
    "pt_disjoint_views": ("pt", _disjoint_views),
    "np_mixed": ("np", _np_mixed),
    "np_layouts": ("np", _np_layouts),
    "np_empty_scalar": ("np", lambda np_: ({"e": np_.zeros((2, 0), np_.float32),
                                            "s": a(np_, "int64", (), 6)}, None)),
}
for _st in TORCH_DTYPES:
    CASES[f"pt_dtype_{_st.lower()}"] = ("pt", _one_dtype(_st))
for _st in NUMPY_DTYPES:
    CASES[f"np_dtype_{_st.lower()}"] = ("np", _one_dtype_np(_st))

# Cases whose metadata has more than one key: the package writes __metadata__'s
# keys in the order of a Rust HashMap (random per process), so only the
# structure, not the byte order of that map, can be compared.
UNORDERED_METADATA = {"pt_meta_many"}


def _shared(torch: Any) -> tuple:
    base = t(torch, "float32", (4, 3), 20)
    return {"a": base, "b": base[1:]}, None


def _same(torch: Any) -> tuple:
    base = t(torch, "float32", (4, 3), 21)
    return {"a": base, "b": base}, None


def _noncontig(torch: Any) -> tuple:
    return {"ok": t(torch, "float32", (2,), 22), "nc": t(torch, "float32", (4, 3), 23).T}, None


REFUSALS: dict = {
    "pt_shared": ("pt", _shared),
    "pt_same_tensor": ("pt", _same),
    "pt_noncontiguous": ("pt", _noncontig),
    "pt_sparse": ("pt", lambda torch: ({"s": torch.eye(3).to_sparse()}, None)),
    "pt_not_a_tensor": ("pt", lambda torch: ({"x": [1, 2, 3]}, None)),
    "pt_not_a_dict": ("pt", lambda torch: ([("x", t(torch, "float32", (2,), 1))], None)),
    "pt_key_not_str": ("pt", lambda torch: ({1: t(torch, "float32", (2,), 1)}, None)),
    "pt_meta_value_not_str": ("pt", lambda torch: ({"x": t(torch, "float32", (2,), 1)},
                                                   {"step": 3})),
    "pt_meta_key_not_str": ("pt", lambda torch: ({"x": t(torch, "float32", (2,), 1)},
                                                 {3: "x"})),
    "pt_meta_not_a_dict": ("pt", lambda torch: ({"x": t(torch, "float32", (2,), 1)},
                                                [("a", "b")])),
    "pt_meta_name_metadata": ("pt", lambda torch: ({"__metadata__": t(torch, "float32", (2,),
                                                                      1)}, None)),
    "pt_complex128": ("pt", lambda torch: ({"c": torch.zeros(2, dtype=torch.complex128)},
                                           None)),
    "np_object": ("np", lambda np_: ({"o": np_.array([1, "a"], dtype=object)}, None)),
    "np_float128": ("np", lambda np_: ({"q": np_.zeros(2, dtype=np_.longdouble)}, None)),
    "np_complex128": ("np", lambda np_: ({"c": np_.zeros(2, dtype=np_.complex128)}, None)),
    "np_meta_value_not_str": ("np", lambda np_: ({"x": np_.zeros(2, np_.float32)},
                                                 {"step": 3})),
}


def build(kind: str, fw: Any) -> tuple:
    """(tensors, metadata) of case ``kind`` (CASES or REFUSALS)."""
    framework, builder = CASES[kind] if kind in CASES else REFUSALS[kind]
    return builder(fw)
