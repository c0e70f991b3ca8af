"""attnlab.nn.transformer: the KV-cached decoder equals the teacher-forced one, the attention tensors have the
documented shapes and masks, padding does not change a sentence's result, and beam search with beam 1 is greedy.

    PYTHONPATH=python /usr/bin/python3 -m unittest discover -s tests/python -t . -p 'test_transformer.py'
"""
import os
import unittest

import torch


from attnlab.nn.transformer import (BOS_ID, EOS_ID, Config, Transformer, beam_search, greedy_decode,
                         sinusoidal_table)

torch.set_num_threads(1)


def tiny_model(seed=0, scale=3.0):
    torch.manual_seed(seed)
    model = Transformer(Config(src_vocab=40, tgt_vocab=50, d_model=16, heads=4, enc_layers=2, dec_layers=2, ff=32,
                               dropout=0.0, max_positions=64))
    with torch.no_grad():  # larger weights than the init, so the attention is far from uniform
        for p in model.parameters():
            p.mul_(scale)
    return model.eval()


class TransformerTest(unittest.TestCase):
    def test_sinusoidal_table(self):
        pe = sinusoidal_table(5, 6)
        self.assertAlmostEqual(float(pe[3, 0]), float(torch.sin(torch.tensor(3.0, dtype=torch.float64))), places=6)
        self.assertAlmostEqual(float(pe[3, 5]), float(torch.cos(torch.tensor(3.0 / 10000 ** (4 / 6),
                                                                             dtype=torch.float64))), places=6)

    def test_cached_steps_equal_teacher_forcing(self):
        model = tiny_model(scale=1.5)
        src = torch.tensor([[5, 9, 7, 11, EOS_ID]])
        tgt_in = torch.tensor([[BOS_ID, 8, 12, 30, 4]])
        with torch.no_grad():
            memory, pad, _ = model.encode(src)
            full, self_w, cross_w = model.decode(tgt_in, memory, pad, need_weights=True)
            state = model.start_state(memory, pad)
            for t in range(tgt_in.size(1)):
                logits, state, ws, wc = model.step(tgt_in[:, t], state)
                torch.testing.assert_close(logits, full[:, t], atol=1e-4, rtol=1e-5)
                for l in range(2):
                    torch.testing.assert_close(ws[l][0], self_w[l][0, :, t, :t + 1], atol=1e-5, rtol=0)
                    torch.testing.assert_close(wc[l][0], cross_w[l][0, :, t], atol=1e-5, rtol=0)
        self.assertEqual(float(self_w[0][0, :, 1, 2:].abs().sum()), 0.0)  # causal

    def test_attention_shapes(self):
        model = tiny_model()
        src = torch.tensor([[5, 9, 7, EOS_ID]])
        (hyp,), (enc, dec, cross) = greedy_decode(model, src, torch.tensor([4]), return_attention=True)
        T = len(hyp)
        self.assertEqual(tuple(enc.shape), (2, 4, 4, 4))
        self.assertEqual(tuple(dec.shape), (2, 4, T, T))
        self.assertEqual(tuple(cross.shape), (2, 4, T, 4))
        torch.testing.assert_close(cross.sum(-1), torch.ones(2, 4, T))

    def test_padding_does_not_change_results(self):
        model = tiny_model(1)
        a, b = [5, 9, 7, 11, 13, 6, EOS_ID], [8, 10, EOS_ID]
        src = torch.tensor([a, b + [0] * 4])
        lens = torch.tensor([7, 3])
        batched = greedy_decode(model, src, lens)
        self.assertEqual(batched[1], greedy_decode(model, torch.tensor([b]), torch.tensor([3]))[0])
        beams = beam_search(model, src, lens, beam=3)
        self.assertEqual(beams[1], beam_search(model, torch.tensor([b]), torch.tensor([3]), beam=3)[0])

    def test_beam_one_is_greedy(self):
        model = tiny_model(2)
        src = torch.tensor([[5, 9, 7, 11, EOS_ID]])
        lens = torch.tensor([5])
        self.assertEqual(beam_search(model, src, lens, beam=1), greedy_decode(model, src, lens))


if __name__ == "__main__":
    unittest.main()
