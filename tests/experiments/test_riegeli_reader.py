"""Riegeli records and snappy blocks, on files written here the way the format lays them out."""

from __future__ import annotations

import struct

import pytest

from experiments import riegeli_reader

_BLOCK = 1 << 16


def varint_bytes(value: int) -> bytes:
  out = bytearray()
  while value >= 0x80:
    out.append(value & 0x7F | 0x80)
    value >>= 7
  return bytes(out + bytes([value]))


def snappy_literals(data: bytes, piece: int = 256) -> bytes:
  """A valid snappy block of literals only, `piece` <= 256 bytes each (a 1-byte length)."""
  pieces = (data[i:i + piece] for i in range(0, len(data), piece))
  return varint_bytes(len(data)) + b"".join(bytes([60 << 2, len(p) - 1]) + p for p in pieces)


def simple_chunk(records: list[bytes], compression: str, piece: int) -> bytes:
  sizes = b"".join(varint_bytes(len(record)) for record in records)
  values = b"".join(records)
  if compression == "s":  # a compressed block starts with the size it decompresses to
    sizes = varint_bytes(len(sizes)) + snappy_literals(sizes, piece)
    values = varint_bytes(len(values)) + snappy_literals(values, piece)
  kind = bytes([ord(compression)]) if compression else b"\x00"
  data = kind + varint_bytes(len(sizes)) + sizes + values
  header = (struct.pack("<QQQ", 0, len(data), 0) + b"r" + len(records).to_bytes(7, "little")
            + struct.pack("<Q", len(values)))
  return header + data


def riegeli_file(records: list[bytes], compression: str = "s", piece: int = 256) -> bytes:
  """The signature chunk and one simple chunk, with a 24-byte block header every 64 KiB
  (the first one starting with the signature's bytes); snappy literals of `piece` bytes."""
  signature_chunk = struct.pack("<QQQ", 0, 0, 0) + b"s" + bytes(15)
  chunks = signature_chunk + simple_chunk(records, compression, piece)
  out = bytearray()
  for start in range(0, len(chunks), _BLOCK - 24):
    out += (riegeli_reader.SIGNATURE + bytes(16)) if not out else bytes(24)
    out += chunks[start:start + _BLOCK - 24]
  return bytes(out)


def test_unsnappy_copies_overlapping_and_far_and_reads_long_literals():
  long_literal = bytes(range(200))
  block = (varint_bytes(13 + 200 + 6)
           + b"\x08abc"                   # literal "abc"
           + bytes([(9 - 4) << 2 | 1, 3])  # copy 9 bytes from 3 back: overlaps itself
           + b"\x00X"                     # literal "X"
           + bytes([60 << 2, 199]) + long_literal
           + bytes([(6 - 1) << 2 | 2]) + struct.pack("<H", 213))  # 6 bytes from the start
  assert riegeli_reader.unsnappy(block) == b"abcabcabcabcX" + long_literal + b"abcabc"
  with pytest.raises(ValueError, match="back-reference"):
    riegeli_reader.unsnappy(varint_bytes(4) + bytes([0 << 2 | 1, 1]))


@pytest.mark.parametrize("compression", ["", "s"])
def test_records_cross_block_headers(compression):
  records = [b"first", bytes(range(256)) * 300, b"", b"last"]  # 76,800 bytes: two blocks
  file = riegeli_file(records, compression)
  assert len(file) > _BLOCK
  assert riegeli_reader.records(file) == records


def test_leaf_records_open_nested_files():
  inner = riegeli_file([b"\x7fELF kernel", b"proto"])
  assert riegeli_reader.leaf_records(riegeli_file([b"header", inner])) == [
      b"header", b"\x7fELF kernel", b"proto"]


def test_unsupported_input_is_named():
  with pytest.raises(ValueError, match="signature"):
    riegeli_reader.records(b"not riegeli")
  file = bytearray(riegeli_file([b"x" * 10]))
  file[24 + 40 + 40] = ord("b")  # the chunk's compression byte: brotli
  with pytest.raises(ValueError, match="compression 'b'"):
    riegeli_reader.records(bytes(file))
