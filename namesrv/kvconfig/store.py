"""The KV config table (namespace → key → value) and its JSON file.

The file has Java's format, ``{"configTable":{ns:{k:v}}}``, so a Java deployment's
``kvConfig.json`` loads unchanged and ours loads in Java. Every change rewrites the
whole file, as Java does, but atomically (temp file, fsync, rename, one ``.bak``) and
in a thread, one write at a time, a burst of changes coalesced into one write of the
latest table (see filewriter.py): the reactor never waits for the disk.

Differences from Java's KVConfigManager, on purpose:
- a file that cannot be read or parsed (or is empty) refuses to start: Java starts
  empty over an unreadable file and then overwrites it at the first change;
- temp files left by a writer killed mid-write are removed at load.
"""

import json
import os

from twisted.logger import Logger

from namesrv.observe.eventlog import NullEventLog
from namesrv.kvconfig.filewriter import SerialFileWriter
from namesrv.storage.atomicfile import remove_leftovers


class KVConfigError(Exception):
    """The KV file cannot be loaded; the server must not start over it (it would be overwritten)."""


class KVConfigManager:
    log = Logger()

    def __init__(self, path, reactor=None, events=None):
        self.path = path
        self.events = events if events is not None else NullEventLog()
        self.table = {}
        #: called with no arguments after every change (e.g. AnswerCache.invalidate)
        self.change_listeners = []
        self._writer = SerialFileWriter(path, self.encode, reactor=reactor, keep_backup=True,
                                        what="KV config file")

    # -- loading --------------------------------------------------------------
    def load(self):
        """Read the file; a missing file is an empty table, anything unusable raises KVConfigError."""
        _remove_stale_temp_files(self.path)
        try:
            with open(self.path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            self.table = {}
            self.log.info("KV config file {path} absent: starting with an empty table", path=self.path)
            return
        except OSError as e:
            raise KVConfigError("cannot read KV config file %s: %s%s"
                                % (self.path, e.strerror or e, _backup_hint(self.path)))
        self.table = parse_kv_file(data, self.path)
        self.log.info("load KV config table OK: {path}, {n} namespaces", path=self.path, n=len(self.table))

    # -- reads ------------------------------------------------------------------
    def get(self, namespace, key):
        return self.table.get(namespace, {}).get(key)

    def namespace(self, namespace):
        """A copy of one namespace's entries; None when the namespace was never created."""
        table = self.table.get(namespace)
        return None if table is None else dict(table)

    def kv_table_body(self, namespace):
        """The KVTable body ``{"table":{...}}`` of ``namespace``; None when it was never created."""
        table = self.table.get(namespace)
        if table is None:
            return None
        return _compact_json({"table": table})

    # -- changes --------------------------------------------------------------
    def put(self, namespace, key, value):
        """Set a value now; the Deferred fires when it is on disk (fails if the write fails)."""
        entries = self.table.get(namespace)
        if entries is None:
            entries = self.table[namespace] = {}
            self.log.info("putKVConfig create new Namespace {ns}", ns=namespace)
        previous = entries.get(key)
        entries[key] = value
        self.log.info("putKVConfig {what} config item, Namespace: {ns} Key: {key} Value: {value}",
                      what="create new" if previous is None else "update", ns=namespace, key=key, value=value)
        if previous != value:
            self._emit("put", namespace, key)
        return self._writer.changed()

    def delete(self, namespace, key):
        """Remove ``key``; the namespace stays even when empty, and the file is rewritten, like Java."""
        entries = self.table.get(namespace)
        removed = None if entries is None else entries.pop(key, None)
        if removed is not None:
            self.log.info("deleteKVConfig delete a config item, Namespace: {ns} Key: {key} Value: {value}",
                          ns=namespace, key=key, value=removed)
            self._emit("delete", namespace, key)
        return self._writer.changed()

    def _emit(self, op, namespace, key):
        for callback in self.change_listeners:
            callback()
        self.events.emit("kv_changed", op=op, namespace=namespace, key=key)

    # -- persistence ------------------------------------------------------------
    def encode(self):
        """The whole table in Java's file format (compact, UTF-8, like fastjson)."""
        return _compact_json({"configTable": self.table})

    def flush(self):
        """A Deferred firing once every change so far is on disk (retrying a failed write)."""
        return self._writer.flush()

    def flush_sync(self):
        """Write pending changes now, on this thread (stopService); False if the write failed."""
        return self._writer.flush_sync()

    @property
    def pending(self):
        return self._writer.pending

    # -- the periodic print -------------------------------------------------------
    def print_all(self):
        """Java's printAllPeriodically: the table size, then one line per entry."""
        self.log.info("--------------------------------------------------------")
        self.log.info("configTable SIZE: {n}", n=len(self.table))
        for namespace, entries in list(self.table.items()):
            for key, value in list(entries.items()):
                self.log.info("configTable NS: {ns} Key: {key} Value: {value}", ns=namespace, key=key, value=value)


def _compact_json(value):
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def parse_kv_file(data, path):
    """Validate and decode a kvConfig.json; any problem raises KVConfigError naming the file."""
    def corrupt(problem):
        return KVConfigError("KV config file %s is corrupt: %s%s" % (path, problem, _backup_hint(path)))

    if not data.strip():
        raise corrupt("it is empty (a torn write by another server?)")
    try:
        decoded = json.loads(data.decode("utf-8-sig"))
    except (UnicodeDecodeError, ValueError) as e:
        raise corrupt(e)
    if not isinstance(decoded, dict):
        raise corrupt("not a JSON object")
    table = decoded.get("configTable")
    if table is None:
        table = {}
    if not isinstance(table, dict):
        raise corrupt("configTable is not an object")
    result = {}
    for namespace, entries in table.items():
        if entries is None:
            entries = {}
        if not isinstance(entries, dict):
            raise corrupt("namespace %r is not an object" % namespace)
        result[namespace] = {key: _as_string(value) for key, value in entries.items() if value is not None}
    return result


def _as_string(value):
    """fastjson reads a number or boolean into a String map as its text; so do we."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _backup_hint(path):
    bak = path + ".bak"
    if os.path.exists(bak):
        return " (the previous version is in %s: restore it, or delete %s to start empty)" % (bak, path)
    if os.path.exists(path):
        return " (delete it to start with an empty table)"
    return ""


def _remove_stale_temp_files(path):
    """write_atomic's temp files left by a killed writer."""
    for tmp in remove_leftovers(path):
        KVConfigManager.log.warn("removed {tmp} left by an interrupted write", tmp=tmp)
