"""The captioner's data: each split's stored grids (attnlab.data.features) in RAM, the tokenized train captions,
and the batches of the training loop."""
import os
import random

import numpy as np
import sentencepiece as spm
import torch

from attnlab.data import flickr8k
from attnlab.data.features import open_store
from attnlab.nn import show_attend_tell as sat
from attnlab.paths import ROOT

SPM_PATH = flickr8k.TOKENIZER_PATH
GRIDS = {7: (7, 7), 14: (14, 14)}


class Data:
    """Grids of the stored images of each split, in RAM as float16, and the tokenized train captions; with
    with_global also each image's global feature (the 7x7 store's grid averaged, float32)."""

    def __init__(self, layer, feature_dir, max_len, limit_train=0, with_global=False):
        self.sp = spm.SentencePieceProcessor(model_file=os.path.join(ROOT, SPM_PATH))
        feats, done, names = open_store(layer, feature_dir)
        index = {name: i for i, name in enumerate(names)}
        stores = [(done, index)]
        if with_global:
            feats7, done7, names7 = open_store(7, feature_dir)
            index7 = {name: i for i, name in enumerate(names7)}
            stores.append((done7, index7))
        self.captions = flickr8k.load_captions()
        self.images, self.features, self.globals = {}, {}, {}
        for split in ("train", "dev", "test"):
            imgs = [img for img in flickr8k.load_split(split)
                    if all(img in ix and dn[ix[img]] for dn, ix in stores)]
            if split == "train" and limit_train:
                imgs = imgs[:limit_train]
            rows = [index[img] for img in imgs]
            self.images[split] = imgs
            self.features[split] = torch.from_numpy(np.ascontiguousarray(feats[rows])) if rows else None
            self.globals[split] = global_features(feats7, [index7[img] for img in imgs]) \
                if with_global and rows else None
        self.pairs = []   # (row in features["train"], token ids without BOS/EOS, at most max_len)
        for r, img in enumerate(self.images["train"]):
            for cap in self.captions[img]:
                self.pairs.append((r, self.sp.encode(cap)[:max_len]))

    @classmethod
    def for_model(cls, model, feature_dir, max_len):
        """The dev and test data a trained decoder reads (its grid, and the global feature if it takes one)."""
        return cls(sat.grid_side(model), feature_dir, max_len, limit_train=1, with_global=model.cfg.global_dim > 0)

    def inputs(self, split, rows):
        """The model input of `rows` (a slice or index tensor) of a split: the grid, or (grid, global feature)."""
        grid = self.features[split][rows].float()
        return grid if self.globals[split] is None else (grid, self.globals[split][rows])


def global_features(feats7, rows, chunk=500):
    """[N] rows of the 7x7 store -> their grids averaged over the 49 cells [N, 1280] float32."""
    return torch.cat([torch.from_numpy(feats7[rows[i:i + chunk]].astype(np.float32).mean(1))
                      for i in range(0, len(rows), chunk)])


def make_batch(data, pairs):
    rows = torch.tensor([r for r, _ in pairs])
    T = max(len(ids) for _, ids in pairs) + 1
    tgt_in = torch.zeros(len(pairs), T, dtype=torch.long)
    tgt_out = torch.zeros(len(pairs), T, dtype=torch.long)
    for i, (_, ids) in enumerate(pairs):
        tgt_in[i, :len(ids) + 1] = torch.tensor([sat.BOS_ID] + ids)
        tgt_out[i, :len(ids) + 1] = torch.tensor(ids + [sat.EOS_ID])
    return data.inputs("train", rows), tgt_in, tgt_out


def bucketed_order(pairs, batch, batches_per_bucket=50):
    """A shuffled order of `pairs` whose consecutive `batch`-sized windows hold captions of similar length:
    random padding would double the decoder's steps (captions run 5 to 30 tokens)."""
    order = list(range(len(pairs)))
    random.shuffle(order)
    span = batch * batches_per_bucket
    batches = []
    for start in range(0, len(order), span):
        bucket = sorted(order[start:start + span], key=lambda i: len(pairs[i][1]))
        batches.extend(bucket[b:b + batch] for b in range(0, len(bucket), batch))
    random.shuffle(batches)
    batches.sort(key=lambda b: len(b) < batch)   # stable: the one short batch goes last, keeping windows aligned
    return [i for b in batches for i in b]
