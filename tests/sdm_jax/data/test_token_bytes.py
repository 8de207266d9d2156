"""The bytes-per-token table: built from a decode function, stored as .npy, checked."""

from __future__ import annotations

import numpy as np
import pytest

from sdm_jax.data import token_bytes


def test_table_from_decoder_counts_bytes_and_zeroes_specials():
  pieces = {0: b"a", 1: "é".encode(), 2: None, 3: b"hello", 4: b""}
  table = token_bytes.table_from_decoder(pieces.get, 5)
  np.testing.assert_array_equal(table, [1, 2, 0, 5, 0])
  assert table.dtype == np.int32 and not table.flags.writeable


def test_save_and_load_round_trip(tmp_path):
  table = np.random.default_rng(0).integers(0, 9, 300)
  path = tmp_path / "token_bytes.npy"
  token_bytes.save_table(path, table)
  np.testing.assert_array_equal(token_bytes.load_table(path), table)


@pytest.mark.parametrize("table, message", [
    (np.zeros((2, 3), np.int32), "1-D integer"), (np.array([1.0, 2.0]), "1-D integer"),
    (np.array([], np.int32), "non-empty"), (np.array([1, -2, 3]), "negative byte count"),
    (np.zeros(4, np.int32), "every token id 0 bytes")])
def test_check_table_rejects_what_cannot_be_a_table(table, message):
  with pytest.raises(ValueError, match=message):
    token_bytes.check_table(table, "table")


def test_load_errors_name_the_file(tmp_path):
  with pytest.raises(ValueError, match="does not exist"):
    token_bytes.load_table(tmp_path / "missing.npy")
  garbage = tmp_path / "garbage.npy"
  garbage.write_bytes(b"not an array")
  with pytest.raises(ValueError, match="garbage.npy"):
    token_bytes.load_table(garbage)


def test_check_covers_needs_an_entry_for_the_largest_id():
  table = np.ones(10, np.int32)
  token_bytes.check_covers(table, 9, "the data")
  with pytest.raises(ValueError, match="holds token id 10.*only 10 entries"):
    token_bytes.check_covers(table, 10, "the data")
