"""Resumable training: one loop (attnlab.train.loop) that each family (rnn, transformer, caption) feeds."""
import os

# Other engineers compile on the same two cores: spinning OpenMP threads waste what little CPU we get.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
