"""Train the speech recognizer's character language model (attnlab.nn.char_lm) on attnlab.data.lm_text's text,
resumable (OUT/last.pt), the best dev perplexity kept as OUT/best.pt:

    OPENBLAS_NUM_THREADS=1 PYTHONPATH=python /usr/bin/python3 -m attnlab.train.char_lm --out /work/ckpt/speech-lm \
        [--synth /work/ckpt/speech/synth] [--hidden 384] [--epochs 6] [--threads 1]

Then `attnlab.export speech --checkpoint SPEECH.pt --lm OUT/best.pt ...` stores it in the recognizer's file.
"""
import argparse
import math
import os
import random
import time

import torch

from attnlab.data.lm_text import lm_texts
from attnlab.data.speech import SYNTH_ROOT
from attnlab.nn.char_lm import CharLM, LMConfig, text_batch
from attnlab.train.loop import Family, Logger, resume, run, save_checkpoint

log = Logger()


def length_batches(texts, max_chars, seed):
    """Texts sorted by length into batches of about max_chars padded characters, in a seeded random order."""
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    batches, batch, longest = [], [], 0
    for i in order:
        longest_if_added = max(longest, len(texts[i]) + 1)
        if batch and longest_if_added * (len(batch) + 1) > max_chars:
            batches.append(batch)
            batch, longest_if_added = [], len(texts[i]) + 1
        batch.append(i)
        longest = longest_if_added
    if batch:
        batches.append(batch)
    random.Random(seed).shuffle(batches)
    return batches


@torch.no_grad()
def bits_per_character(model, texts, max_chars=20000):
    """Mean -log2 p over every target character (</s> included) of texts."""
    model.eval()
    total, count = 0.0, 0
    for batch in length_batches(texts, max_chars, 0):
        inputs, targets = text_batch([texts[i] for i in batch])
        logits = model(inputs)
        n = int((targets != 0).sum())
        total += float(torch.nn.functional.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1),
                                                         ignore_index=0, reduction="sum"))
        count += n
    model.train()
    return total / count / math.log(2)


class CharLMFamily(Family):
    position_key = "position"

    def __init__(self, args, model, optimizer, cfg, train, dev):
        self.args, self.model, self.optimizer, self.cfg = args, model, optimizer, cfg
        self.train, self.dev = train, dev
        self.last_path, self.best_path = os.path.join(args.out, "last.pt"), os.path.join(args.out, "best.pt")

    def checkpoint(self, path, with_optimizer=True):
        save_checkpoint(path, self.cfg, self.model, self.state, {"name": "speech-lm", "args": vars(self.args)},
                        self.optimizer if with_optimizer else None)

    def save_last(self, reason):
        self.checkpoint(self.last_path)
        log(f"checkpoint ({reason}) -> {self.last_path}")

    def stop_before_start(self, state):
        self.state = state
        return None

    def epoch_batches(self, state):
        self.t0, self.chars, self.loss_sum, self.steps = time.time(), 0, 0.0, 0
        return length_batches(self.train, self.args.max_chars, self.args.seed + state["epoch"])

    def batch_loss(self, batch, state):
        inputs, targets = text_batch([self.train[i] for i in batch])
        loss = self.model.loss(inputs, targets)
        self.chars += int((targets != 0).sum())
        self.loss_sum += float(loss)
        self.steps += 1
        return loss

    def after_step(self, state, n_batches):
        if state["position"] % self.args.log_every == 0:
            dt = time.time() - self.t0
            log(f"epoch {state['epoch'] + 1} batch {state['position']}/{n_batches} "
                f"{self.loss_sum / self.steps / math.log(2):.3f} bits/char {self.chars / dt:.0f} chars/s")
            state["train_seconds"] += dt
            self.t0, self.chars, self.loss_sum, self.steps = time.time(), 0, 0.0, 0

    def end_epoch(self, state):
        state["train_seconds"] += time.time() - self.t0
        bpc = bits_per_character(self.model, self.dev)
        state["epoch"] += 1
        state["position"] = 0
        state["history"].append({"epoch": state["epoch"], "dev_bits_per_char": bpc})
        if bpc < state["best_bpc"]:
            state["best_bpc"] = bpc
            self.checkpoint(self.best_path, with_optimizer=False)
        else:
            for group in self.optimizer.param_groups:
                group["lr"] *= 0.5
        log(f"epoch {state['epoch']} dev {bpc:.4f} bits/char (best {state['best_bpc']:.4f})")
        return None

    def finish(self, state, stop_reason):
        self.checkpoint(self.last_path)
        log(f"done: {stop_reason or 'all epochs'}; best dev {state['best_bpc']:.4f} bits/char; "
            f"trained {state['train_seconds'] / 3600:.2f} h")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--synth", default=SYNTH_ROOT, help="the synthetic speech store (its dev transcripts are kept out)")
    cfg = LMConfig()
    ap.add_argument("--emb", type=int, default=cfg.emb)
    ap.add_argument("--hidden", type=int, default=cfg.hidden)
    ap.add_argument("--dropout", type=float, default=cfg.dropout)
    ap.add_argument("--generated", type=int, default=6000,
                    help="AN4-style lines drawn into the text (and a third as many digit strings): spelled letters "
                    "and commands, which the other sources lack")
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--max-chars", type=int, default=8000, help="padded characters per batch")
    ap.add_argument("--epochs", type=int, default=6)
    ap.add_argument("--clip", type=float, default=1.0)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--log-every", type=int, default=100)
    ap.add_argument("--save-minutes", type=float, default=10.0)
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    os.makedirs(args.out, exist_ok=True)
    global log
    log = Logger(os.path.join(args.out, "train.log"))
    train, dev = lm_texts(args.synth, seed=args.seed, generated=args.generated)
    log(f"text: {len(train)} training lines ({sum(len(t) for t in train)} characters), {len(dev)} dev lines")
    cfg = LMConfig(emb=args.emb, hidden=args.hidden, dropout=args.dropout)
    model = CharLM(cfg)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    state = {"epoch": 0, "position": 0, "best_bpc": math.inf, "history": [], "train_seconds": 0.0}
    state = resume(os.path.join(args.out, "last.pt"), model, optimizer, LMConfig, cfg, state)
    log(f"config {cfg.to_dict()}; {sum(p.numel() for p in model.parameters()):,} parameters; epoch {state['epoch']}")
    family = CharLMFamily(args, model, optimizer, cfg, train, dev)
    run(family, model, optimizer, state, args.epochs, args.clip, args.save_minutes)


if __name__ == "__main__":
    main()
