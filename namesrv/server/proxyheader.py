"""PROXY protocol headers (HAProxy's v1 text line, v2 binary block): where one ends, what it says.

Twisted parses a complete header (``V1Parser.parse``, ``V2Parser.parse`` in
``twisted.protocols.haproxy``); this module finds the header's end in a byte stream, bounds it and
checks what the parser gives back. Twisted's own wrapper (``HAProxyProtocolWrapper``) is not used:
it closes a connection whose first read is shorter than 8 (v1) or 16 (v2) bytes, lets a v2 header
claim 64 KiB, and takes the v1 parser's word for addresses (``PROXY TCP4 evil 1.2.3.4 -1 x`` gets
through it or raises outside its error type). The v1 parser also refuses the bare ``PROXY UNKNOWN``
line that the specification allows, which is read here without it. Twisted exports only ``proxyEndpoint`` from that
package; the parsers' modules are private to it, so ``tests/server/test_proxyheader.py`` runs them
against the installed Twisted.

Bounds: a v1 line is at most 107 bytes with its CRLF (the specification's maximum), a v2 header at
most ``V2_MAX_BYTES`` (16 fixed bytes, the addresses and TLVs: 216 bytes of UNIX addresses plus
AWS's, GCP's, Azure's or HAProxy's TLVs fit many times over; Netty's decoder allows 64 KiB).
"""

import ipaddress
import struct

from twisted.internet.address import IPv4Address, IPv6Address
from twisted.protocols.haproxy._exceptions import InvalidProxyHeader
from twisted.protocols.haproxy._v1parser import V1Parser
from twisted.protocols.haproxy._v2parser import V2Parser

V1_SIGNATURE = b"PROXY "
V2_SIGNATURE = V2Parser.PREFIX           # \r\n\r\n\0\r\nQUIT\n
V1_UNKNOWN = b"PROXY UNKNOWN"
V1_MAX_BYTES = 107
V2_FIXED_BYTES = 16
V2_MAX_BYTES = V2_FIXED_BYTES + 2048
#: the longest signature: this many bytes always tell a header from anything else
SIGNATURE_BYTES = len(V2_SIGNATURE)
_V2_LENGTH = struct.Struct("!H")
_V2_VERSION = 0x20
_V2_STREAM = 0x01
_V2_INET = 0x10
_V2_UNIX = 0x30
_V2_LOCAL = 0x00
_V2_PROXY = 0x01


class BadHeader(ValueError):
    """A header that is malformed, too long, or names an address we cannot use."""


class ProxyHeader:
    """A complete header: its ``version`` (1 or 2) and the client's ``source`` address, or None when the
    header names none (v1 UNKNOWN, v2 LOCAL or an unspecified or UNIX family: a health check, or a
    proxy that does not know): the connection's own address stands."""

    __slots__ = ("version", "source", "length")

    def __init__(self, version, source, length):
        self.version = version
        self.source = source
        self.length = length

    def __repr__(self):
        return "ProxyHeader(v%d, %r, %d bytes)" % (self.version, self.source, self.length)


def signature_version(data):
    """1 or 2 when ``data`` starts with that version's signature, 0 when it is too short to tell yet
    (a prefix of a signature), None when it is no PROXY header."""
    for version, signature in ((1, V1_SIGNATURE), (2, V2_SIGNATURE)):
        head = data[:len(signature)]
        if signature.startswith(head):
            return version if len(head) == len(signature) else 0
    return None


def split_header(data):
    """(ProxyHeader, the bytes after it) once ``data`` holds a whole header, None while it may still
    become one; BadHeader when it cannot."""
    version = signature_version(data)
    if version is None:
        raise BadHeader("no PROXY protocol signature")
    if version == 1:
        return _split_v1(data)
    if version == 2:
        return _split_v2(data)
    return None


def _split_v1(data):
    end = data.find(b"\r\n", 0, V1_MAX_BYTES)
    if end < 0:
        if len(data) >= V1_MAX_BYTES:
            raise BadHeader("a v1 line longer than %d bytes" % V1_MAX_BYTES)
        return None
    line = bytes(data[:end])
    source = None
    if line != V1_UNKNOWN:
        info = _parsed(V1Parser.parse, line)
        if info.source is not None:
            version = 4 if line.startswith(b"PROXY TCP4 ") else 6
            source = _checked(info.source, version)
            _checked(info.destination, version)
    return ProxyHeader(1, source, end + 2), data[end + 2:]


def _split_v2(data):
    if len(data) < V2_FIXED_BYTES:
        return None
    if data[12] & 0xF0 != _V2_VERSION or data[12] & 0x0F not in (_V2_LOCAL, _V2_PROXY):
        raise BadHeader("v2 version/command byte 0x%02x" % data[12])
    (size,) = _V2_LENGTH.unpack_from(data, 14)
    total = V2_FIXED_BYTES + size
    if total > V2_MAX_BYTES:
        raise BadHeader("a v2 header of %d bytes (at most %d)" % (total, V2_MAX_BYTES))
    if len(data) < total:
        return None
    block = bytes(data[:total])
    info = _parsed(V2Parser.parse, block)
    source = info.source
    if source is not None:
        family, transport = block[13] & 0xF0, block[13] & 0x0F
        if transport != _V2_STREAM:
            raise BadHeader("a v2 header for datagrams on a stream")
        if family == _V2_UNIX:
            source = None        # a path: the proxy's own address stands
        else:
            version = 4 if family == _V2_INET else 6
            source = _checked(source, version)
            _checked(info.destination, version)
    return ProxyHeader(2, source, total), data[total:]


def _parsed(parse, header):
    """Twisted's parse of a whole header; every way it fails is a BadHeader (its own InvalidProxyHeader,
    and the ValueError, KeyError or struct.error that a bad port, host or family raise past it)."""
    try:
        return parse(header)
    except (InvalidProxyHeader, ValueError, KeyError, IndexError, struct.error) as e:
        raise BadHeader("malformed %s" % (type(e).__name__,))


def _checked(address, version):
    """``address`` with its host as ipaddress writes it, if that is an IP of ``version`` and the port a TCP port."""
    try:
        host = ipaddress.ip_address(address.host)
    except (ValueError, AttributeError):
        raise BadHeader("not an IP address: %r" % (getattr(address, "host", address),))
    if host.version != version:
        raise BadHeader("an IPv%d address in a TCP%d header" % (host.version, version))
    port = address.port
    if not isinstance(port, int) or not 0 <= port <= 65535:
        raise BadHeader("not a TCP port: %r" % (port,))
    return (IPv4Address if version == 4 else IPv6Address)("TCP", str(host), port)
