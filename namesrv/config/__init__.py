"""Every NameServer property with its Java name, type, default and meaning, and the live config.

Names are the Java field names of NamesrvConfig, NettyServerConfig and ControllerConfig (4.9 and
5.x), so an existing ``namesrv.config.properties`` keeps working; our own additions follow the same
style. Where Java parses a bad value silently (``Integer.parseInt`` failing leaves the default,
``Boolean.parseBoolean("yes")`` is false), we refuse it with a message naming the key: a typo must
not quietly change behaviour.

- ``table``: what a property is, and how its text becomes a value;
- ``namesrvconfig``, ``nettyserverconfig``, ``controllerconfig``: Java's classes, one module each;
  ``ours``: what Java does not have; ``tables``: all of them in one list;
- ``live``: the running server's values (``NamesrvConfig``), changed only by ``update()``;
- ``runtime``: what the network may change (the ``runtime`` mark: an allow-list), ``overlay``: the
  instance's file those changes are kept in, applied after the ``-c`` file; ``origins``: where each
  value came from (``-p``);
- ``properties``: the ``.properties`` file format; ``keys``: misspelt and Java-only keys;
  ``confgen`` and ``reference``: the generated conf/namesrv.properties and docs/properties.md.
"""

from namesrv.config.controllerconfig import CONTROLLER_CONFIG_KEYS
from namesrv.config.live import ConfigError, NamesrvConfig
from namesrv.config.namesrvconfig import ALWAYS_BLACK_LISTED, DEFAULT_BLACK_LIST
from namesrv.config.table import (JAVA_PORT, Property, default_read_workers, instance_path, java_text, parse_value,
                                  usable_cpus)
from namesrv.config.tables import PROPERTIES, property_named

__all__ = ["ALWAYS_BLACK_LISTED", "CONTROLLER_CONFIG_KEYS", "DEFAULT_BLACK_LIST", "JAVA_PORT", "PROPERTIES",
           "ConfigError", "NamesrvConfig", "Property", "default_read_workers", "instance_path", "java_text",
           "parse_value", "property_named", "usable_cpus"]
