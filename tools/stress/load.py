"""Load beside the suite: processes that keep CPUs busy and a disk writing and syncing.

A stressed suite shows the tests that only pass on an idle machine: a timeout too tight for a slow
fsync, a race a busy CPU widens. Every load process is bounded three ways: by ``seconds`` (it ends
by itself), by its parent (it ends when the process that started it is gone, even after a kill -9 of
that one), and by ``Load.stop()``, which the runner calls at its end, on Ctrl-C and on SIGTERM.
The disk writer's file is bounded too (``DISK_FILE_BYTES``, rewritten from its start) and removed.

    python -m tools.stress.load cpu SECONDS
    python -m tools.stress.load disk SECONDS DIRECTORY
"""

import os
import signal
import subprocess
import sys
import tempfile
import time

#: the disk writer's file never grows past this; it is written in CHUNK-sized pieces, each synced
DISK_FILE_BYTES = 64 * 1024 * 1024
CHUNK = 1024 * 1024


def burn_cpu(seconds, parent):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and os.getppid() == parent:
        for _ in range(200000):
            pass


def write_disk(seconds, directory, parent):
    deadline = time.monotonic() + seconds
    chunk = os.urandom(CHUNK)
    fd, path = tempfile.mkstemp(prefix="stress-disk-", dir=directory)
    try:
        written = 0
        while time.monotonic() < deadline and os.getppid() == parent:
            if written >= DISK_FILE_BYTES:
                os.lseek(fd, 0, os.SEEK_SET)
                written = 0
            written += os.write(fd, chunk)
            os.fsync(fd)
    finally:
        os.close(fd)
        os.unlink(path)


class Load:
    """``cpu`` busy processes and, with ``disk``, one writer syncing into ``directory``; at most ``seconds``."""

    def __init__(self, cpu=0, disk=False, seconds=3600.0, directory=None):
        self.cpu, self.disk, self.seconds = cpu, disk, seconds
        self.directory = directory or tempfile.gettempdir()
        self.processes = []

    def describe(self):
        parts = ["%d busy CPU process(es)" % self.cpu] if self.cpu else []
        if self.disk:
            parts.append("a disk writer (%d MiB file, fsync per MiB, in %s)" % (DISK_FILE_BYTES >> 20,
                                                                                  self.directory))
        return " and ".join(parts) or "no load"

    def start(self):
        here = [sys.executable, "-m", "tools.stress.load"]
        cwd = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        commands = [here + ["cpu", str(self.seconds)] for _ in range(self.cpu)]
        if self.disk:
            commands.append(here + ["disk", str(self.seconds), self.directory])
        for command in commands:
            # its own process group: a Ctrl-C at the terminal reaches the runner, which stops these itself
            self.processes.append(subprocess.Popen(command, cwd=cwd, stdin=subprocess.DEVNULL,
                                                   start_new_session=True))
        return self

    def stop(self, grace=10.0):
        """End every load process (SIGTERM, then SIGKILL after ``grace``); idempotent."""
        for process in self.processes:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + grace
        for process in self.processes:
            try:
                process.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self.processes = []

    def running(self):
        return [p.pid for p in self.processes if p.poll() is None]

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        return False


def main(argv):
    parent = os.getppid()
    # SIGTERM ends the disk writer through its finally (its file removed)
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(0))
    signal.signal(signal.SIGINT, signal.SIG_IGN)   # the runner decides when load ends
    kind, seconds = argv[0], float(argv[1])
    if kind == "cpu":
        burn_cpu(seconds, parent)
    elif kind == "disk":
        write_disk(seconds, argv[2], parent)
    else:
        raise SystemExit("usage: python -m tools.stress.load cpu SECONDS | disk SECONDS DIRECTORY")


if __name__ == "__main__":
    main(sys.argv[1:])
