"""A property as the table describes it (Java name, Java type, default, meaning, marks), and how its text
becomes a value. The tables themselves are one module per Java class (namesrvconfig, nettyserverconfig,
controllerconfig) plus ours; namesrv/config/__init__.py joins them.

The ``runtime`` mark is the allow-list of configuration from the network: only those keys may be changed by
UPDATE_NAMESRV_CONFIG (318) and UPDATE_CONTROLLER_CONFIG (1009), and only those may be in the instance's
runtime overlay file (namesrv/config/overlay.py). A key is marked only when every reader takes a new value
live (read per request, per connection, or by a timer restarted on change); paths, ports, addresses, security
switches and the controller's membership never are, whatever ``configBlackList`` says.
"""

import os
import re
from dataclasses import dataclass


class ConfigError(ValueError):
    """A property cannot be applied; the message names the source (file), the key and the value."""


@dataclass(frozen=True)
class Property:
    name: str
    kind: str           # Java type: "int", "long", "boolean" or "String"
    default: object
    description: str
    path: bool = False  # a file or directory: "~" is expanded
    auto: object = None  # for "auto": a function giving the value this machine should use
    per_instance: bool = False  # a default file path that carries the port (see instance_path)
    port: bool = False   # a TCP port: 0-65535
    informational: bool = False  # Java's, accepted and kept, changes nothing here (warned about when set)
    runtime: bool = False  # the network may change it (UPDATE_NAMESRV_CONFIG, UPDATE_CONTROLLER_CONFIG)
    minimum: object = None  # the smallest value accepted (a timer's period: Java refuses 0 at start too)
    beside: str = None  # per_instance: the default file sits in the directory of this property's file

    @property
    def type(self):
        return {"int": int, "long": int, "boolean": bool, "String": str}[self.kind]


def Int(name, default, description, **marks):
    return Property(name, "int", default, description, **marks)


def Long(name, default, description, **marks):
    return Property(name, "long", default, description, **marks)


def Port(name, default, description, **marks):
    """A TCP port: an int Java would take, refused here outside 0-65535 before anything binds it."""
    return Property(name, "int", default, description, port=True, **marks)


def Bool(name, default, description, **marks):
    return Property(name, "boolean", default, description, **marks)


def AutoInt(name, default, description, auto, **marks):
    """An int that may also be given as ``auto``: resolved when parsed, so every reader (``-p``,
    GET_NAMESRV_CONFIG, the service) sees the number actually used."""
    return Property(name, "int", default, description, auto=auto, **marks)


def usable_cpus():
    """CPUs this process may run on (its affinity mask, as taskset or a container's cpuset sets it)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def default_read_workers():
    """One read worker per usable CPU but one (the main process keeps a core); 0 on one CPU."""
    return max(0, usable_cpus() - 1)


def Str(name, default, description, path=False, **marks):
    return Property(name, "String", default, description, path, **marks)


def InstanceFile(name, default, description, **marks):
    """A file the server writes, whose default differs per listening port (instance_path); with
    ``beside="kvConfigPath"`` the default sits in that file's directory (where an operator who moved the
    KV store keeps the instance's other files)."""
    return Property(name, "String", default, description, path=True, per_instance=True, **marks)


#: the port whose instance keeps Java's default file names (a drop-in for one Java NameServer)
JAVA_PORT = 9876


def instance_path(path, port):
    """``path`` for the instance on ``port``: Java's name on 9876, ``name-<port>.ext`` elsewhere,
    so two instances on one host never share a default file (a KV store, a route snapshot)."""
    if not path or int(port) == JAVA_PORT:
        return path
    root, ext = os.path.splitext(path)
    return "%s-%d%s" % (root, int(port), ext)


def home(*parts):
    """A path under the home directory, as Java's ``System.getProperty("user.home")`` defaults are."""
    return os.path.join("~", *parts)


_INTEGER = re.compile(r"[+-]?[0-9]+\Z")
_RANGES = {"int": (-2 ** 31, 2 ** 31 - 1), "long": (-2 ** 63, 2 ** 63 - 1)}


def parse_value(prop, text):
    """``text`` as a value of ``prop``; ValueError says what is wrong with it.

    Blanks around the value are ignored for every type (Java 5.x trims only Strings, so
    ``listenPort=9876 `` silently keeps Java's default: here it means 9876).
    """
    text = str(text).strip()
    if prop.auto is not None and text.lower() == "auto":
        return prop.auto()
    if prop.kind == "boolean":
        lowered = text.lower()
        if lowered not in ("true", "false"):
            raise ValueError("not a boolean (true or false)")
        return lowered == "true"
    if prop.kind in _RANGES:
        if not _INTEGER.match(text):
            raise ValueError("not an integer or auto" if prop.auto is not None else "not an integer")
        value = int(text)
        low, high = _RANGES[prop.kind]
        if not low <= value <= high:
            raise ValueError("out of range for a Java %s" % prop.kind)
        if prop.port and not 0 <= value <= 65535:
            raise ValueError("not a TCP port (0-65535)")
        if prop.minimum is not None and value < prop.minimum:
            raise ValueError("below %d, the smallest value it takes" % prop.minimum)
        return value
    if prop.path:
        if prop.name == "rocketmqHome" and not text:
            text = os.environ.get("ROCKETMQ_HOME", "")
        return os.path.expanduser(text) if text else text
    return text


def java_text(value):
    """A value as Java prints it (``true``/``false`` for booleans)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)
