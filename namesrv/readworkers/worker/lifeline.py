"""A read worker never outlives its main process, whatever killed it.

Three independent signs that the main process is gone, any one of which ends the worker:

1. the parent-death signal (Linux ``prctl(PR_SET_PDEATHSIG)``): the kernel sends SIGTERM as
   the main process dies, even by SIGKILL, the OOM killer or a segfault;
2. the feed: its stdin ends, or the stdout pipe to the main process breaks (entry.py);
3. the parent check: ``getppid()`` is no longer the PID that started us (a worker re-parented
   to init or a subreaper), looked at once right after the prctl (the main process may have
   died before it) and then every ``CHECK_INTERVAL`` seconds (for systems without prctl).

The parent-death signal fires when the *thread* that forked the worker ends, not the process:
the main process spawns its workers from the reactor thread (``reactor.spawnProcess`` is only
called there), which lives as long as the process, so it fires exactly at the process's death.
"""

import ctypes
import ctypes.util
import os
import signal
import sys

#: prctl option (linux/prctl.h)
PR_SET_PDEATHSIG = 1
CHECK_INTERVAL = 0.25


def argument(argv, name):
    """The value of ``--name`` in ``argv``, or None (read before argparse and Twisted are imported)."""
    flag = "--" + name
    for index, arg in enumerate(argv):
        if arg == flag:
            return argv[index + 1] if index + 1 < len(argv) else None
        if arg.startswith(flag + "="):
            return arg.split("=", 1)[1]
    return None


def parent_pid_argument(argv):
    try:
        return int(argument(argv, "parent-pid"))
    except (TypeError, ValueError):
        return None


def hold_on_to_parent(argv):
    """First thing in a worker, before its imports (a second or more): the parent-death signal,
    then exit at once if the main process that started us is already gone (it may have died
    before the prctl, when no signal comes any more), removing its private directory."""
    set_parent_death_signal()
    parent = parent_pid_argument(argv)
    if parent is not None and os.getppid() != parent:
        sys.stderr.write("warn read worker: the main process %d is gone before the worker started; exiting\n"
                         % parent)
        upstream = argument(argv, "upstream")
        if upstream:
            from namesrv.readworkers.channel.scratch import remove_if_abandoned
            remove_if_abandoned(os.path.dirname(os.path.abspath(upstream)))
        sys.exit(0)


def set_parent_death_signal(signum=signal.SIGTERM):
    """Ask the kernel for ``signum`` when our parent dies; False where there is no prctl."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        return libc.prctl(PR_SET_PDEATHSIG, int(signum), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


class Lifeline:
    """Watches the parent ``parent_pid``; ``on_orphaned(why)`` once it is gone (at most once)."""

    def __init__(self, parent_pid, on_orphaned, clock, getppid=os.getppid):
        self.parent_pid = parent_pid
        self.on_orphaned = on_orphaned
        self.getppid = getppid
        self.orphaned = None   # why, once the parent is gone
        from twisted.internet import task
        self._check = task.LoopingCall(self.check)
        self._check.clock = clock

    def parent_alive(self):
        return self.getppid() == self.parent_pid

    def start(self):
        """The parent-death signal, then the first check (the parent may have died before it)."""
        set_parent_death_signal()
        self._check.start(CHECK_INTERVAL, now=True)

    def check(self):
        if not self.parent_alive():
            self.lost("the main process %d is gone (parent now %d)" % (self.parent_pid, self.getppid()))

    def lost(self, why):
        """The main process is gone (also called by the feed's end and the SIGTERM handler)."""
        if self.orphaned is not None:
            return
        self.orphaned = why
        self.stop()
        self.on_orphaned(why)

    def stop(self):
        if self._check.running:
            self._check.stop()
