"""Reads and writes safetensors files with torch alone.

Debian 12 packages PyTorch but not the `safetensors` package; this module reads and writes the
same format (8-byte little-endian header length, a JSON header {name: {dtype, shape,
data_offsets}, "__metadata__": {str: str}}, then the raw little-endian tensor bytes), so Spotlight's
checkpoints load with either. With `safetensors` installed, `safetensors.torch.load_file` works too.
"""

import json
import struct

import torch

_DTYPES = {
    "F64": torch.float64,
    "F32": torch.float32,
    "F16": torch.float16,
    "BF16": torch.bfloat16,
    "I64": torch.int64,
    "I32": torch.int32,
    "U8": torch.uint8,
    "BOOL": torch.bool,
}
_NAMES = {dtype: name for name, dtype in _DTYPES.items()}
# Element types of the same size whose numpy view gives the raw bytes.
_RAW = {torch.float16: torch.int16, torch.bfloat16: torch.int16, torch.bool: torch.uint8}


def _to_bytes(tensor):
    t = tensor.detach().to("cpu").contiguous().view(-1)
    if t.dtype in _RAW:
        t = t.view(_RAW[t.dtype])
    return t.numpy().tobytes()


def save_file(tensors, path, metadata=None):
    """Writes {name: tensor} (and string metadata) to `path`."""
    header = {}
    blobs = []
    offset = 0
    for name in sorted(tensors):
        tensor = tensors[name]
        if tensor.dtype not in _NAMES:
            raise ValueError(f"safetensors: tensor '{name}' has unsupported dtype {tensor.dtype}")
        blob = _to_bytes(tensor)
        header[name] = {
            "dtype": _NAMES[tensor.dtype],
            "shape": list(tensor.shape),
            "data_offsets": [offset, offset + len(blob)],
        }
        blobs.append(blob)
        offset += len(blob)
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as out:
        out.write(struct.pack("<Q", len(text)))
        out.write(text)
        for blob in blobs:
            out.write(blob)


def load_file_with_metadata(path):
    """Returns ({name: tensor}, {key: value}) from `path`; raises ValueError when malformed."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 8:
        raise ValueError(f"safetensors: {path} is too short")
    (length,) = struct.unpack("<Q", data[:8])
    if 8 + length > len(data):
        raise ValueError(f"safetensors: {path}: header length {length} exceeds the file")
    header = json.loads(data[8 : 8 + length])
    body = memoryview(data)[8 + length :]
    metadata = header.pop("__metadata__", {}) or {}
    tensors = {}
    for name, entry in header.items():
        dtype = _DTYPES.get(entry["dtype"])
        if dtype is None:
            raise ValueError(f"safetensors: tensor '{name}' has unsupported dtype {entry['dtype']}")
        begin, end = entry["data_offsets"]
        raw = bytearray(body[begin:end])
        if dtype in _RAW:
            flat = torch.frombuffer(raw, dtype=_RAW[dtype]).view(dtype) if raw else torch.empty(0, dtype=dtype)
        else:
            flat = torch.frombuffer(raw, dtype=dtype) if raw else torch.empty(0, dtype=dtype)
        tensors[name] = flat.reshape(entry["shape"]).clone()
    return tensors, metadata


def load_file(path):
    """Returns {name: tensor} from `path`."""
    return load_file_with_metadata(path)[0]
