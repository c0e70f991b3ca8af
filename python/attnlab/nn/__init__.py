"""The PyTorch models the engine mirrors, and their greedy and beam search."""
