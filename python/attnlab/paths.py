"""Where things are, relative to the repository root (this file is python/attnlab/paths.py)."""
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# The raw corpora, photos and the TFLite model: read-only, never committed.
# $ATTNLAB_SHARED_DATA serves a copy of the tree elsewhere (e.g. a frozen checkout a long training runs from).
SHARED_DATA = os.environ.get("ATTNLAB_SHARED_DATA") or os.path.normpath(os.path.join(ROOT, "..", "shared", "data"))
BUILD = os.path.join(ROOT, "build")
BUILD_DATA = os.path.join(BUILD, "data")          # attnlab.data.prepare's text files
FEATURE_DIR = os.path.join(BUILD, "features")     # attnlab.data.features' grid store
TOKENIZER_DIR = os.path.join(ROOT, "models", "tokenizers")
WEIGHTS_DIR = os.path.join(ROOT, "models", "weights")
FIXTURES = os.path.join(ROOT, "tests", "fixtures")
CLI = os.path.join(BUILD, "native", "attnlab")


def golden_dir(kind):
    """build/golden/<kind>, or $ATTNLAB_GOLDEN_DIR/<kind>: the golden files derived from ../shared/data."""
    return os.path.join(os.environ.get("ATTNLAB_GOLDEN_DIR", os.path.join(BUILD, "golden")), kind)
