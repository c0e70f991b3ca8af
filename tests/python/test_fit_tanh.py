"""attnlab.golden.fit_tanh against the coefficients wasm's simd::tanh spells out in src/attnlab/kernels/simd.hpp."""

import os
import re
import unittest

import numpy as np

from attnlab.golden import fit_tanh
from attnlab.paths import ROOT


def engine_coefficients():
    """P's and Q's coefficients, lowest power first, as the wasm tanh's Horner loops use them."""
    with open(os.path.join(ROOT, "src", "attnlab", "kernels", "simd.hpp"), encoding="utf-8") as f:
        source = f.read()
    body = source[source.index("inline Vec tanh(const Vec& v) {\n    // x·P(x²)/Q(x²)"):]
    body = body[: body.index("\n}\n")]
    polynomials = re.findall(r"v128_t [pq] = wasm_f32x4_splat\(([^)]*)\);\s*for \(float c : \{([^}]*)\}\)", body)
    assert len(polynomials) == 2, body
    coefficients = []
    for highest, rest in polynomials:
        descending = [highest] + rest.split(",")
        coefficients.append(np.float32([float(c.strip().rstrip("f")) for c in reversed(descending)]))
    clamp = float(re.search(r"limit = wasm_f32x4_splat\(([0-9.]+)f\)", body).group(1))
    return coefficients[0], coefficients[1], clamp


class FitTanhTest(unittest.TestCase):
    def test_the_engine_evaluates_the_scripts_fit(self):
        p, q, error = fit_tanh.fit()
        engine_p, engine_q, clamp = engine_coefficients()
        self.assertLess(error, 1e-8)
        np.testing.assert_array_equal(engine_p, p.astype(np.float32))
        np.testing.assert_array_equal(engine_q, q.astype(np.float32))
        self.assertEqual(clamp, fit_tanh.CLAMP)

    def test_within_6_ulp_in_float32_and_exactly_one_beyond(self):
        p, q, _ = engine_coefficients()
        stop = int(np.float32(12.0).view(np.uint32))
        x = np.arange(0, stop, 97, dtype=np.uint32).view(np.float32)
        y = fit_tanh.evaluate_float32(p, q, x)
        expected = np.tanh(x.astype(np.float64)).astype(np.float32)
        self.assertLessEqual(int(np.abs(y.view(np.int32) - expected.view(np.int32)).max()), 6)
        self.assertTrue(np.all(fit_tanh.evaluate_float32(p, q, np.float32([9.05, 9.5, 1e30])) == 1))
        self.assertTrue(np.all(y <= 1))


if __name__ == "__main__":
    unittest.main()
