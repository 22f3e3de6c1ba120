"""The configured name server list and subgroups, checked once, when the server starts.

Java splits ``namesrvAddr`` on ``;`` and checks each part with ``string2SocketAddress`` (a broker
refuses to start on a bad one). A list served to every client must be right, so a bad entry
refuses to start here too, with a message naming the property and the entry.
"""

import re

#: what a subgroup may be: the path segment after /rocketmq/ (a unit name adds ``-unit``)
SUBGROUP = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}\Z")
_HOST = re.compile(r"[A-Za-z0-9]([A-Za-z0-9.-]{0,252}[A-Za-z0-9])?\Z")


def parse_namesrv_addr(text, key="addressServiceNamesrvAddr"):
    """``host:port;host:port`` as a tuple of ``host:port`` strings, in order, duplicates dropped.

    ValueError names ``key`` and the bad entry. IPv6 literals are refused: Java's
    ``string2SocketAddress`` splits at the last colon, so no Java client could use one.
    """
    addresses = []
    for part in str(text).split(";"):
        part = part.strip()
        if not part:
            continue
        host, sep, port = part.rpartition(":")
        if not sep or not _HOST.match(host) or not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError("%s: %r is not host:port (the list is host:port;host:port, as namesrvAddr)"
                             % (key, part))
        address = "%s:%d" % (host, int(port))
        if address not in addresses:
            addresses.append(address)
    return tuple(addresses)


def parse_subgroups(text, key="addressServiceSubgroups"):
    """``nsaddr;nsaddr-unit1`` as a tuple of subgroups; ValueError names ``key`` and the bad one."""
    subgroups = []
    for part in re.split(r"[;,]", str(text)):
        part = part.strip()
        if not part:
            continue
        if not SUBGROUP.match(part):
            raise ValueError("%s: %r is not a subgroup (letters, digits, '.', '_', '-'; at most 128)" % (key, part))
        if part not in subgroups:
            subgroups.append(part)
    if not subgroups:
        raise ValueError("%s is empty: Java clients ask for /rocketmq/nsaddr unless told otherwise" % key)
    return tuple(subgroups)


def java_list(addresses):
    """The answer's text: Java's ``namesrvAddr`` format, which ``TopAddressing`` passes on as it is."""
    return ";".join(addresses)
