"""Which NameServer instance this is: an id kept next to its KV file, and where it listens.

Files an instance writes say which instance wrote them (the route snapshot does), so that
a second instance on the same host, started on another port or with another KV file,
never restores the first one's routes and serves brokers that never registered with it.
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
        """True when ``record`` (from a file's header) names this instance."""
        return isinstance(record, dict) and record.get("instance") == self.instance_id \
            and record.get("listen") == self.listen

    def describe(self, record):
        if not isinstance(record, dict):
            return "an unknown instance (a file from before instance ids)"
        return "instance %s listening on %s" % (record.get("instance"), record.get("listen"))

    @classmethod
    def for_config(cls, config):
        return cls(load_instance_id(config.instance_id_path()), "%s:%s" % (config.bindAddress, config.listenPort))


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
