"""``make_config(**overrides)``: a real NamesrvConfig for tests, so defaults come from one table.

A ``SimpleNamespace`` config lets code fall back on defaults of its own (and hides a
property the code reads but the table lacks); a real config has every property, with
the value the running server would have.
"""

from namesrv.config import NamesrvConfig, java_text, property_named


def make_config(**overrides):
    """The defaults of namesrv/config/__init__.py's table with ``overrides`` (Python values) applied.

    An unknown name is a TypeError: a typo in a test must not quietly become an extra key.
    """
    unknown = sorted(name for name in overrides if property_named(name) is None)
    if unknown:
        raise TypeError("not NameServer properties: %s" % ", ".join(unknown))
    config = NamesrvConfig()
    config.update({name: java_text(value) for name, value in overrides.items()}, source="test", announce=False)
    return config


def service_config(tmp_path, **overrides):
    """``make_config`` for a whole in-process service: a free port on 127.0.0.1, every file under
    ``tmp_path``, no event log, and the main process alone (read workers are tested over sockets
    in tests/integration: a worker listens only once its first replica is in)."""
    values = dict(listenPort=0, bindAddress="127.0.0.1", kvConfigPath=str(tmp_path / "kv.json"),
                  routeSnapshotPath=str(tmp_path / "routes.snapshot"), logDir=str(tmp_path / "logs"),
                  configStorePath=str(tmp_path / "namesrv.properties"), eventLogEnable=False,
                  routeReadWorkers=0)
    values.update(overrides)
    return make_config(**values)
