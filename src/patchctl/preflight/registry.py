"""The checks of ``patchctl verify --env``, in the order they are reported.

An explicit dict, not discovery: adding a check means writing a :class:`Check` and naming it here.
"""

from __future__ import annotations

from patchctl.preflight.base import Check
from patchctl.preflight.checks_data import DataCheck, ModelCheck
from patchctl.preflight.checks_gpu import FlashAttnCheck, TorchCheck
from patchctl.preflight.checks_stack import PatchesCheck, RayCheck, VerlCheck
from patchctl.preflight.checks_system import (
    CudaVisibleDevicesCheck,
    OpenFilesCheck,
    PythonCheck,
    RayEnvCheck,
    ShmCheck,
    ThreadsCheck,
    TritonCacheCheck,
)
from patchctl.preflight.checks_vllm import AttentionBackendCheck, VllmCheck
from patchctl.preflight.libcuda import LibcudaCheck

CHECKS: dict[str, Check] = {
    c.name: c
    for c in (
        PythonCheck(),
        TorchCheck(),
        LibcudaCheck(),
        CudaVisibleDevicesCheck(),
        VllmCheck(),
        AttentionBackendCheck(),
        FlashAttnCheck(),
        RayCheck(),
        RayEnvCheck(),
        VerlCheck(),
        PatchesCheck(),
        DataCheck(),
        ModelCheck(),
        ShmCheck(),
        OpenFilesCheck(),
        ThreadsCheck(),
        TritonCacheCheck(),
    )
}


def check_names() -> list[str]:
    return sorted(CHECKS)
