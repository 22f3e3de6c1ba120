"""Each state file belongs to one running instance: a second server on the same file refuses to start.

Two name servers on one host keep apart by their files: the KV store (and the instance id beside
it), the route snapshot, the persisted configuration and the controller's store. Defaults follow
the port, but a copied properties file or a typed path can still point two instances at one file;
the second would then read the first's KV pairs, and at its stop write its own route snapshot over
the first's. So a server claims each of its files before it reads or writes any: it holds an
exclusive ``flock`` on ``<file>.lock`` (``<dir>/owner.lock`` for the controller's directory) for its
whole life, and writes into it who it is. A server that finds the lock held refuses to start,
naming the file and the instance holding it. The kernel drops the lock when the process ends,
however it ends (kill -9 included), so a crash leaves nothing to clean up; the lock files stay
(removing one would let two processes lock two different files of the same name).

A takeover (``--takeover``) is the one case where a second process of the *same* instance (same
listen address) starts on files that are held: it waits for the old process to exit (every
``RETRY_SECONDS``) and claims them then. The read workers never hold these locks (they are
started with ``spawnProcess``, which passes them no other descriptor).
"""

import datetime
import errno
import fcntl
import json
import os

from twisted.internet import task
from twisted.logger import Logger

from namesrv.startup import StartupError

log = Logger()

RETRY_SECONDS = 0.5

#: lock files this process holds: real path -> descriptor (a process claims a file once, however
#: many services it builds: tests build several in one process)
_HELD = {}


class StateFile:
    """One file (or directory) of an instance: ``prop`` is its property, ``change`` what to do
    when another instance owns it."""

    def __init__(self, prop, path, directory=False, change=None, required=True):
        self.prop = prop
        self.path = os.path.abspath(os.path.expanduser(path))
        self.directory = directory
        #: the server must write it (a KV store, a snapshot); a -c file may sit where it may not write
        self.required = required
        self.change = change or ("give this server its own %s, or leave it unset: its default follows listenPort"
                                 % prop)

    @property
    def lock_path(self):
        return os.path.join(self.path, "owner.lock") if self.directory else self.path + ".lock"


class StateFileClaims:
    """The state files this process owns, and those a takeover is waiting for (``pending``)."""

    def __init__(self, listen, held, pending, reactor=None):
        self.listen = listen
        self.held = held
        self.pending = pending
        self.reactor = reactor
        self._retry = None
        if pending:
            self._start_retrying()

    def _start_retrying(self):
        reactor = self.reactor
        if reactor is None:
            from twisted.internet import reactor
        self._retry = task.LoopingCall(self._claim_pending)
        self._retry.clock = reactor
        reactor.callWhenRunning(self._retry.start, RETRY_SECONDS, now=False)

    def _claim_pending(self):
        for state in list(self.pending):
            if _try_lock(state, self.listen) is not None:
                self.pending.remove(state)
                self.held.append(state)
                log.info("{prop} {path} is this process's now (the process it took over from has exited)",
                         prop=state.prop, path=state.path)
        if not self.pending and self._retry is not None and self._retry.running:
            self._retry.stop()

    def rewrite(self):
        """Say again who owns the files (after daemonizing, the process id is another one)."""
        for state in self.held:
            fd = _HELD.get(os.path.realpath(state.lock_path))
            if fd is not None:
                _write_record(fd, state, self.listen)


def claim_state_files(files, listen, takeover=False, reactor=None):
    """Claim every StateFile of ``files`` for the instance listening on ``listen`` (``host:port``).

    Raises StartupError naming the first file another running instance holds (with ``takeover``:
    another instance than this one, i.e. another listen address). A lock file that cannot be made
    (a read-only directory: the server would not write there either) is logged and not checked.
    """
    held, pending = [], []
    for state in files:
        if not state.directory and os.path.isdir(state.path):
            raise StartupError("%s %s is a directory: give the file's own name" % (state.prop, state.path))
        try:
            fd = _try_lock(state, listen)
        except OSError as e:
            if state.required:
                raise StartupError("%s %s: cannot write beside it (%s: %s): choose a path this user can write"
                                   % (state.prop, state.path, e.filename or state.lock_path, e.strerror or e))
            log.warn("{prop} {path}: not checked for another running instance: cannot make {lock} ({why})",
                     prop=state.prop, path=state.path, lock=state.lock_path, why=e.strerror or e)
            continue
        if fd is not None:
            held.append(state)
            continue
        owner = read_owner(state.lock_path)
        if takeover and owner.get("listen") == listen:
            pending.append(state)
            continue
        raise StartupError("%s %s belongs to %s: %s" % (state.prop, state.path, describe_owner(owner), state.change))
    claims = StateFileClaims(listen, held, pending, reactor)
    if held:
        (reactor or _global_reactor()).callWhenRunning(claims.rewrite)
    return claims


def check_directory(prop, path):
    """StartupError unless ``path`` (a directory the server writes into, e.g. the event log's) can be made
    and written."""
    path = os.path.abspath(os.path.expanduser(path))
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as e:
        raise StartupError("%s %s cannot be created (%s): choose a directory this user can write"
                           % (prop, path, e.strerror or e))
    if not os.access(path, os.W_OK | os.X_OK):
        raise StartupError("%s %s is not writable by this user: choose a directory this user can write"
                           % (prop, path))


def _global_reactor():
    from twisted.internet import reactor
    return reactor


def _try_lock(state, listen):
    """The lock's descriptor once this process holds it (recorded as ``listen``'s), or None when another
    process does."""
    lock_path = state.lock_path
    key = os.path.realpath(lock_path)
    if key in _HELD:
        return _HELD[key]
    os.makedirs(os.path.dirname(lock_path), exist_ok=True)
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as e:
        os.close(fd)
        if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
            return None
        raise
    _HELD[key] = fd
    _write_record(fd, state, listen)
    return fd


def _write_record(fd, state, listen):
    record = {"listen": listen, "pid": os.getpid(), "property": state.prop, "path": state.path,
              "since": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")}
    data = (json.dumps(record, sort_keys=True) + "\n").encode()
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, data, 0)
    except OSError as e:   # the lock holds without the record: a refused server just names no owner
        log.warn("{lock}: owner not recorded ({why})", lock=state.lock_path, why=e.strerror or e)


def read_owner(lock_path):
    """What the holder of ``lock_path`` wrote about itself ({} if nothing readable yet)."""
    try:
        with open(lock_path, "rb") as f:
            record = json.loads(f.read(4096).decode("utf-8", "replace") or "{}")
        return record if isinstance(record, dict) else {}
    except (OSError, ValueError):
        return {}


def describe_owner(owner):
    if not owner.get("listen"):
        return "another running server (it has not said which yet)"
    return "the running server on %s (pid %s, since %s)" % (owner["listen"], owner.get("pid", "?"),
                                                           owner.get("since", "?"))


def release_all():
    """Drop every claim of this process (tests that build servers on the same files one after another)."""
    while _HELD:
        _, fd = _HELD.popitem()
        os.close(fd)
