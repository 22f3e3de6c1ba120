"""The address a takeover's control socket is bound and reached at.

A UNIX socket's address holds at most 107 bytes on Linux, and a kvConfigPath deep in a tree (a home
directory's, a deployment tool's, a test's temporary directory) gives a longer control path: such a
process could neither be taken over nor take over. Then the socket is bound and reached through a
descriptor of its directory, ``/proc/self/fd/N/<name>``: the same file under a short name. The
descriptor (O_PATH: it reads nothing) stays open for the life of the process, one per directory.
"""

import os

#: the longest path a UNIX socket can bind on Linux
MAX_SOCKET_PATH = 107
PROC_FDS = "/proc/self/fd"

#: directory -> its O_PATH descriptor: one per control socket directory this process used (one in practice)
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
