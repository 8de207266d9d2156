"""The one `impl` resolver: "pallas" follows the platform, the families are forced, "auto"
takes only GPU kernels."""

from __future__ import annotations

import pytest

from pallas_kernels import platform
from sdm_jax.ops import dispatch

IMPLS = ("auto", "xla") + dispatch.PALLAS_IMPLS


@pytest.mark.parametrize("backend,impl,want", [
    ("tpu", "pallas", "pallas_tpu"), ("gpu", "pallas", "pallas_gpu"),
    ("cpu", "pallas", "pallas_gpu"),
    ("tpu", "auto", "xla"), ("gpu", "auto", "pallas_gpu"), ("cpu", "auto", "xla"),
    ("cpu", "pallas_tpu", "pallas_tpu"), ("tpu", "pallas_gpu", "pallas_gpu"),
    ("gpu", "xla", "xla")])
def test_resolves_per_platform(monkeypatch, backend, impl, want):
  monkeypatch.setattr(platform.jax, "default_backend", lambda: backend)
  assert dispatch.resolve_impl(impl, IMPLS, xla="xla") == want


def test_auto_on_gpu_keeps_the_xla_path_when_the_kernel_declines(monkeypatch):
  monkeypatch.setattr(platform.jax, "default_backend", lambda: "gpu")
  assert dispatch.resolve_impl("auto", IMPLS, xla="xla",
                               pallas_unsupported=lambda: "too large") == "xla"


def test_rejects_what_the_op_does_not_list():
  with pytest.raises(ValueError, match=r"impl must be one of \('auto', 'chunked'\), got "
                                       r"'pallas_tpu'"):
    dispatch.resolve_impl("pallas_tpu", ("auto", "chunked"), xla="chunked")
