"""The KV config table (namespace → key → value) and its JSON file.

The file has Java's format, ``{"configTable":{ns:{k:v}}}``, so a Java deployment's
``kvConfig.json`` loads unchanged and ours loads in Java. Every change rewrites the
whole file, as Java does, but atomically (temp file, fsync, rename, one ``.bak``) and
in a thread, one write at a time: a burst of changes costs one write of the latest
table, and the reactor never waits for the disk.
"""

import json

from twisted.internet import defer, threads
from twisted.logger import Logger

from namesrv.atomicfile import write_atomic


class KVConfigError(Exception):
    """The KV file cannot be loaded; the server must not start over it (it would be overwritten)."""


class KVConfigManager:
    log = Logger()

    def __init__(self, path, reactor=None, events=None):
        self.path = path
        self.reactor = reactor
        self.events = events
        self.table = {}
        self._dirty = False
        self._writing = None
        self._waiters = []

    # -- loading --------------------------------------------------------------
    def load(self):
        try:
            with open(self.path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            self.table = {}
            return
        except OSError as e:
            raise KVConfigError("cannot read KV config file %s: %s" % (self.path, e))
        self.table = parse_kv_file(data, self.path)
        self.log.info("KV config loaded from {path}: {n} namespaces", path=self.path, n=len(self.table))

    # -- reads ------------------------------------------------------------------
    def get(self, namespace, key):
        return self.table.get(namespace, {}).get(key)

    def namespace(self, namespace):
        table = self.table.get(namespace)
        return None if table is None else dict(table)

    def kv_table_body(self, namespace):
        """The KVTable body ``{"table":{...}}`` of ``namespace``; None when it was never created."""
        table = self.table.get(namespace)
        if table is None:
            return None
        return json.dumps({"table": table}, ensure_ascii=False, separators=(",", ":")).encode("utf-8")

    # -- changes --------------------------------------------------------------
    def put(self, namespace, key, value):
        self.table.setdefault(namespace, {})[key] = value
        self.log.info("putKVConfig {ns} {key} {value}", ns=namespace, key=key, value=value)
        self._emit("put", namespace, key)
        return self._persist()

    def delete(self, namespace, key):
        """Remove ``key``; the namespace stays even when empty, and the file is rewritten, like Java."""
        removed = self.table.get(namespace, {}).pop(key, None)
        if removed is not None:
            self.log.info("deleteKVConfig {ns} {key} {value}", ns=namespace, key=key, value=removed)
        self._emit("delete", namespace, key)
        return self._persist()

    def _emit(self, op, namespace, key):
        if self.events is not None:
            self.events.emit("kv_changed", op=op, namespace=namespace, key=key)

    # -- persistence ------------------------------------------------------------
    def encode(self):
        return json.dumps({"configTable": self.table}, ensure_ascii=False,
                          separators=(",", ":")).encode("utf-8")

    def _persist(self):
        """A Deferred firing when a write that includes the current table is on disk."""
        d = defer.Deferred()
        self._waiters.append(d)
        self._dirty = True
        if self._writing is None:
            self._start_write()
        return d

    def _start_write(self):
        data = self.encode()
        waiters, self._waiters = self._waiters, []
        self._dirty = False
        if self.reactor is None:
            from twisted.internet import reactor
            self.reactor = reactor
        self._writing = threads.deferToThreadPool(self.reactor, self.reactor.getThreadPool(),
                                                  write_atomic, self.path, data, True)
        self._writing.addCallbacks(self._written, self._failed, callbackArgs=(waiters,), errbackArgs=(waiters,))

    def _written(self, _, waiters):
        self._writing = None
        for d in waiters:
            d.callback(None)
        if self._dirty:
            self._start_write()

    def _failed(self, failure, waiters):
        self._writing = None
        self.log.error("KV config file {path} not written: {err}", path=self.path, err=failure.value)
        for d in waiters:
            d.errback(failure)
        if self._dirty:
            self._start_write()

    def flush(self):
        """A Deferred firing once everything changed so far is on disk."""
        if self._writing is None and not self._dirty:
            return defer.succeed(None)
        return self._persist()

    def flush_sync(self):
        """Write the table now, on this thread (shutdown: the reactor is stopping anyway)."""
        if self._writing is None and not self._dirty and not self._waiters:
            return
        try:
            write_atomic(self.path, self.encode(), keep_backup=True)
        except OSError as e:
            self.log.error("KV config file {path} not written at shutdown: {err}", path=self.path, err=e)

    # -- the periodic print -------------------------------------------------------
    def print_all(self):
        self.log.info("--------------------------------------------------------")
        self.log.info("configTable SIZE: {n}", n=len(self.table))
        for namespace, entries in self.table.items():
            for key, value in entries.items():
                self.log.info("configTable NS: {ns} Key: {key} Value: {value}", ns=namespace, key=key, value=value)


def parse_kv_file(data, path):
    """Validate and decode a kvConfig.json; any problem names the file."""
    try:
        decoded = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise KVConfigError("KV config file %s is corrupt: %s" % (path, e))
    if not isinstance(decoded, dict):
        raise KVConfigError("KV config file %s is corrupt: not a JSON object" % path)
    table = decoded.get("configTable", {})
    if table is None:
        table = {}
    if not isinstance(table, dict):
        raise KVConfigError("KV config file %s is corrupt: configTable is not an object" % path)
    result = {}
    for namespace, entries in table.items():
        if entries is None:
            entries = {}
        if not isinstance(entries, dict):
            raise KVConfigError("KV config file %s is corrupt: namespace %r is not an object" % (path, namespace))
        result[namespace] = {str(k): (v if isinstance(v, str) else json.dumps(v)) for k, v in entries.items()
                             if v is not None}
    return result
