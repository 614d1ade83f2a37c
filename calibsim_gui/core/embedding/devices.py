"""Devices and precisions: which compute devices are usable, and where bfloat16 runs natively.

torch is imported inside the functions that need it (the desktop bundle has none).
"""

from __future__ import annotations

import importlib.util
import os
import sys
import threading
from pathlib import Path

from calibsim_gui.core.errors import ModelError


TORCH_LIBRARIES = ("libtorch_global_deps.so", "libtorch_cpu.so")
"""torch's largest native libraries on Linux, in the order its import loads them."""


_preload = threading.Lock()
_preloaded = False


def import_torch():
    """`import torch` (ImportError without it), its largest native libraries loaded first by a
    `dlopen` call that releases the interpreter lock: loaded by the import, their loading and
    static initialisers held the lock 0.3-0.4 s (the window waited as long when a worker
    imported torch; afterwards ~0.05 s, #44). One thread loads them; another (the device check
    beside a model load) waits on a lock that leaves the interpreter lock free, not in a second
    ``dlopen`` that holds it while the first owns the loader's lock (a 0.22 s stall)."""
    global _preloaded
    with _preload:
        if not _preloaded and "torch" not in sys.modules:
            _preload_torch_libraries()
        _preloaded = True
    import torch

    return torch


def _preload_torch_libraries() -> None:
    """`dlopen` `TORCH_LIBRARIES` as torch's import would (the first with RTLD_GLOBAL), through a
    ctypes foreign call, which runs without the interpreter lock; a library that does not load is
    left to the import, which says why.

    Each is read first (`read_ahead`): `dlopen` holds the loader's lock, and a thread importing a
    C extension meanwhile waits for it holding the interpreter lock, so the window waits as long.
    Read from disk inside `dlopen`, libtorch_cpu.so (434 MB) kept that lock 322-554 ms; from
    memory 174-208 ms (its relocations and static initialisers)."""
    spec = importlib.util.find_spec("torch") if sys.platform.startswith("linux") else None
    if spec is None or not spec.origin:
        return
    import ctypes

    dlopen = getattr(ctypes.CDLL(None), "dlopen", None)
    if dlopen is None:
        return
    dlopen.restype, dlopen.argtypes = ctypes.c_void_p, [ctypes.c_char_p, ctypes.c_int]
    for name, scope in zip(TORCH_LIBRARIES, (os.RTLD_GLOBAL, os.RTLD_LOCAL)):
        library = Path(spec.origin).parent / "lib" / name
        if not library.is_file():
            return
        try:
            read_ahead(library)
        except OSError:
            pass                  # unreadable here: dlopen says why, or the import does
        if not dlopen(os.fsencode(library), os.RTLD_NOW | scope):
            return


def read_ahead(path: Path, piece: int = 8 << 20) -> None:
    """Read `path` into the page cache, a piece at a time (reads release the interpreter lock), so
    that a native call that reads it under the lock (`dlopen`, `torch.jit.load`) reads memory."""
    buffer = bytearray(piece)
    with open(path, "rb", buffering=0) as file:
        while file.readinto(buffer):
            pass


def available_devices() -> dict[str, str | None]:
    """Compute devices and why each is unusable: ``{device: None}`` when it can be used.

    Without torch (the desktop bundle) only the CPU is usable, by ONNX Runtime.
    """
    try:
        torch = import_torch()
    except ImportError:
        why = "this calibsim has no torch: it runs models with ONNX Runtime on the CPU"
        return {"cpu": None, "cuda": why, "mps": why}
    if torch.cuda.is_available():
        cuda = None
    elif not torch.backends.cuda.is_built():
        cuda = "no CUDA device (torch built without CUDA)"
    else:
        cuda = "no CUDA device found (no GPU, or its driver is missing)"
    if torch.backends.mps.is_available():
        mps = None
    elif not torch.backends.mps.is_built():
        mps = "no MPS device (torch built without MPS; needs macOS on Apple silicon)"
    else:
        mps = "no MPS device (needs macOS 12.3 or later on Apple silicon)"
    return {"cpu": None, "cuda": cuda, "mps": mps}


def resolve_device(device: str = "auto") -> str:
    """``"auto"`` → cuda if available, else mps, else cpu; an explicit device must be usable.

    Accepts ``"cpu"``, ``"cuda"``, ``"cuda:N"``, ``"mps"`` and ``"auto"``.
    """
    devices = available_devices()
    device = (device or "auto").strip().lower()
    if device == "auto":
        return next(d for d in ("cuda", "mps", "cpu") if devices[d] is None)
    kind, _, index = device.partition(":")
    if kind not in devices or (index and (kind != "cuda" or not index.isdigit())):
        raise ModelError(f"Unknown device {device!r}. Use auto, cpu, cuda, cuda:N or mps.")
    if devices[kind] is not None:
        raise ModelError(f"Device {device!r} cannot be used: {devices[kind]}.")
    if index:
        import torch

        if int(index) >= torch.cuda.device_count():
            raise ModelError(f"Device {device!r} cannot be used: only {torch.cuda.device_count()} CUDA device(s).")
    return device


# --------------------------------------------------------------------------- precision

PRECISIONS = ("auto", "float32", "bfloat16", "int8")
# int8 runs on the ONNX engine only and is never picked by `auto`.
ENGINES = ("auto", "torch", "onnx")
# float32 gives the same numbers on every machine; bfloat16 (and `auto`, which may pick it) trades
# that for speed and is recorded wherever a result's provenance is.
DEFAULT_PRECISION = "float32"
# Tests set this to "1" or "0" to force the CPU's bfloat16 detection on or off.
CPU_BF16_ENV = "CALIBSIM_CPU_BF16"
# `auto` keeps bfloat16 only if the anchor pairs' cosines move by at most this much (the built-in
# model moves by 0.0024; benchmarks/precision.py records its STS-B Spearman in both precisions).


GPU_BFLOAT16_SLOWER = ("on a GPU bfloat16 encoded at about half float32's rate (the built-in model on an "
                       "H200, benchmarks/gpu.py)")
"""Why `auto` keeps float32 on a GPU that runs bfloat16: measured slower, not faster (a small model's
batches cost kernel launches and copies, not arithmetic)."""


def cpu_bfloat16_instructions() -> list[str]:
    """The CPU's native bfloat16 instruction sets (AMX-BF16, AVX512-BF16) that torch can use.

    ``CALIBSIM_CPU_BF16=1`` (or ``0``) forces the answer to ``["AVX512-BF16"]`` (or ``[]``).
    """
    forced = os.environ.get(CPU_BF16_ENV, "").strip()
    if forced in ("0", "1"):
        return ["AVX512-BF16"] if forced == "1" else []
    import torch

    get_capabilities = getattr(torch.cpu, "get_capabilities", None)   # torch >= 2.8
    if get_capabilities is not None:
        flags = {name for name, value in get_capabilities().items() if value is True}
    else:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text()
        except OSError:
            return []
        flags = next((line for line in cpuinfo.splitlines() if line.startswith("flags")), "").split()
    return [label for flag, label in (("amx_bf16", "AMX-BF16"), ("avx512_bf16", "AVX512-BF16"))
            if flag in flags]


def bfloat16_support(device: str) -> str | None:
    """Why bfloat16 would not be fast on `device` (a resolved device), or None if it runs natively."""
    try:
        import torch
    except ImportError:
        return "this calibsim has no torch, and bfloat16 runs on the torch engine only"

    kind = device.partition(":")[0]
    if kind == "cuda":
        return GPU_BFLOAT16_SLOWER if torch.cuda.is_bf16_supported() else "this GPU has no native bfloat16"
    if kind == "cpu":
        found = cpu_bfloat16_instructions()
        return None if found else "this CPU has no bfloat16 instructions (AMX-BF16 or AVX512-BF16)"
    return f"calibsim does not use bfloat16 on {device}"


def embedder_precision(embedder) -> str:
    """The precision `embedder` computes in ("float32" for encoders that do not say)."""
    return getattr(embedder, "precision", "float32")


def embedder_engine(embedder) -> str:
    """The engine `embedder` runs on ("torch" for encoders that do not say)."""
    return getattr(embedder, "engine", "torch")


def cpu_only_torch() -> bool:
    """True when torch is not imported yet and is a CPU-only build (``+cpu``, not on macOS, where
    MPS may be): device ``auto`` is then the CPU, known without importing torch."""
    from importlib import metadata

    if "torch" in sys.modules or sys.platform == "darwin":
        return False
    try:
        return metadata.version("torch").endswith("+cpu")
    except metadata.PackageNotFoundError:
        return False
