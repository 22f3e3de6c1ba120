"""The pool's private directory (``namesrv-readers-*`` in the temp dir): made, marked with its
owner, and removed by whoever outlives that owner.

It holds the two UNIX sockets the workers reach the main process on and the shared counter
file. The main process removes it when it stops; when it is killed (SIGKILL, the OOM killer)
its workers remove it as they exit, and the next pool started on this machine removes any
left by an owner that is gone (both, say, killed at once). The owner is named by PID *and*
the process's start time, so a PID reused by an unrelated process does not keep a dead
owner's directory alive, and a live owner's directory is never touched.
"""

import os
import shutil
import tempfile

PREFIX = "namesrv-readers-"
OWNER_FILE = "owner"


def process_start(pid):
    """The start time of process ``pid`` (clock ticks since boot, /proc/PID/stat field 22), or
    None when it is gone or a zombie. Without /proc: "?" while ``kill(pid, 0)`` finds it."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            stat = f.read()
    except FileNotFoundError:
        if os.path.isdir("/proc/self"):
            return None
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        except PermissionError:
            pass
        return "?"
    except OSError:
        return None
    fields = stat[stat.rindex(b")") + 2:].split()   # after "pid (comm) ": state is field 3
    if fields[0] in (b"Z", b"X"):
        return None
    return fields[19].decode()


def make_directory(parent=None):
    """A new private directory (mode 0700) marked as this process's; first removes the ones
    whose owner is gone."""
    parent = parent or tempfile.gettempdir()
    sweep_abandoned(parent)
    directory = tempfile.mkdtemp(prefix=PREFIX, dir=parent)
    os.chmod(directory, 0o700)
    pid = os.getpid()
    with open(os.path.join(directory, OWNER_FILE), "w") as f:
        f.write("%d %s\n" % (pid, process_start(pid)))
    return directory


def owner_of(directory):
    """(pid, start) recorded in ``directory``, or None (not ours, or made by an older version)."""
    try:
        with open(os.path.join(directory, OWNER_FILE)) as f:
            pid, start = f.read().split()
        return int(pid), start
    except (OSError, ValueError):
        return None


def abandoned(directory):
    """Is ``directory`` marked by an owner that is no longer running?"""
    owner = owner_of(directory)
    if owner is None:
        return False
    pid, start = owner
    now = process_start(pid)
    return now is None or (now != "?" and start != "?" and now != start)


def remove_if_abandoned(directory):
    """Remove ``directory`` if its owner is gone (a worker outliving its main process); True if removed."""
    if not os.path.basename(os.path.normpath(directory)).startswith(PREFIX) or not abandoned(directory):
        return False
    shutil.rmtree(directory, ignore_errors=True)
    return True


def sweep_abandoned(parent=None):
    """Remove every private directory in ``parent`` (the temp dir) that belongs to this user and
    whose owner is gone; the paths removed."""
    parent = parent or tempfile.gettempdir()
    removed = []
    try:
        names = os.listdir(parent)
    except OSError:
        return removed
    for name in names:
        if not name.startswith(PREFIX):
            continue
        path = os.path.join(parent, name)
        try:
            if os.lstat(path).st_uid != os.geteuid() or os.path.islink(path):
                continue
        except OSError:
            continue
        if remove_if_abandoned(path):
            removed.append(path)
    return removed
