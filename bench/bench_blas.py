#!/usr/bin/python3
"""torch.mm GFLOP/s on one thread at the shapes of a Transformer training step, for the OpenBLAS kernels in use.

    for core in Prescott Haswell SkylakeX; do OPENBLAS_VERBOSE=2 OPENBLAS_CORETYPE=$core PYTHONPATH=python /usr/bin/python3 bench/bench_blas.py; done
    PYTHONPATH=python /usr/bin/python3 bench/bench_blas.py      # the kernels attnlab/cpu_blas.py picks

The figures in python/attnlab/cpu_blas.py and models/README.md ("OpenBLAS kernels") come from this.
"""
import os
import time

from attnlab import cpu_blas  # noqa: F401  (keeps an OPENBLAS_CORETYPE given in the environment)
import torch

SHAPES = [(1120, 256, 8000), (1120, 256, 1024), (1120, 1024, 256), (1120, 256, 256)]  # [tokens, d]·[d, out] etc.


def main():
    torch.set_num_threads(1)
    print(f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '(OpenBLAS detection)')}")
    for m, k, n in SHAPES:
        a, b = torch.randn(m, k), torch.randn(k, n)
        torch.mm(a, b)
        runs = 5
        start = time.perf_counter()
        for _ in range(runs):
            torch.mm(a, b)
        seconds = (time.perf_counter() - start) / runs
        print(f"  [{m}x{k}]·[{k}x{n}]: {2 * m * k * n / seconds / 1e9:.1f} GFLOP/s")


if __name__ == "__main__":
    main()
