"""Access to the frames captured from the Java NameServer, carried in tests/data/vectors.

They are facts about the Java server's bytes, so the project keeps its own copy: a fresh
clone checks compatibility without ``../shared``. ``NAMESRV_VECTORS`` points elsewhere
(a newer capture) when set.
"""

import os

VECTOR_DIR = os.environ.get(
    "NAMESRV_VECTORS",
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "vectors"))


def vector(name):
    """The whole frame (length prefix included) of ``<name>.bin``."""
    path = os.path.join(VECTOR_DIR, name + ".bin")
    with open(path, "rb") as f:
        return f.read()


def vector_names():
    if not os.path.isdir(VECTOR_DIR):
        return []
    return sorted(n[:-4] for n in os.listdir(VECTOR_DIR) if n.endswith(".bin"))
