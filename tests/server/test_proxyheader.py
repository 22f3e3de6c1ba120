"""PROXY protocol headers, byte by byte: where one ends, what it says, and what is refused.

Runs Twisted's own parsers (their modules are private to Twisted: a Twisted release that moves
them fails here first)."""

import struct

import pytest
from twisted.internet.address import IPv4Address, IPv6Address

from namesrv.server.proxyheader import (
    V1_MAX_BYTES, V2_MAX_BYTES, BadHeader, signature_version, split_header)
from tests import proxyheaders

FRAME = b"\x00\x00\x00\x10rest-of-a-frame!"


@pytest.mark.parametrize("header,source,version", [
    (proxyheaders.v1(("203.0.113.7", 40001)), IPv4Address("TCP", "203.0.113.7", 40001), 1),
    (proxyheaders.v1(("2001:db8::7", 40002), ("2001:db8::1", 9876)), IPv6Address("TCP", "2001:db8::7", 40002), 1),
    (proxyheaders.v2(("198.51.100.9", 50001)), IPv4Address("TCP", "198.51.100.9", 50001), 2),
    (proxyheaders.v2(("2001:db8::9", 50002), ("2001:db8::1", 9876)), IPv6Address("TCP", "2001:db8::9", 50002), 2),
])
def test_a_header_gives_its_source_and_leaves_what_follows(header, source, version):
    parsed, rest = split_header(header + FRAME)
    assert (parsed.version, parsed.source, parsed.length, rest) == (version, source, len(header), FRAME)


def test_an_ipv6_source_is_written_as_ipaddress_writes_it():
    """Twisted's v2 parser spells ::1 as 0:0:0:0:0:0:0:1; allow-lists and logs get the short form."""
    parsed, _ = split_header(proxyheaders.v2(("::1", 1), ("::1", 2)))
    assert parsed.source.host == "::1"


@pytest.mark.parametrize("header", [
    proxyheaders.v1(),                                         # PROXY UNKNOWN (Twisted's parser refuses it bare)
    b"PROXY UNKNOWN 2001:db8::7 2001:db8::1 1 2\r\n",           # UNKNOWN with addresses: ignored
    proxyheaders.v2(local=True),                                # LOCAL: HAProxy's health checks
    proxyheaders.v2(("203.0.113.7", 1), local=True),            # LOCAL with addresses: ignored
    proxyheaders.v2(),                                          # PROXY, family unspecified
    proxyheaders.v2_unix(),                                     # a UNIX socket: a path, no address
])
def test_a_header_without_an_address_leaves_the_connections_own(header):
    parsed, rest = split_header(header + FRAME)
    assert parsed.source is None and rest == FRAME


def test_tlvs_after_the_addresses_are_skipped():
    tlvs = proxyheaders.tlv(0x02, b"nameserver.example") + proxyheaders.tlv(0xEA, b"\x01vpce-0123456789abcdef")
    header = proxyheaders.v2(("203.0.113.7", 1), tlvs=tlvs)
    parsed, rest = split_header(header + FRAME)
    assert parsed.source.host == "203.0.113.7" and rest == FRAME


@pytest.mark.parametrize("header", [proxyheaders.v1(("203.0.113.7", 40001)),
                                    proxyheaders.v2(("2001:db8::9", 50002), ("2001:db8::1", 9876))])
def test_every_split_waits_for_the_rest(header):
    for cut in range(len(header)):
        assert split_header(header[:cut]) is None, cut
    parsed, rest = split_header(header)
    assert parsed.length == len(header) and rest == b""


@pytest.mark.parametrize("data,version", [
    (b"", 0), (b"P", 0), (b"PROXY", 0), (b"PROXY ", 1), (b"\r\n\r\n\x00\r\nQUI", 0),
    (b"\r\n\r\n\x00\r\nQUIT\n", 2), (b"\x00\x00\x00\x10", None), (b"\x16\x03\x01", None), (b"PROXX", None),
    (b"GET / HTTP/1.1\r\n", None), (b"RMQCTRL\x01", None), (b"\r\n\r\n\x01", None),
])
def test_the_first_bytes_tell_a_header_from_anything_else(data, version):
    assert signature_version(data) == version


@pytest.mark.parametrize("data", [
    b"PROXY TCP4 203.0.113.7 127.0.0.1 1\r\n",                       # a port missing
    b"PROXY TCP4 evil.example 127.0.0.1 1 2\r\n",                    # not an IP (Twisted's parser takes it)
    b"PROXY TCP4 2001:db8::7 127.0.0.1 1 2\r\n",                     # IPv6 in a TCP4 line
    b"PROXY TCP6 203.0.113.7 2001:db8::1 1 2\r\n",                   # IPv4 in a TCP6 line
    b"PROXY TCP4 203.0.113.7 127.0.0.1 x 2\r\n",                     # not a port (Twisted raises ValueError)
    b"PROXY TCP4 203.0.113.7 127.0.0.1 -1 2\r\n",                    # out of range
    b"PROXY TCP4 203.0.113.7 127.0.0.1 70000 2\r\n",
    b"PROXY TCP4 010.0.0.1 127.0.0.1 1 2\r\n",                       # leading zeros: octal or decimal?
    b"PROXY TCP4 203.0.113.\xff 127.0.0.1 1 2\r\n",                  # not UTF-8 (UnicodeDecodeError)
    b"PROXY UDP4 203.0.113.7 127.0.0.1 1 2\r\n",
    b"PROXY \r\n",
    b"PROXY " + b"9" * (V1_MAX_BYTES - 6),                            # no CRLF within 107 bytes
    b"PROXY TCP4 203.0.113.7 127.0.0.1 1 2" + b" " * 80 + b"\r\n",   # the CRLF past 107 bytes
    b"\x00\x00\x00\x10",                                              # a remoting frame
])
def test_malformed_v1_lines_are_refused(data):
    with pytest.raises(BadHeader):
        split_header(data)


def bad_v2(byte12=0x21, byte13=0x11, body=b"\xcb\x00\x71\x07\x7f\x00\x00\x01\x00\x01\x26\x94"):
    return proxyheaders.V2_SIGNATURE + bytes([byte12, byte13]) + struct.pack("!H", len(body)) + body


@pytest.mark.parametrize("data", [
    bad_v2(byte12=0x11),                               # version 1 in a binary header
    bad_v2(byte12=0x22),                               # command 2
    bad_v2(byte13=0x41),                               # family 4
    bad_v2(byte13=0x13),                               # transport 3
    bad_v2(byte13=0x12),                               # datagrams over a stream
    bad_v2(body=b"\xcb\x00\x71\x07"),                  # addresses cut short
    bad_v2(byte13=0x21),                               # IPv6 family, 12 bytes of addresses
    proxyheaders.V2_SIGNATURE + b"\x21\x11\xff\xff",   # 64 KiB claimed
    bad_v2(body=bytes(V2_MAX_BYTES - 15)),             # one byte over the cap
])
def test_malformed_or_oversized_v2_headers_are_refused(data):
    with pytest.raises(BadHeader):
        split_header(data)


def test_the_largest_v2_header_accepted():
    tlvs = proxyheaders.tlv(0x04, bytes(V2_MAX_BYTES - 16 - 12 - 3))
    header = proxyheaders.v2(("203.0.113.7", 1), tlvs=tlvs)
    assert len(header) == V2_MAX_BYTES
    assert split_header(header)[0].source.host == "203.0.113.7"
