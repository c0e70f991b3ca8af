#!/usr/bin/python3
"""What glibc's handling of large blocks costs a training step: one batch of the speech recognizer (the shipped
file's shape; random MFCCs and transcripts of a real batch's sizes) forward, backward and an Adam step, three times,
in a fresh process with glibc's defaults and in one with attnlab.train.loop.keep_freed_memory(), interleaved.

    PYTHONPATH=python /usr/bin/python3 bench/bench_train_malloc.py [--rounds 1] [--threads 2]

Prints the CPU, how fast it fills fresh memory, each pass's seconds, and last one JSON line: {"cpu", "threads",
"first_touch_gb_s", "rewrite_gb_s", "defaults": [[forward, backward and step]...] per round, "kept": [...],
"backward_ratio"} (glibc's defaults ÷ kept, all passes' backward and step seconds). Run it with nothing else on the
cores.
"""
import argparse
import json
import os
import subprocess
import sys
import time

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
SHIPPED = os.path.join(ROOT, "models", "weights", "speech-las.f16.gguf")


def cpu_description():
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return "unknown CPU"
    pairs = (line.split(":", 1) for line in out.splitlines() if ":" in line)
    fields = {key.strip(): value.strip() for key, value in pairs}
    caches = [f"{c} {fields[c + ' cache']}" for c in ("L1d", "L2", "L3") if fields.get(c + " cache")]
    return fields.get("Model name", "unknown CPU") + (f" ({', '.join(caches)})" if caches else "")


def first_touch_gb_s(size=128 << 20):
    """GB/s of the first and the second fill of a fresh buffer (as bench/cpu.mjs's memoryFirstTouch)."""
    import numpy as np
    t = time.time()
    buffer = np.ones(size, dtype=np.uint8)
    first = time.time() - t
    t = time.time()
    buffer.fill(2)
    return round(size / first / 1e9, 2), round(size / (time.time() - t) / 1e9, 2)


def child(keep, threads, passes=3):
    from attnlab import cpu_blas  # noqa: F401
    import torch
    from attnlab.gguf import speech as speech_gguf
    from attnlab.nn import listen_attend_spell as las
    from attnlab.train.loop import keep_freed_memory
    torch.set_num_threads(threads)
    if keep:
        keep_freed_memory()
    model = speech_gguf.load(SHIPPED).train()
    gen = torch.Generator().manual_seed(0)
    # The sizes of a batch of the shipped recipe (--max-frames 40000): 131 utterances of 274-305 frames,
    # 9-55 characters.
    lengths = torch.randint(274, 306, (131,), generator=gen)
    feats = torch.randn(131, int(lengths.max()), 13, generator=gen)
    targets = [torch.randint(3, 30, (int(n),), generator=gen).tolist()
               for n in torch.randint(9, 56, (131,), generator=gen)]
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-6)
    out = []
    for _ in range(passes):
        t0 = time.time()
        loss, _, _ = las.loss(model, feats, lengths, targets, 0.3, 0.1)
        t1 = time.time()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        out.append([round(t1 - t0, 3), round(time.time() - t1, 3)])
    print(json.dumps(out))


def run_child(keep, threads):
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"), OPENBLAS_NUM_THREADS="1")
    command = [sys.executable, __file__, "--child", "kept" if keep else "defaults", "--threads", str(threads)]
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--child", choices=["defaults", "kept"], help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child == "kept", args.threads)
        return
    cpu, (first, again) = cpu_description(), first_touch_gb_s()
    print(f"cpu: {cpu}; {args.threads} torch threads, one BLAS thread; fresh memory filled at {first} GB/s, "
          f"rewritten at {again}", flush=True)
    result = {"cpu": cpu, "threads": args.threads, "first_touch_gb_s": first, "rewrite_gb_s": again,
              "defaults": [], "kept": []}
    for _ in range(args.rounds):
        for keep in (False, True):
            passes = run_child(keep, args.threads)
            name = "kept" if keep else "defaults"
            timings = ", ".join(f"forward {f:.2f} s backward and step {b:.2f} s" for f, b in passes)
            print(f"{name}: {timings}", flush=True)
            result[name].append(passes)
    backward = lambda runs: sum(p[1] for passes in runs for p in passes)  # noqa: E731
    result["backward_ratio"] = round(backward(result["defaults"]) / backward(result["kept"]), 2)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
