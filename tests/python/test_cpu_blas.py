"""attnlab.cpu_blas: the OpenBLAS core chosen from /proc/cpuinfo flags.

    PYTHONPATH=python /usr/bin/python3 -m unittest discover -s tests/python -t . -p 'test_cpu_blas.py'
"""
import os
import tempfile
import unittest


from attnlab import cpu_blas


class CoreForFlags(unittest.TestCase):
    def test_avx512_gets_skylakex(self):
        self.assertEqual(cpu_blas.core_for_flags({"sse2", "avx2", "fma", "avx512f", "avx512bw", "avx512vl",
                                                  "avx512dq"}), "SkylakeX")

    def test_avx2_without_avx512bw_gets_haswell(self):
        # Knights Landing has avx512f but not bw/vl/dq: SkylakeX kernels would fault there.
        self.assertEqual(cpu_blas.core_for_flags({"avx2", "fma", "avx512f"}), "Haswell")

    def test_old_cpu_keeps_openblas_detection(self):
        self.assertIsNone(cpu_blas.core_for_flags({"sse2", "sse3", "avx"}))

    def test_flags_are_read_from_cpuinfo(self):
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
            f.write("processor\t: 0\nflags\t\t: fpu sse2 avx2 fma\nbugs\t\t: spectre\n")
        try:
            self.assertEqual(cpu_blas.cpu_flags(f.name), {"fpu", "sse2", "avx2", "fma"})
        finally:
            os.unlink(f.name)
        self.assertEqual(cpu_blas.cpu_flags("/nonexistent/cpuinfo"), set())


if __name__ == "__main__":
    unittest.main()
