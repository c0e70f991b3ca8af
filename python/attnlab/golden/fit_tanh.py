"""Fits the rational tanh that wasm's simd::tanh evaluates, and measures it in float32 as the engine computes it.

tanh x = x · P(x²) / Q(x²) with x clamped to ±CLAMP, P of degree 6 and Q of degree 3 in x², Q(0) = 1, fitted
on |x| ≤ FIT_RANGE (beyond it float32's tanh is ±1); CLAMP a little further, where the rational reaches 1 in
float32, so that large inputs give ±1 exactly. The fit is near-minimax in relative error: weighted least squares of P − f·Q (f = tanh(√z)/√z) in
Chebyshev bases, with Loeb's reweighting by 1/Q and Lawson's by each point's error, on Chebyshev nodes in x.
The coefficients are then rounded to float32 and every float32 in [0, 1.01·CLAMP] is evaluated with the
engine's order of operations (clamp, Horner with separate multiply and add, one division, the result capped at
1) against tanh in double, rounded to float32.

    PYTHONPATH=python /usr/bin/python3 -m attnlab.golden.fit_tanh
"""

import numpy as np
from numpy.polynomial import chebyshev, polynomial

FIT_RANGE = 9.0109  # float32 tanh(x) rounds to 1 from here on: 1 − tanh x < 2^-25
CLAMP = 9.05
P_DEGREE, Q_DEGREE = 6, 3
NODES, ITERATIONS = 6000, 300


def tanh_over_x(z):
    x = np.sqrt(z)
    return np.where(z > 0, np.tanh(x) / np.where(x > 0, x, 1.0), 1.0)


def fit():
    """Returns P's and Q's coefficients in z = x² (lowest first, Q(0) = 1) and the fit's relative error."""
    span = FIT_RANGE * FIT_RANGE
    u = np.cos(np.pi * (np.arange(NODES) + 0.5) / NODES)
    z = np.sort((FIT_RANGE * (u + 1) / 2) ** 2)
    f = tanh_over_x(z)
    t = 2 * z / span - 1
    basis_p, basis_q = chebyshev.chebvander(t, P_DEGREE), chebyshev.chebvander(t, Q_DEGREE)
    weights, q_previous, best = np.full(NODES, 1.0 / NODES), np.ones(NODES), None
    for _ in range(ITERATIONS):
        row = np.sqrt(weights) / (f * q_previous)
        A = np.hstack([basis_p * row[:, None], -(f * row)[:, None] * basis_q[:, 1:]])
        solution, *_ = np.linalg.lstsq(A, f * row * basis_q[:, 0], rcond=None)
        p_cheb, q_cheb = solution[: P_DEGREE + 1], np.concatenate([[1.0], solution[P_DEGREE + 1:]])
        q_values = basis_q @ q_cheb
        error = (basis_p @ p_cheb / q_values - f) / f
        worst = np.abs(error).max()
        if best is None or worst < best[0]:
            best = (worst, p_cheb, q_cheb)
        q_previous = q_values
        weights = weights * np.abs(error)
        weights /= weights.sum()
    worst, p_cheb, q_cheb = best
    p, q = to_powers_of_z(p_cheb, span), to_powers_of_z(q_cheb, span)
    return p / q[0], q / q[0], worst


def to_powers_of_z(cheb_coefficients, span):
    """A Chebyshev series in t = 2z/span − 1 as coefficients of powers of z."""
    in_t = chebyshev.cheb2poly(cheb_coefficients)
    result, power = np.zeros(len(in_t)), np.array([1.0])
    for coefficient in in_t:
        result[: len(power)] += coefficient * power
        power = polynomial.polymul(power, [-1.0, 2.0 / span])
    return result


def evaluate_float32(p, q, x):
    one = np.float32(1)
    x = np.minimum(np.maximum(x, np.float32(-CLAMP)), np.float32(CLAMP)).astype(np.float32)
    z = x * x
    numerator = np.full_like(z, p[-1])
    for c in p[-2::-1]:
        numerator = numerator * z + c
    denominator = np.full_like(z, q[-1])
    for c in q[-2::-1]:
        denominator = denominator * z + c
    return np.minimum(np.maximum((x * numerator) / denominator, -one), one)


def worst_ulp(p, q):
    """Over every float32 in [0, 1.01·CLAMP] (tanh is odd and so is the evaluation)."""
    worst, worst_at, total, count = 0, 0.0, 0, 0
    stop = int(np.float32(CLAMP * 1.01).view(np.uint32))
    for start in range(0, stop, 1 << 24):
        x = np.arange(start, min(start + (1 << 24), stop), dtype=np.uint32).view(np.float32)
        y = evaluate_float32(p, q, x)
        expected = np.tanh(x.astype(np.float64)).astype(np.float32)
        off = np.abs(y.view(np.int32).astype(np.int64) - expected.view(np.int32))
        i = int(np.argmax(off))
        if off[i] > worst:
            worst, worst_at = int(off[i]), float(x[i])
        total, count = total + int(off.sum()), count + len(x)
    return worst, worst_at, total / count


def main():
    p, q, error = fit()
    p32, q32 = p.astype(np.float32), q.astype(np.float32)
    print(f"P {P_DEGREE}, Q {Q_DEGREE} in x², fitted on [0, {FIT_RANGE}]: the largest relative error {error:.2g}")
    print("P, lowest power first:", ", ".join(f"{c:.9e}f" for c in p32))
    print("Q, lowest power first:", ", ".join(f"{c:.9e}f" for c in q32))
    worst, at, mean = worst_ulp(p32, q32)
    print(f"float32 with x clamped to ±{CLAMP}, every x in [0, {CLAMP * 1.01:.4g}]: worst {worst} ulp (x = {at:.9g}), "
          f"mean {mean:.3f} ulp; at the clamp {evaluate_float32(p32, q32, np.float32([CLAMP]))[0]!r}")


if __name__ == "__main__":
    main()
