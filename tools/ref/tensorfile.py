"""Reader and writer of sextant tensor files (.sxt), written from docs/FORMATS.md alone.

Responsible for: the byte layout (magics, version, JSON header, 64-byte aligned data, crc32 trailer), the
atomic write (temporary file, fsync, rename, fsync of the directory), and every check a reader must make.
Not responsible for: what the tensors mean (tools/ref/make_fixtures.py decides names and meta).

Tensors are numpy arrays; dtypes f32, i32 and u8 map to little-endian float32, int32 and uint8.
"""
import json
import os
import struct
import zlib

import numpy as np

MAGIC = b"SXTENSOR"
END_MAGIC = b"SXEN"
VERSION = 1
ALIGN = 64
DTYPES = {"f32": np.dtype("<f4"), "i32": np.dtype("<i4"), "u8": np.dtype("u1")}


def _pad(n):
    return (n + ALIGN - 1) // ALIGN * ALIGN


def _code_of(dtype):
    for code, dt in DTYPES.items():
        if np.dtype(dtype) == dt or np.dtype(dtype).newbyteorder("<") == dt:
            return code
    raise ValueError(f"unsupported dtype {dtype}")


def encode(kind, meta, tensors):
    """Returns the bytes of a tensor file. tensors: list of (name, numpy array) in file order."""
    entries, blobs, off = [], [], 0
    for name, arr in tensors:
        code = _code_of(arr.dtype)
        data = np.ascontiguousarray(arr, dtype=DTYPES[code]).tobytes()
        entries.append({"name": name, "dtype": code, "shape": list(arr.shape), "offset": off, "nbytes": len(data)})
        blobs.append((off, data))
        off = _pad(off + len(data))
    header = json.dumps({"kind": kind, "meta": meta, "tensors": entries}, separators=(",", ":")).encode("utf-8")
    start = _pad(24 + len(header))
    end = blobs[-1][0] + len(blobs[-1][1]) if blobs else 0
    buf = bytearray(start + end)
    buf[0:24] = MAGIC + struct.pack("<IIQ", VERSION, 0, len(header))
    buf[24:24 + len(header)] = header
    for o, data in blobs:
        buf[start + o:start + o + len(data)] = data
    buf += struct.pack("<I", zlib.crc32(buf) & 0xFFFFFFFF) + END_MAGIC
    return bytes(buf)


def write(path, kind, meta, tensors):
    """Writes encode(kind, meta, tensors) to `path` atomically (temp file + fsync + rename + dir fsync)."""
    data = encode(kind, meta, tensors)
    d = os.path.dirname(os.path.abspath(path))
    tmp = os.path.join(d, f".{os.path.basename(path)}.tmp{os.getpid()}")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fd = os.open(d, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def decode(buf):
    """Parses tensor-file bytes; returns (kind, meta, dict name -> numpy array). Raises ValueError."""
    if len(buf) < 32 or buf[:8] != MAGIC or buf[-4:] != END_MAGIC:
        raise ValueError("not a sextant tensor file (bad magic)")
    version, _reserved, jlen = struct.unpack_from("<IIQ", buf, 8)
    if version != VERSION:
        raise ValueError(f"unsupported tensor file version {version}")
    (crc,) = struct.unpack_from("<I", buf, len(buf) - 8)
    if zlib.crc32(buf[:-8]) & 0xFFFFFFFF != crc:
        raise ValueError("checksum mismatch")
    if 24 + jlen > len(buf) - 8:
        raise ValueError("JSON header runs past the end of the file")
    hdr = json.loads(bytes(buf[24:24 + jlen]).decode("utf-8"))
    start, limit = _pad(24 + jlen), len(buf) - 8
    out = {}
    for e in hdr["tensors"]:
        dt = DTYPES[e["dtype"]]
        off, nb, shape = e["offset"], e["nbytes"], tuple(e["shape"])
        if nb != int(np.prod(shape, dtype=np.int64)) * dt.itemsize:
            raise ValueError(f"tensor {e['name']}: nbytes does not match shape")
        if off % ALIGN or start + off + nb > limit:
            raise ValueError(f"tensor {e['name']}: misaligned or outside the file")
        out[e["name"]] = np.frombuffer(buf, dtype=dt, count=nb // dt.itemsize, offset=start + off).reshape(shape)
    return hdr["kind"], hdr["meta"], out


def read(path):
    """decode() of the file at `path`."""
    with open(path, "rb") as f:
        return decode(f.read())
