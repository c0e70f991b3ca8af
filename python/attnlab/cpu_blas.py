"""Pick OpenBLAS's matrix kernels for this CPU before torch loads OpenBLAS. Import it before torch.

Why: Debian's OpenBLAS chooses its kernels from the CPU model it detects, and on these machines' virtual
"Intel Xeon Processor" it falls back to "Prescott" (SSE3) kernels, even though the CPU has AVX-512. Measured here
with one thread (torch.mm, [1120×256]·[256×8000], the shapes of a Transformer training step): Prescott 17–23 GFLOP/s,
Haswell (AVX2) 39, SkylakeX (AVX-512) 60–119 (bench/bench_blas.py; two runs at different load). Training runs about 3× faster with the right
kernels.

An OPENBLAS_CORETYPE already in the environment is kept, so `OPENBLAS_CORETYPE=Prescott` reproduces the old
behaviour. The choice is made from /proc/cpuinfo's flags, so a CPU without AVX-512 never gets AVX-512 kernels
(which would crash with an illegal instruction).
"""
import os


def core_for_flags(flags):
    """OpenBLAS core name for a set of /proc/cpuinfo flags, or None to leave OpenBLAS's own detection."""
    if {"avx512f", "avx512bw", "avx512vl", "avx512dq"} <= flags:
        return "SkylakeX"
    if {"avx2", "fma"} <= flags:
        return "Haswell"
    return None


def cpu_flags(path="/proc/cpuinfo"):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def configure():
    if "OPENBLAS_CORETYPE" not in os.environ:
        core = core_for_flags(cpu_flags())
        if core:
            os.environ["OPENBLAS_CORETYPE"] = core
    return os.environ.get("OPENBLAS_CORETYPE")


configure()
