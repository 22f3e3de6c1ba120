"""Mutations of NameServer frames at three levels, as pure functions of a ``random.Random``.

1. the draft: header fields (wrong types, extreme numbers, hostile strings), extFields
   (missing, junk, thousands of them), bodies (JSON shapes, compressed registration
   internals, zlib streams, bombs up to ``bomb_limit`` bytes) and the CRC;
2. the encoded header bytes: JSON text (truncated, nested 20,000 deep, duplicate keys,
   BOM, invalid UTF-8, huge integers) or ROCKETMQ binary fields (every length field);
3. the frame: serialize type byte, header length word, total length, truncation.

``fuzz_frame`` returns a ``FuzzFrame``. When the total length no longer matches the
bytes sent (``desync``), the rest of the connection is noise, so plans end there.
"""

import json
import struct
import zlib
from dataclasses import dataclass

from tools import frames

NASTY_STRINGS = (
    "", " ", "0", "-1", "1.5", "null", "true", "TRUE", "yes", "9" * 30, "-9223372036854775809",
    "2147483648", "1e309", "NaN", "\u0000", "\ud800", "a\udfffb", "\U0001F600", "é日本", "%s%n%x", "\\",
    '"', "{", "[]", "a" * 70000, "x;y:z", "127.0.0.1:-1", "\r\n", " FuzzTopic-1 ", "\u202e",
)


@dataclass
class FuzzFrame:
    data: bytes
    code: object
    mutations: tuple
    desync: bool = False


def random_json(rng, depth=0):
    pick = rng.randrange(14 if depth < 3 else 10)
    if pick < 10:
        return rng.choice((None, True, False, 0, -1, 2**31, -2**63 - 1, 10**30, 1.5, float("nan"),
                           float("inf"), "", rng.choice(NASTY_STRINGS), "FuzzTopic-1"))
    if pick == 10:
        return [random_json(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    if pick == 11:
        return {rng.choice(NASTY_STRINGS[:20]): random_json(rng, depth + 1) for _ in range(rng.randint(0, 3))}
    if pick == 12:
        return [rng.choice((0, "x", None, {}))] * rng.choice((1000, 20000))
    nested = {}
    for _ in range(rng.choice((20, 200))):
        nested = [nested]
    return {"a": nested}


def _replace_random_node(rng, value):
    """``value`` with one node (maybe the root) replaced by a random JSON value."""
    if not isinstance(value, (dict, list)) or not value or rng.random() < 0.15:
        return random_json(rng)
    if isinstance(value, dict):
        key = rng.choice(list(value))
        value[key] = _replace_random_node(rng, value[key])
    else:
        i = rng.randrange(len(value))
        value[i] = _replace_random_node(rng, value[i])
    return value


# -- level 1: the draft ------------------------------------------------------------

def _ext(draft):
    ext = draft.header.get("extFields")
    if not isinstance(ext, dict):
        ext = draft.header["extFields"] = {}
    return ext


def m_ext_drop(rng, d):
    ext = _ext(d)
    if ext:
        del ext[rng.choice(list(ext))]


def m_ext_nasty(rng, d):
    ext = _ext(d)
    key = rng.choice(list(ext) + ["brokerId", "brokerName", "topic", "namespace", "compressed", "key"])
    ext[key] = rng.choice(NASTY_STRINGS)


def m_ext_wrong_type(rng, d):
    ext = _ext(d)
    key = rng.choice(list(ext) or ["topic"])
    ext[key] = random_json(rng)


def m_ext_many(rng, d):
    ext = _ext(d)
    for i in range(rng.choice((10, 200, 3000))):
        ext["junk%d" % i] = "v" * rng.randint(0, 20)


def m_ext_shape(rng, d):
    d.header["extFields"] = rng.choice((None, {}, [], "topic=x", 5, [["topic", "x"]], {"": ""}))


def m_code(rng, d):
    d.header["code"] = rng.choice((rng.choice(frames.FUZZ_CODES), rng.randint(-32768, 32767), 2**31 - 1,
                                   -2**31, 0, "105", 105.0, 105.5, True, None, [105], 2**40))


def m_version(rng, d):
    d.header["version"] = rng.choice((-1, 0, 36, 37, 400, 401, 412, 413, 479, 480, 32767, -32768,
                                      2**31 - 1, "409", None, 4.2e1))


def m_flag(rng, d):
    d.header["flag"] = rng.choice((1, 2, 3, -1, 2**31 - 1, 0x100, "2", None))


def m_opaque(rng, d):
    d.header["opaque"] = rng.choice((0, -1, 2**31 - 1, -2**31, 2**31, "7", None, 1e9))


def m_language(rng, d):
    d.header["language"] = rng.choice(("CPP", "GO", "RUST", "NODE_JS", "KLINGON", "", 99, -1, None, 3, ["JAVA"]))


def m_remark(rng, d):
    d.header["remark"] = rng.choice(NASTY_STRINGS + (12, [1], {"a": 1}))


def m_unknown_keys(rng, d):
    d.header.update({"serializeTypeCurrentRPC": rng.choice(("ROCKETMQ", "XML", 3)), "extra": random_json(rng)})


def m_serialize(rng, d):
    d.serialize_type = 1 - d.serialize_type


def m_body_bytes(rng, d):
    body = bytearray(d.body or b"")
    pick = rng.randrange(5)
    if pick == 0 and body:
        for _ in range(rng.randint(1, 8)):
            body[rng.randrange(len(body))] ^= 1 << rng.randrange(8)
    elif pick == 1 and body:
        del body[rng.randrange(len(body)):]
    elif pick == 2:
        body += rng.randbytes(rng.randint(1, 64)) if rng.random() < 0.5 else b"\0" * rng.randint(1, 64)
    elif pick == 3:
        body = bytearray(rng.randbytes(rng.choice((1, 7, 100, 5000))))
    else:
        body = bytearray(rng.choice((b"", b"null", b"[]", b"{}", b'"x"', b"{\"a\":", b"\xff\xfe", b"1e999")))
    d.body = bytes(body)


def m_body_json(rng, d):
    try:
        value = json.loads(d.body or b"")
    except (ValueError, RecursionError):
        value = None
    d.body = json.dumps(_replace_random_node(rng, value), ensure_ascii=rng.random() < 0.5).encode(
        "utf-8", "surrogatepass")


def _topics(rng, n):
    names = [rng.choice(("", "x" * 300, " ", "a b", "\u00e9")) if rng.random() < 0.1
             else rng.choice(frames.FUZZ_TOPICS) for _ in range(n)]
    return [frames.topic_config(name, rng.choice((0, 4, -1, 2**31 - 1)), rng.choice((6, 0, 255, -1)))
            for name in names]


def m_compressed(rng, d, bomb_limit):
    """A compressed REGISTER_BROKER body with broken internals (the CRC is fixed afterwards)."""
    d.header["code"] = 103
    ext = _ext(d)
    ext.setdefault("brokerName", "fuzz-broker-0")
    ext.setdefault("brokerAddr", "127.0.0.1:20911")
    ext.setdefault("clusterName", "FuzzClusterA")
    ext.setdefault("brokerId", "0")
    ext["compressed"] = "true"
    mapping = [{"topic": "FuzzTopic-1", "bname": "fuzz-broker-0"}] if rng.random() < 0.3 else None
    raw = bytearray(frames.compressed_raw(_topics(rng, rng.randint(0, 5)), mapping=mapping))
    pick = rng.randrange(6)
    if pick == 0:
        pos = rng.randrange(max(1, len(raw) - 3))
        raw[pos:pos + 4] = struct.pack(">i", rng.choice((-1, 0, 2**31 - 1, len(raw), 1 << 20)))
    elif pick == 1:
        del raw[rng.randrange(len(raw)):]
    elif pick == 2:
        raw += rng.randbytes(rng.randint(1, 40))
    elif pick == 3:
        raw = bytearray(struct.pack(">i", 0)) + struct.pack(">i", 2**31 - 1)
    elif pick == 4:
        d.body = zlib.compress(b"\0" * rng.randint(1, max(1, bomb_limit)), 9)
        return
    data = zlib.compress(bytes(raw), rng.choice((0, 1, 9)))
    if rng.random() < 0.3:
        data = data[:rng.randrange(len(data))] if rng.random() < 0.5 else data + b"\0garbage"
    d.body = data


def m_crc(rng, d):
    _ext(d)["bodyCrc32"] = rng.choice(("1", "-1", "abc", "2147483648", "99999999999999999999", "",
                                       str(frames.crc32(d.body) ^ 1), str(zlib.crc32(d.body or b""))))


def m_oneway(rng, d):
    d.header["flag"] = 2
