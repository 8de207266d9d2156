"""Reads the records of a Riegeli file: enough of the format to open what XLA writes.

On the H200 (JAX 0.11.2, WORKSPACE.md, issue 11, session 32) a GPU executable in JAX's
compilation cache is a Riegeli file whose one large record is a second Riegeli file; its
records hold the `GpuExecutableProto` and every kernel's cubin, all snappy-compressed, so
no ELF header shows in the raw bytes. What is read here, from the format's documentation
(github.com/google/riegeli, doc/riegeli_records_file_format.md):

- the file is cut into 64 KiB blocks, each starting with a 24-byte block header, which
  is dropped to get the chunks' bytes;
- a chunk is a 40-byte header (header hash, data size, data hash, chunk type, record
  count, decoded size; little-endian) and its data; the first chunk is the file
  signature ('s', no data);
- a simple chunk ('r') holds a compression byte (0: none, 's': snappy), the varint size
  of the compressed record sizes, the sizes (varints), then the records' bytes end to
  end; a compressed block starts with the varint size it decompresses to.

Hashes are not checked. Transposed chunks ('t') and brotli or zstd compression are not
read (`ValueError` names them); XLA's files used neither.
"""

from __future__ import annotations

import struct

SIGNATURE = b"\x83\xaf\x70\xd1\x0d\x88\x4a\x3f"  # the first block header's hash bytes
_BLOCK = 1 << 16
_BLOCK_HEADER = 24
_CHUNK_HEADER = 40


def varint(buffer: bytes, at: int) -> tuple[int, int]:
  """(value, the position after it) of the LEB128 varint at `at`."""
  value = shift = 0
  while True:
    if at >= len(buffer) or shift > 63:
      raise ValueError(f"varint at {at} runs past the data")
    byte = buffer[at]
    at += 1
    value |= (byte & 0x7F) << shift
    if byte < 0x80:
      return value, at
    shift += 7


def unsnappy(data: bytes) -> bytes:
  """Decompresses one snappy block (the raw format: a varint length, then literals and
  back-references of 1, 2 or 4 offset bytes)."""
  size, at = varint(data, 0)
  out = bytearray()
  while at < len(data):
    tag = data[at]
    at += 1
    kind = tag & 3
    if kind == 0:  # a literal; lengths above 60 follow in 1-4 bytes
      length = tag >> 2
      if length >= 60:
        extra = length - 59
        length = int.from_bytes(data[at:at + extra], "little")
        at += extra
      length += 1
      out += data[at:at + length]
      at += length
      continue
    if kind == 1:
      length, offset = 4 + ((tag >> 2) & 7), ((tag >> 5) << 8) | data[at]
      at += 1
    else:
      width = 2 if kind == 2 else 4
      length, offset = 1 + (tag >> 2), int.from_bytes(data[at:at + width], "little")
      at += width
    if not 0 < offset <= len(out):
      raise ValueError(f"snappy back-reference to offset {offset} of {len(out)} bytes")
    start = len(out) - offset
    if offset >= length:
      out += out[start:start + length]
    else:  # overlapping: the copy repeats the last `offset` bytes
      for i in range(length):
        out.append(out[start + i])
  if len(out) != size:
    raise ValueError(f"snappy block decompressed to {len(out)} bytes, expected {size}")
  return bytes(out)


def _block(data: bytes, compression: int) -> bytes:
  if compression == 0:
    return data
  if compression == ord("s"):
    return unsnappy(data[varint(data, 0)[1]:])
  raise ValueError(f"Riegeli compression {chr(compression)!r} is not supported (only "
                   "none and snappy)")


def records(file: bytes) -> list[bytes]:
  """The records of the Riegeli file `file` (which starts with `SIGNATURE`)."""
  if not file.startswith(SIGNATURE):
    raise ValueError("not a Riegeli file: it does not start with the signature")
  chunks = b"".join(file[start + _BLOCK_HEADER:start + _BLOCK]
                    for start in range(0, len(file), _BLOCK))
  found, at = [], 0
  while at + _CHUNK_HEADER <= len(chunks):
    data_size = struct.unpack_from("<Q", chunks, at + 8)[0]
    chunk_type = chunks[at + 24]
    data = chunks[at + _CHUNK_HEADER:at + _CHUNK_HEADER + data_size]
    at += _CHUNK_HEADER + data_size
    if chunk_type == ord("r") and data:
      sizes_length, start = varint(data, 1)
      sizes = _block(data[start:start + sizes_length], data[0])
      values = _block(data[start + sizes_length:], data[0])
      position = offset = 0
      while position < len(sizes):
        size, position = varint(sizes, position)
        found.append(values[offset:offset + size])
        offset += size
    elif chunk_type == ord("t"):
      raise ValueError("transposed Riegeli chunks are not supported")
    elif chunk_type == 0 and data_size == 0:
      break  # zeros past the last chunk
  return found


def leaf_records(file: bytes) -> list[bytes]:
  """`records(file)`, with every record that is itself a Riegeli file replaced by its
  own leaf records."""
  leaves = []
  for record in records(file):
    leaves.extend(leaf_records(record) if record.startswith(SIGNATURE) else [record])
  return leaves
