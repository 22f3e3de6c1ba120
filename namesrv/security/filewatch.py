"""Polls a few small files and calls back when their content changes (Java's ``FileWatchService``).

Java hashes each watched file every 500 ms. We look at ``os.stat`` first (size, mtime, inode,
ctime: a rename over the file changes the inode) and hash only when that changed or when the
file was modified in the last few seconds (file-system timestamps are coarse: two same-size
writes within one tick look identical to ``stat``), so a settled file costs one ``stat`` per
interval; a file that was touched but kept its bytes calls nobody. A file that disappears is reported once when it comes back with new content,
never while it is missing (a half-done ``mv``/``cp`` must not wipe credentials).
"""

import hashlib
import os
import time

from twisted.application import service
from twisted.internet import task
from twisted.logger import Logger


#: Files modified less than this many seconds ago are hashed on every poll.
RECENT_SECONDS = 3.0


def _stat_key(path):
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns)


def _digest(path):
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).digest()
    except OSError:
        return None


class FileWatcher(service.Service):
    """Calls ``on_change(changed_paths)`` (a list) from the reactor when watched files change."""

    log = Logger()

    def __init__(self, paths, on_change, interval=0.5, clock=None):
        self.paths = [p for p in paths if p]
        self.on_change = on_change
        self.interval = interval
        self.clock = clock
        self._seen = {path: (_stat_key(path), _digest(path)) for path in self.paths}
        self._loop = None

    def startService(self):
        service.Service.startService(self)
        if not self.paths:
            return
        self._loop = task.LoopingCall(self.check)
        if self.clock is not None:
            self._loop.clock = self.clock
        self._loop.start(self.interval, now=False).addErrback(
            lambda failure: self.log.failure("file watch stopped", failure))

    def stopService(self):
        service.Service.stopService(self)
        if self._loop is not None and self._loop.running:
            self._loop.stop()
        self._loop = None

    def check(self):
        """One poll; returns the changed paths (also handy in tests)."""
        changed = []
        for path in self.paths:
            key = _stat_key(path)
            old_key, old_digest = self._seen[path]
            if key is None:
                continue
            if key == old_key and time.time() - key[1] / 1e9 > RECENT_SECONDS:
                continue
            digest = _digest(path)
            if digest is None:
                continue
            self._seen[path] = (key, digest)
            if digest != old_digest:
                changed.append(path)
        if changed:
            try:
                self.on_change(changed)
            except Exception:
                self.log.failure("reloading {paths} failed", paths=changed)
        return changed
