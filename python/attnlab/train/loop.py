"""The one resumable training loop (run) and the pieces every family shares: logging, atomic checkpoints, RNG
capture/restore, the wall-clock budget and the periodic-save timer.

A family (attnlab.train.translator for the RNN and the Transformer, attnlab.train.caption) feeds the loop its
batches, its loss, its validation, its learning-rate schedule and its checkpoint layout. A checkpoint's layout
belongs to its family (resumed runs read files written by older code, so keys never change here); this module only
writes and reads what it is given.
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


def save_checkpoint(path, cfg, model, state, meta, optimizer=None):
    """{"config", "model", "state", "meta"} to path, atomically; with the optimizer also its moments and the RNG
    states (keys optimizer, rng): a resumable checkpoint (the layout of the speech and language-model trainers)."""
    ck = {"config": cfg.to_dict(), "model": model.state_dict(), "state": state, "meta": meta}
    if optimizer is not None:
        ck.update(optimizer=optimizer.state_dict(), rng=capture_rng())
    atomic_save(ck, path)


def keep_freed_memory():
    """glibc returns big freed blocks to the OS and page-faults them back on the next step; the
    autograd graph allocates the same sizes every step, so keeping them roughly halves step time. run() calls it
    for every trainer: on a virtual machine where a page's first touch is slow (an AMD EPYC of CPU family 26,
    2026-12-07: fresh memory filled at 0.53 GB/s, rewritten at 18) a process's first backward pass and Adam step of
    a speech batch took 96 s without it and 5.9 s with it (`bench/bench_train_malloc.py`); the speech trainer
    without it took 37 minutes for its first 16 batches (sharing the cores with a CI run), with it 12 minutes an
    epoch of 62."""
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


def keep_last_epochs(out, epoch, keep, save):
    """save(OUT/epoch-<epoch>.pt), then delete the file `keep` epochs older: the inputs of attnlab.train.average.
    keep <= 0 keeps none."""
    if keep <= 0:
        return
    save(os.path.join(out, f"epoch-{epoch}.pt"))
    old = os.path.join(out, f"epoch-{epoch - keep}.pt")
    if os.path.exists(old):
        os.remove(old)


def resume(last_path, model, optimizer, config_class, cfg, state):
    """The state to train from: last_path's, with model, optimizer and RNG restored from it, when it exists (it
    must hold the same configuration: another one exits with a message), else `state` unchanged."""
    if not os.path.exists(last_path):
        return state
    ck = torch.load(last_path, map_location="cpu")
    if config_class(**ck["config"]).to_dict() != cfg.to_dict():
        raise SystemExit(f"{last_path} has another configuration {ck['config']}: use another --out")
    restore_training(ck, model, optimizer)
    return ck["state"]


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


class Family:
    """What a model family gives run(). `state` is the checkpoint's "state" dict: the epoch, the position in it
    (state[position_key]), best score and patience, and whatever else the family keeps there."""
    position_key = "step_in_epoch"

    def stop_before_start(self, state):
        """-> why a resumed run has nothing left to do, or None."""
        return None

    def epoch_batches(self, state):
        """The current epoch's batches: the same list again when the epoch is resumed."""
        raise NotImplementedError

    def batch_loss(self, batch, state):
        """Forward one batch (after setting any per-step learning rate) -> the loss to minimize."""
        raise NotImplementedError

    def after_step(self, state, n_batches):
        """Counters and the progress log, after the optimizer step."""

    def stop_during_epoch(self, state):
        """-> why to stop now (a time or step budget), or None."""
        return None

    def end_epoch(self, state):
        """Validate, advance state to the next epoch, keep the best, adapt the learning rate -> a stop reason (no
        gain for too long) or None."""
        raise NotImplementedError

    def keep_epoch(self, state):
        """The epoch's model as OUT/epoch-<n>.pt (attnlab.train.average's inputs), if the family keeps them."""

    def save_last(self, reason):
        """The resumable OUT/last.pt."""
        raise NotImplementedError

    def finish(self, state, stop_reason):
        """The last checkpoint and log line."""


def run(family, model, optimizer, state, epochs, clip, save_minutes):
    """The resumable epoch loop: up to `epochs` epochs of family.epoch_batches, each step forward (family.batch_loss),
    backward, gradient clipping at `clip`, optimizer step; OUT/last.pt every `save_minutes` and after each epoch.
    An epoch stopped on its last batch is still validated: it is complete."""
    keep_freed_memory()
    position = family.position_key
    timer = Every(save_minutes)
    stop_reason = family.stop_before_start(state)
    while stop_reason is None and state["epoch"] < epochs:
        batches = family.epoch_batches(state)
        model.train()
        while state[position] < len(batches):
            loss = family.batch_loss(batches[state[position]], state)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
            optimizer.step()
            state[position] += 1
            family.after_step(state, len(batches))
            if timer.due():
                family.save_last("timer")
                timer.reset()
            stop_reason = family.stop_during_epoch(state)
            if stop_reason:
                break
        if stop_reason is not None and state[position] < len(batches):
            break
        stop_reason = family.end_epoch(state) or stop_reason
        family.keep_epoch(state)
        family.save_last(f"epoch {state['epoch']}")
        timer.reset()
    family.finish(state, stop_reason)
