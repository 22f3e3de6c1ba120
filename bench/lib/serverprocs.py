"""Which processes are "the server" on a port, and their memory, from /proc alone.

A benchmark given only ``--target host:port`` still measures every process of that server:
the ones holding the listening socket (our main process and its read workers, which inherit
it; a JVM) and their descendants, each counted once.
"""

import os

from bench.lib.servers import child_pids, read_status_kib

_LISTEN = "0A"


def _listening_inodes(port):
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                next(f)
                for line in f:
                    fields = line.split()
                    if fields[3] == _LISTEN and int(fields[1].rsplit(":", 1)[1], 16) == port:
                        inodes.add(fields[9])
        except OSError:
            continue
    return inodes


def listening_pids(port):
    """PIDs of the processes that hold a socket listening on ``port`` (those we may read)."""
    wanted = {"socket:[%s]" % inode for inode in _listening_inodes(port)}
    pids = []
    if not wanted:
        return pids
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        fd_dir = "/proc/%s/fd" % name
        try:
            links = os.listdir(fd_dir)
        except OSError:
            continue
        for fd in links:
            try:
                if os.readlink(os.path.join(fd_dir, fd)) in wanted:
                    pids.append(int(name))
                    break
            except OSError:
                continue
    return pids


def tree_pids(pid):
    """``pid`` and all its descendants."""
    found, stack = [], [pid]
    while stack:
        current = stack.pop()
        found.append(current)
        stack.extend(child_pids(current))
    return found


def server_rss_kib(pids):
    """VmRSS of ``pids`` and their descendants, each process counted once."""
    every = set()
    for pid in pids:
        every.update(tree_pids(pid))
    return sum(read_status_kib(pid, "VmRSS") or 0 for pid in every)
