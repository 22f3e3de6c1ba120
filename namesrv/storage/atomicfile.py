"""Crash-safe file replacement: temp file in the same directory, fsync, rename, fsync of the directory.

A crash at any moment leaves either the old file or the new one, never a torn one (and, at most,
a temp file that ``remove_leftovers`` removes at the next start). Every file written whole goes
through here: the KV store, route snapshots, the instance file, the controller's state, and the
Raft snapshot and journal rewrites (controller/replication/disk.py, in its thread, in order).
Blocking: call it from a thread (``deferToThread``) when the reactor must not wait.
"""

import os
import shutil
import tempfile


def write_atomic(path, data, keep_backup=False):
    """Replace ``path`` with ``data`` (bytes, or a list of bytes written one after the other); with
    ``keep_backup`` keep the previous version as ``path.bak``."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=os.path.basename(path) + ".", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            if isinstance(data, (list, tuple)):
                f.writelines(data)
            else:
                f.write(data)
            f.flush()
            os.fsync(f.fileno())
        if keep_backup and os.path.exists(path):
            _replace_backup(path)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    fsync_directory(directory)


def _replace_backup(path):
    """Copy the current file to ``.bak`` atomically too (a torn .bak would be no backup)."""
    bak = path + ".bak"
    tmp = bak + ".tmp"
    shutil.copyfile(path, tmp)
    with open(tmp, "rb") as f:
        os.fsync(f.fileno())
    os.replace(tmp, bak)


def fsync_directory(directory):
    """Make a rename or a new file in ``directory`` durable (its entry is on disk once this returns)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def remove_leftovers(path):
    """Remove the temp files that writes of ``path`` interrupted by a crash or a kill left behind
    (``<name>.*.tmp``, ``<name>.bak.tmp``; ``<name>.tmp`` of older versions) and return their paths.
    Only when nothing is writing ``path`` (at start): a write under way has its temp file there too."""
    directory, name = os.path.split(os.path.abspath(path))
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    removed = []
    for candidate in names:
        if candidate.startswith(name + ".") and candidate.endswith(".tmp"):
            try:
                os.unlink(os.path.join(directory, candidate))
            except OSError:
                continue
            removed.append(os.path.join(directory, candidate))
    return removed
