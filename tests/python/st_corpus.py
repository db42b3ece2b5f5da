# SPDX-License-Identifier: Apache-2.0
"""A seeded corpus of safetensors files for fuzzing: valid files from a writer
of its own (header text built here, not by the code under test), and mutations
of them: header length, JSON text, numbers, nesting, dtypes, shapes, offsets,
names, metadata, the entry's form and the data's length. File i depends only
on (seed, i), so any range of the corpus can be rebuilt alone.

  make(seed, i) -> (what, file bytes); write(dir, seed, start, count)"""
from __future__ import annotations

import json
import random
import struct

# dtype -> bits per element, written independently of the package under test.
BITS = {"BOOL": 8, "U8": 8, "I8": 8, "F8_E5M2": 8, "F8_E4M3": 8, "F8_E8M0": 8,
        "F8_E4M3FNUZ": 8, "F8_E5M2FNUZ": 8, "I16": 16, "U16": 16, "F16": 16, "BF16": 16,
        "I32": 32, "U32": 32, "F32": 32, "C64": 64, "F64": 64, "I64": 64, "U64": 64}
COMMON = ["F32", "F16", "BF16", "U8", "I64", "I32", "BOOL", "F64", "I8", "I16"]
NAMES = ["w", "model.layers.0.weight", "a", "b", "z", "x.y", "é", "日本", "\U0001f600",
         'q"uote', "back\\slash", "tab\t", "", "__meta", "0", "lm_head.weight"]
NUMBERS = ["-0", "-1", "1e400", "NaN", "Infinity", "-Infinity", "4.0", "1e2", "0.5",
           str(1 << 64), str((1 << 64) - 1), str(1 << 63), "01", "1" + "0" * 400, "true",
           "null", '"5"', "[]", "{}", "-9223372036854775809"]
BAD_DTYPES = ["F4", "F6_E2M3", "F6_E3M2", "u8", "F33", "", "f32", "F8_E4M3FN", 5, None,
              {"U8": None}, ["U8"]]
SHAPES = [[], [0], [4294967296, 4294967296, 0], [0, 1 << 62, 4], [0, (1 << 64) - 1],
          [1 << 64], [-1], [2, -2], [[2]], [1 << 61], [0, 1 << 61], [3, 0, 1 << 40], [1] * 40]
DEPTHS = [1, 2, 125, 126, 127, 128, 129, 1000, 3000]


def _name(rng: random.Random) -> str:
    base = rng.choice(NAMES)
    return base + str(rng.randrange(1000)) if rng.random() < 0.7 else base


def _js(value: object, rng: random.Random) -> str:
    return json.dumps(value, ensure_ascii=rng.random() < 0.5)


class Doc:
    """A header as text pieces: meta (text or None), entries [name text,
    {field: value text}, form] and the data section."""

    def __init__(self, rng: random.Random):
        self.rng, self.meta, self.entries, self.data = rng, None, [], b""
        self.align, self.lead = rng.choice([1, 8, 8, 16]), ""

    def text(self) -> str:
        parts = [] if self.meta is None else [f'"__metadata__": {self.meta}']
        for name, fields, form in self.entries:
            if form == "array":
                body = "[" + ", ".join(fields[k] for k in ("dtype", "shape", "data_offsets")
                                       if k in fields) + "]"
            else:
                body = "{" + ", ".join(f"{k}: {v}" if k.startswith('"') else f'"{k}": {v}'
                                       for k, v in fields.items()) + "}"
            parts.append(f"{name}: {body}")
        return self.lead + "{" + ", ".join(parts) + "}"

    def encode(self, length_delta: int | None = None) -> bytes:
        raw = self.text().encode("utf-8", "surrogatepass")
        raw += b" " * ((self.align - (8 + len(raw)) % self.align) % self.align)
        n = len(raw) if length_delta is None else max(0, len(raw) + length_delta)
        return struct.pack("<Q", n) + raw + self.data


def valid(rng: random.Random) -> Doc:
    doc, names = Doc(rng), []
    if rng.random() < 0.4:
        doc.meta = _js({_name(rng): _name(rng) for _ in range(rng.randrange(4))}, rng)
    for _ in range(rng.randrange(7)):
        name = _name(rng)
        while name in names or name == "__metadata__":
            name += "_"
        names.append(name)
    pos, order = 0, list(range(len(names)))
    rng.shuffle(order)  # data order differs from header order
    layout = {}
    for i in order:
        dtype = rng.choice(COMMON if rng.random() < 0.8 else sorted(BITS))
        shape = [rng.choice([0, 1, 2, 3, 5, 8]) for _ in range(rng.randrange(4))]
        n = BITS[dtype] // 8
        for d in shape:
            n *= d
        layout[i] = (dtype, shape, pos, pos + n)
        doc.data += bytes(rng.randrange(256) for _ in range(n))
        pos += n
    for i, name in enumerate(names):
        dtype, shape, b, e = layout[i]
        fields = {"dtype": f'"{dtype}"', "shape": json.dumps(shape),
                  "data_offsets": json.dumps([b, e])}
        if rng.random() < 0.1:
            fields["extra"] = json.dumps({"k": [1, 2.5, None, "s"]})
        form = "array" if rng.random() < 0.05 else "object"
        doc.entries.append([_js(name, rng), fields, form])
    return doc


def _entry(doc: Doc):
    return doc.rng.choice(doc.entries) if doc.entries else None


def _mut_number(doc: Doc) -> str:
    e = _entry(doc)
    if e is None:
        return "none"
    field = doc.rng.choice(["shape", "data_offsets"])
    values = json.loads(e[1][field]) if e[1][field].startswith("[") else []
    if not values:
        return "none"
    i = doc.rng.randrange(len(values))
    texts = [json.dumps(v) for v in values]
    texts[i] = doc.rng.choice(NUMBERS)
    e[1][field] = "[" + ", ".join(texts) + "]"
    return f"number {field}"


def _mut_nesting(doc: Doc) -> str:
    e, depth = _entry(doc), doc.rng.choice(DEPTHS)
    inner = "[" * depth + "]" * depth if doc.rng.random() < 0.5 else \
        '{"a": ' * depth + "1" + "}" * depth
    if e is None:
        doc.meta = None
        doc.entries.append(['"n"', {"dtype": '"U8"', "shape": "[0]",
                                    "data_offsets": json.dumps([len(doc.data)] * 2),
                                    "x": inner}, "object"])
    else:
        e[1]["x"] = inner
    return f"nesting {depth}"


def _mut_dtype(doc: Doc) -> str:
    e = _entry(doc)
    if e is None:
        return "none"
    e[1]["dtype"] = json.dumps(doc.rng.choice(BAD_DTYPES + sorted(BITS)))
    return "dtype"


def _mut_shape(doc: Doc) -> str:
    e = _entry(doc)
    if e is None:
        return "none"
    shape = doc.rng.choice(SHAPES)
    e[1]["shape"] = json.dumps(shape)
    if doc.rng.random() < 0.5:  # keep the offsets of an empty tensor consistent
        b = json.loads(e[1]["data_offsets"])[0] if e[1]["data_offsets"].startswith("[") else 0
        e[1]["data_offsets"] = json.dumps([b, b])
    return "shape"


def _mut_offsets(doc: Doc) -> str:
    rng, e = doc.rng, _entry(doc)
    if e is None:
        return "none"
    kind = rng.randrange(5)
    if kind == 0 and len(doc.entries) > 1:
        other = rng.choice(doc.entries)
        e[1]["data_offsets"], other[1]["data_offsets"] = \
            other[1]["data_offsets"], e[1]["data_offsets"]
    elif kind == 1:
        b, end = json.loads(e[1]["data_offsets"])
        e[1]["data_offsets"] = json.dumps([end, b])
    elif kind == 2:
        b, end = json.loads(e[1]["data_offsets"])
        d = rng.choice([-8, -1, 1, 4, 1 << 32])
        e[1]["data_offsets"] = json.dumps([max(0, b + d), max(0, end + d)])
    else:
        e[1]["data_offsets"] = rng.choice(["[0]", "[0, 1, 2]", '{"0": 0}', "0", "[0, 0]"])
    return "offsets"


def _mut_name(doc: Doc) -> str:
    rng, e = doc.rng, _entry(doc)
    if e is None:
        return "none"
    kind = rng.randrange(5)
    if kind == 0 and len(doc.entries) > 1:
        rng.choice(doc.entries)[0] = e[0]
        return "name twice"
    e[0] = ['"w\\ud800"', '"\\udc00"', '"\\ud83d\\ude00"', '"__metadata__"',
            '"c\\u0001"', '"raw\x01"', '"' + "n" * 5000 + '"'][rng.randrange(7)]
    return "name"


def _mut_meta(doc: Doc) -> str:
    doc.meta = doc.rng.choice(['{"k": "1", "k": "2"}', '{"k": 1}', "null", "[]",
                               '{"k": "\\ud800"}', '{"k": null}', '"s"', "{}"])
    if doc.rng.random() < 0.2:
        doc.entries.insert(0, ['"__metadata__"', {"dtype": '"U8"'}, "object"])
    return "metadata"


def _mut_form(doc: Doc) -> str:
    e = _entry(doc)
    if e is None:
        return "none"
    if doc.rng.random() < 0.5:
        e[2] = "array"
        if doc.rng.random() < 0.5:
            e[1].pop(doc.rng.choice(["dtype", "shape", "data_offsets"]))
    else:
        k = doc.rng.choice(["dtype", "shape", "data_offsets"])
        e[1]['"' + k + '"'] = e[1][k]  # the same field twice
    return "form"


def _mut_data(doc: Doc) -> str:
    if doc.rng.random() < 0.5 or not doc.data:
        doc.data += b"\x00" * doc.rng.choice([1, 7, 4096])
    else:
        doc.data = doc.data[:-doc.rng.choice([1, len(doc.data)])]
    return "data length"


def _bytes_noise(rng: random.Random, data: bytes) -> bytes:
    """A byte edit inside the header text, the length field kept."""
    n = struct.unpack("<Q", data[:8])[0]
    if n == 0:
        return data
    pos, b = 8 + rng.randrange(n), bytearray(data)
    kind = rng.randrange(3)
    if kind == 0:
        b[pos] = rng.choice(b'{}[],:"\\ 0123456789-eE.nNtfaI\xff\xc3')
    elif kind == 1:
        b[pos] = 0x20
    else:
        b[pos:pos] = bytes([rng.choice(b'{["\\,')])
        del b[8 + n]  # the header keeps its length
    return bytes(b)


MUTATIONS = [_mut_number, _mut_nesting, _mut_dtype, _mut_shape, _mut_offsets, _mut_name,
             _mut_meta, _mut_form, _mut_data]


def _apply(mutation, doc: Doc) -> str:
    try:
        return mutation(doc)
    except (ValueError, TypeError, KeyError):  # an earlier mutation left nothing to edit
        return "none"


def make(seed: int, i: int) -> tuple[str, bytes]:
    """File i of the corpus of seed: (what it is, its bytes)."""
    rng = random.Random(f"{seed}:{i}")
    doc = valid(rng)
    roll = rng.random()
    if roll < 0.25:
        return "valid", doc.encode()
    if roll < 0.35:
        delta = rng.choice([-9, -1, 1, 8, 1 << 20, 100_000_001, 1 << 63])
        return f"header length {delta:+d}", doc.encode(delta)
    if roll < 0.45:
        return "json bytes", _bytes_noise(rng, doc.encode())
    what = [_apply(rng.choice(MUTATIONS), doc) for _ in range(rng.choice([1, 1, 1, 2]))]
    if rng.random() < 0.05:
        doc.lead = rng.choice([" ", "\n", "\t"])
        what.append("leading whitespace")
    return "+".join(what), doc.encode()


def write(directory: str, seed: int, start: int, count: int) -> list[tuple[str, str]]:
    """Files start..start+count of the corpus written to directory: [(path, what)]."""
    import os
    os.makedirs(directory, exist_ok=True)
    out = []
    for i in range(start, start + count):
        what, data = make(seed, i)
        path = os.path.join(directory, f"s{seed}-{i:05d}.safetensors")
        with open(path, "wb") as f:
            f.write(data)
        out.append((path, what))
    return out
