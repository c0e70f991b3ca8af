"""Evaluation: BLEU, translators and captioners in PyTorch or through the engine, attention grounding and probes."""
