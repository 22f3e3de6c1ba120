"""A ``-c`` file written for the Java NameServer, started here without ``bindAddress``: the one difference
its operator cannot see until remote brokers fail to connect.

Java's NameServer listens on every interface (4.9 always; 5.x's NettyServerConfig.bindAddress defaults to
0.0.0.0). This one binds 127.0.0.1 unless told otherwise: a server every host can reach should be a
choice. So an existing Java file, started as it is, gives a server only this host can reach.

A file is *Java-style* when every key it sets that either server knows is one Java's NamesrvStartup reads
(NamesrvConfig, NettyServerConfig, NettyClientConfig, ControllerConfig) and none is ours (the properties
of namesrv/config/ours.py): it was written for a Java name server, or copied from one. A file with one of
our keys was written for this server, by someone who has read its defaults; an empty file says nothing.
"""

from namesrv.config.keys import JAVA_ONLY_KEYS
from namesrv.config.ours import OURS
from namesrv.config.properties import load_properties_file
from namesrv.config.tables import BY_NAME

_OURS = frozenset(p.name for p in OURS)


def is_java_style(keys):
    """True for the keys of a file written for the Java NameServer (module docstring)."""
    known = [key for key in keys if key in BY_NAME or key in JAVA_ONLY_KEYS]
    return bool(known) and not any(key in _OURS for key in known)


def java_file_without_bind(config_file, overrides):
    """The start-up warning for a Java-style ``config_file`` that leaves ``bindAddress`` to our default (and
    whose command line does not set it either), or None."""
    if not config_file or "bindAddress" in (overrides or {}):
        return None
    try:
        keys = list(load_properties_file(config_file))
    except (OSError, ValueError):   # the loader has refused it already: that line is the one to read
        return None
    if "bindAddress" in keys or not is_java_style(keys):
        return None
    return ("%s reads like a Java NameServer's file (only Java's keys) and sets no bindAddress: this server "
            "listens on 127.0.0.1 only (the Java one on every interface), so other hosts' brokers and clients "
            "cannot reach it; add bindAddress=0.0.0.0 to the file (or --host 0.0.0.0) to listen as Java does"
            % config_file)
