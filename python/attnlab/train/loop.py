"""Pieces every resumable training script here shares (train_rnn.py, train_transformer.py, train_caption.py):
logging, atomic checkpoints, RNG capture/restore, the wall-clock budget and the periodic-save timer.

A checkpoint's layout belongs to its script (resumed runs read files written by older code, so keys never change
here); this module only writes and reads what it is given.
"""
import ctypes
import os
import random
import time

import numpy as np
import torch


class Logger:
    """Timestamped lines to stdout and, when `path` is given, appended to that file (flushed at once, so a killed
    run keeps its log)."""

    def __init__(self, path=None, time_format="%Y-%m-%d %H:%M:%S"):
        self.f = open(path, "a", encoding="utf-8") if path else None
        self.time_format = time_format

    def __call__(self, msg):
        line = time.strftime(self.time_format) + " " + msg
        print(line, flush=True)
        if self.f is not None:
            self.f.write(line + "\n")
            self.f.flush()


def atomic_save(obj, path):
    """torch.save through a temporary file and a rename: a crash mid-write leaves the previous file intact."""
    tmp = path + ".tmp"
    torch.save(obj, tmp)
    os.replace(tmp, path)


def keep_freed_memory():
    """glibc returns big freed blocks to the OS and page-faults them back on the next step; the
    autograd graph allocates the same sizes every step, so keeping them roughly halves step time."""
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(-3, 1 << 30)        # M_MMAP_THRESHOLD
        libc.mallopt(-1, 2000000000)     # M_TRIM_THRESHOLD
    except OSError:
        pass


def capture_rng(with_numpy=True):
    """The RNG states a resumed run needs to continue the same random stream (checkpoint key "rng")."""
    rng = {"torch": torch.get_rng_state(), "python": random.getstate()}
    if with_numpy:
        rng["numpy"] = np.random.get_state()
    return rng


def restore_rng(rng):
    torch.set_rng_state(rng["torch"])
    random.setstate(rng["python"])
    if "numpy" in rng:
        np.random.set_state(rng["numpy"])


def load_if_exists(path):
    """The checkpoint at `path` (on the CPU), or None when there is none yet (a fresh run)."""
    return torch.load(path, map_location="cpu") if os.path.exists(path) else None


def restore_training(checkpoint, model, optimizer):
    """Model weights, optimizer moments and RNG states from a resumable checkpoint (keys model, optimizer, rng)."""
    model.load_state_dict(checkpoint["model"])
    optimizer.load_state_dict(checkpoint["optimizer"])
    restore_rng(checkpoint["rng"])


class WallClock:
    """Training time summed over resumes: the checkpoint stores the total so --max-hours caps the whole run."""

    def __init__(self, seconds_before=0.0):
        self.seconds_before = seconds_before
        self.session_start = time.time()

    def total(self):
        return self.seconds_before + time.time() - self.session_start

    def session(self):
        return time.time() - self.session_start


class Every:
    """True once `minutes` have passed since the last reset (periodic checkpoints)."""

    def __init__(self, minutes):
        self.seconds = minutes * 60
        self.reset()

    def due(self):
        return time.time() - self.last > self.seconds

    def reset(self):
        self.last = time.time()
