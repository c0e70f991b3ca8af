"""The golden files the C++ and JS tests compare against: tests/fixtures/* (committed) and build/golden/* (derived
from ../shared/data)."""
import os

# The fixture scripts train tiny models on cores that others compile on: spinning OpenMP threads waste them.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
