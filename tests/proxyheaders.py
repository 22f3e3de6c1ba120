"""PROXY protocol headers as a proxy writes them (the specification's layout), for tests that send them."""

import ipaddress
import struct

V2_SIGNATURE = b"\r\n\r\n\x00\r\nQUIT\n"


def v1(source=None, destination=("127.0.0.1", 9876)):
    """``PROXY TCP4|TCP6 src dst sport dport\\r\\n``, or ``PROXY UNKNOWN\\r\\n`` without a source."""
    if source is None:
        return b"PROXY UNKNOWN\r\n"
    family = "TCP6" if ":" in source[0] else "TCP4"
    return ("PROXY %s %s %s %d %d\r\n" % (family, source[0], destination[0], source[1], destination[1])).encode()


def v2(source=None, destination=("127.0.0.1", 9876), local=False, tlvs=b"", family=None, transport=0x1):
    """A v2 header: PROXY with the addresses of ``source`` and ``destination`` (IPv4 or IPv6), LOCAL
    (``local``), or an unspecified family without ``source``; ``tlvs`` follow the addresses."""
    command = 0x20 if local else 0x21
    if source is None:
        return V2_SIGNATURE + bytes([command, 0x00]) + struct.pack("!H", len(tlvs)) + tlvs
    src, dst = ipaddress.ip_address(source[0]), ipaddress.ip_address(destination[0])
    if family is None:
        family = 0x10 if src.version == 4 else 0x20
    addresses = src.packed + dst.packed + struct.pack("!HH", source[1], destination[1])
    body = addresses + tlvs
    return V2_SIGNATURE + bytes([command, family | transport]) + struct.pack("!H", len(body)) + body


def v2_unix(source=b"/run/client.sock", destination=b"/run/haproxy.sock"):
    body = source.ljust(108, b"\0") + destination.ljust(108, b"\0")
    return V2_SIGNATURE + bytes([0x21, 0x31]) + struct.pack("!H", len(body)) + body


def tlv(kind, value):
    return bytes([kind]) + struct.pack("!H", len(value)) + value
