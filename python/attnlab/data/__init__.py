"""Corpora and splits, the Flickr8k captions and their grid store, batching, the tokenizer recipe."""
