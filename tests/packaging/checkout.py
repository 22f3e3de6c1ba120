"""A scratch copy of the checkout, as the packaging tests build and run it (the checkout stays clean)."""

import shutil

from tests.integration.server import REPO

IGNORED = shutil.ignore_patterns(".git", ".venv", "build", "*.egg-info", "__pycache__", "*.pyc", ".hypothesis",
                                 "spark-warehouse", "bench", "tests")


def copy_checkout(tmp_path_factory, name, into):
    """``(base, tree)``: a fresh directory named after ``name`` and the checkout copied to ``base/into``."""
    base = tmp_path_factory.mktemp(name)
    tree = base / into
    shutil.copytree(REPO, tree, ignore=IGNORED)
    return base, tree
