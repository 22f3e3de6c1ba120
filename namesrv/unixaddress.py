"""The address a UNIX socket of ours is bound and reached at, whatever the length of its path.

A UNIX socket's address holds at most 107 bytes on Linux. A kvConfigPath deep in a tree (a home directory's, a
deployment tool's, a test's temporary directory) gives a longer takeover control path, and a long TMPDIR longer
read-worker sockets (``$TMPDIR/namesrv-readers-XXXXXXXX/handoff.sock``): the process could not be taken over, and
its read workers could not start. Then the socket is bound and reached through a descriptor of its directory,
``/proc/self/fd/N/<name>``: the same file under a short name. The descriptor (O_PATH: it reads nothing) stays open
for the life of the process, one per directory; each process (the main one, a worker) opens its own.
"""

import os

#: the longest path a UNIX socket can bind on Linux
MAX_SOCKET_PATH = 107
PROC_FDS = "/proc/self/fd"

#: directory -> its O_PATH descriptor: one per socket directory this process used (two in practice)
_directories: dict = {}


def _fits(path):
    return len(os.fsencode(path)) <= MAX_SOCKET_PATH


def socket_address(path):
    """``path`` itself when it fits a socket address, else the same file through its directory's descriptor;
    None when neither fits (a file name of about 90 bytes) or the directory cannot be opened."""
    if _fits(path):
        return path
    directory, name = os.path.split(os.path.abspath(path))
    descriptor = _directories.get(directory)
    if descriptor is None:
        if not os.path.isdir(PROC_FDS):
            return None
        try:
            descriptor = os.open(directory, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError:
            return None
        _directories[directory] = descriptor
    alias = os.path.join(PROC_FDS, str(descriptor), name)
    return alias if _fits(alias) else None


def release(directory):
    """Close the descriptor kept for ``directory`` (a read-worker pool's, removed when the pool stops)."""
    descriptor = _directories.pop(os.path.abspath(directory), None)
    if descriptor is not None:
        os.close(descriptor)
