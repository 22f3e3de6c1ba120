"""Which NameServer instance this is: an id kept next to its KV file, and where it listens.

Files an instance writes say which instance wrote them (the route snapshot does), so that
a second instance on the same host, started on another port or with another KV file,
never restores the first one's routes and serves brokers that never registered with it.

What a route snapshot's brokers know of the server is its port (their ``namesrvAddr`` is
``host:port``): the same instance restarted on the same port with another ``bindAddress``
(127.0.0.1 to 0.0.0.0, one interface to another) is still where they register, so it keeps its
routes (``may_restore``). On another port it is not: brokers that registered on the old one would be
served here for two minutes without ever beating here, so the snapshot is left, and ``why_not``
says so in those words. A takeover (handover/) inherits the listening socket itself, so it asks
for the very same address (``owns``).
"""

import os
import uuid

from twisted.logger import Logger

from namesrv.storage.atomicfile import write_atomic

log = Logger()


class InstanceIdentity:
    """``instance_id`` (stable across restarts of one instance) and ``listen`` (``host:port`` as configured)."""

    def __init__(self, instance_id, listen):
        self.instance_id = instance_id
        self.listen = listen

    def as_record(self):
        return {"instance": self.instance_id, "listen": self.listen}

    def owns(self, record):
        """True when ``record`` (from a file's header) names this instance at this very address."""
        return isinstance(record, dict) and record.get("instance") == self.instance_id \
            and record.get("listen") == self.listen

    def may_restore(self, record):
        """True when a route snapshot written with ``record`` holds brokers that register here: this
        instance, on this port (its bind address may have changed)."""
        return isinstance(record, dict) and record.get("instance") == self.instance_id \
            and _port(record.get("listen")) == _port(self.listen)

    def why_not(self, record):
        """Why a snapshot written with ``record`` is not restored (``may_restore`` is false), in plain words."""
        if not isinstance(record, dict):
            return "it was written before snapshots named their instance, so its brokers may be another's"
        if record.get("instance") != self.instance_id:
            return ("it was written by another instance (%s, listening on %s; this one is %s, its id kept beside "
                    "its kvConfigPath): that one's brokers never registered here"
                    % (record.get("instance"), record.get("listen"), self.instance_id))
        return ("this instance wrote it while listening on port %s, and listens on port %s now: brokers "
                "registered on the old port would be served here without ever beating here (they register "
                "again within 30 s of being pointed here)" % (_port(record.get("listen")), _port(self.listen)))

    def describe(self, record):
        if not isinstance(record, dict):
            return "an unknown instance (a file from before instance ids)"
        return "instance %s listening on %s" % (record.get("instance"), record.get("listen"))

    @classmethod
    def for_config(cls, config):
        return cls(load_instance_id(config.instance_id_path()), "%s:%s" % (config.bindAddress, config.listenPort))


def _port(listen):
    """The port of a ``host:port`` text (an IPv6 host has colons of its own), or None."""
    return str(listen).rpartition(":")[2] if listen else None


def load_instance_id(path):
    """The id in ``path``, made (and written atomically) on an instance's first start."""
    try:
        with open(path) as f:
            text = f.read().strip()
        if text:
            return text
    except FileNotFoundError:
        pass
    except OSError as e:
        log.warn("instance id {path} unreadable ({err}): using a new one", path=path, err=e)
    instance_id = uuid.uuid4().hex
    try:
        write_atomic(path, (instance_id + "\n").encode())
    except OSError as e:
        log.warn("instance id {path} not written ({err}): routes restored at the next start will be ignored",
                 path=path, err=e)
    return instance_id
