"""Access to the frames captured from the Java NameServer (../shared/vectors)."""

import os

import pytest

VECTOR_DIR = os.environ.get(
    "NAMESRV_VECTORS",
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "vectors"))


def vector(name):
    """The whole frame (length prefix included) of ``<name>.bin``; skips when vectors are absent."""
    path = os.path.join(VECTOR_DIR, name + ".bin")
    if not os.path.exists(path):
        pytest.skip("vector %s not available" % name)
    with open(path, "rb") as f:
        return f.read()


def vector_names():
    if not os.path.isdir(VECTOR_DIR):
        return []
    return sorted(n[:-4] for n in os.listdir(VECTOR_DIR) if n.endswith(".bin"))
