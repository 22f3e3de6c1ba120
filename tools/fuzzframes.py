"""One fuzzed frame, and the frames of one fuzzed connection (``fuzz_frame``, ``plan_connection``).

Draft mutations live in ``tools.mutations``; this module adds the two byte levels
(header bytes, frame lengths) and the weights. About one frame in eight is sent
unmutated, so valid registrations and KV writes keep the tables busy between the
broken ones.
"""

import json
import os
import struct

from tools import frames, mutations as m
from tools.frames import Draft

_INT = struct.Struct(">i")
VECTOR_DIR = os.environ.get("NAMESRV_VECTORS", os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "..", "shared", "vectors"))


# -- level 2: header bytes -------------------------------------------------------------

def h_json_text(rng, header, draft):
    pick = rng.randrange(11)
    if pick == 0 and header:
        b = bytearray(header)
        b[rng.randrange(len(b))] = rng.randrange(256)
        return bytes(b)
    if pick == 1:
        return header[:rng.randrange(len(header) + 1)]
    if pick == 2:
        pos = rng.randrange(len(header) + 1)
        return header[:pos] + rng.randbytes(rng.randint(1, 8)) + header[pos:]
    if pick == 3:
        return b"\xef\xbb\xbf" + header
    if pick == 4:
        return rng.choice((b"[]", b"1", b'"s"', b"null", b"", b"  ", b"{}", b'{"code":null}', b"{" * 3))
    if pick == 5:
        depth = rng.choice((50, 900, 1100, 20000))
        nested = b"[" * depth + b"]" * depth if rng.random() < 0.5 else b'{"a":' * depth + b"1" + b"}" * depth
        key = rng.choice((b"remark", b"extFields", b"code", b"language"))
        return b'{"' + key + b'":' + nested + b"," + header[1:]
    if pick == 6:
        return b'{"code":"x","code":' + json.dumps(draft.header.get("code")).encode() + b"," + header[1:]
    if pick == 7:
        key = rng.choice((b"opaque", b"code", b"version", b"flag"))
        return b'{"' + key + b'":' + rng.choice((b"9" * 5000, b"NaN", b"Infinity", b"-Infinity", b"1e400",
                                                 b"-0", b"1E2", b"0x10")) + b"," + header[1:]
    if pick == 8:
        pos = rng.randrange(len(header) + 1)
        return header[:pos] + rng.choice((b"\xff", b"\xed\xa0\x80", b"\xc0\x80", b"\x00")) + header[pos:]
    if pick == 9:
        return json.dumps(json.loads(header), indent=rng.choice((1, 4))).encode() if _loads(header) else header
    return header + rng.choice((b" ", b"\n", b"x", b"}", b",{}"))


def _loads(data):
    try:
        json.loads(data)
        return True
    except (ValueError, RecursionError):
        return False


def _rocketmq_length_fields(header):
    """(offset, width) of every length field a ROCKETMQ header walker would read."""
    fields = [(13, 4)]
    try:
        (remark,) = _INT.unpack_from(header, 13)
        pos = 17 + max(remark, 0)
        fields.append((pos, 4))
        (ext,) = _INT.unpack_from(header, pos)
        pos += 4
        end = pos + ext
        while pos + 2 <= min(end, len(header)):
            fields.append((pos, 2))
            (k,) = struct.unpack_from(">h", header, pos)
            pos += 2 + max(k, 0)
            fields.append((pos, 4))
            (v,) = _INT.unpack_from(header, pos)
            pos += 4 + max(v, 0)
    except struct.error:
        pass
    return [(o, w) for o, w in fields if o + w <= len(header)]


def h_rocketmq_bytes(rng, header, draft):
    pick = rng.randrange(5)
    if pick <= 1:
        fields = _rocketmq_length_fields(header)
        if fields:
            offset, width = rng.choice(fields)
            fmt = ">h" if width == 2 else ">i"
            (old,) = struct.unpack_from(fmt, header, offset)
            limit = 0x7FFF if width == 2 else 0x7FFFFFFF
            new = rng.choice((-1, 0, 1, old - 1, old + 1, len(header), len(header) - offset, limit, -limit - 1))
            new = max(-limit - 1, min(limit, new))
            return header[:offset] + struct.pack(fmt, new) + header[offset + width:]
    if pick == 2:
        return header[:rng.randrange(len(header) + 1)]
    if pick == 3:
        return header + rng.randbytes(rng.randint(1, 16))
    b = bytearray(header)
    for _ in range(rng.randint(1, 4)):
        if b:
            b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
    return bytes(b)


# -- level 3: the frame ------------------------------------------------------------------

def f_serialize_byte(rng, header, body, st):
    return frames.assemble(header, body, rng.choice((1 - st, rng.randrange(256), 2, 0xFF))), False


def f_header_length(rng, header, body, st):
    body = body or b""
    n = rng.choice((0, len(header) - 1, len(header) + 1, len(header) + len(body), len(header) + len(body) + 1,
                    0xFFFFFF, rng.randrange(0x1000000)))
    return frames.assemble(header, body, st, header_length=max(0, n)), False


def f_total_length(rng, header, body, st):
    true = 4 + len(header) + len(body or b"")
    n = rng.choice((true - 1, true + 1, true - rng.randint(2, 40), true + rng.randint(2, 40), 0, 1, 3, -1,
                    -2**31, 16777212, 16777213, 2**31 - 1))
    return frames.assemble(header, body, st, total_length=n), True


def f_truncate(rng, header, body, st):
    data = frames.assemble(header, body, st)
    return data[:rng.randrange(1, len(data))], True


def f_garbage(rng, header, body, st):
    junk = rng.choice((rng.randbytes(rng.randint(1, 32)), b"\0\0\0\0", b"\xff" * 8, b"\0\0\0\x05\0\0\0\0\0"))
    return frames.assemble(header, body, st) + junk, True


DRAFT_MUTATIONS = [
    (m.m_ext_drop, 6), (m.m_ext_nasty, 8), (m.m_ext_wrong_type, 5), (m.m_ext_many, 2), (m.m_ext_shape, 2),
    (m.m_code, 4), (m.m_version, 4), (m.m_flag, 2), (m.m_opaque, 1), (m.m_language, 2), (m.m_remark, 2),
    (m.m_unknown_keys, 1), (m.m_serialize, 1), (m.m_body_bytes, 6), (m.m_body_json, 8), (m.m_crc, 3),
    (m.m_oneway, 1), ("compressed", 7),
]
FRAME_MUTATIONS = [(f_serialize_byte, 3), (f_header_length, 3), (f_total_length, 2), (f_truncate, 1),
                   (f_garbage, 1)]
_LEVELS = (("draft", 70), ("header", 20), ("frame", 10))


def _pick(rng, weighted):
    return rng.choices([f for f, _ in weighted], [w for _, w in weighted])[0]


def vector_drafts():
    """Drafts of the captured Java request frames (empty when the vectors are absent)."""
    from namesrv.protocol.codec import decode_frame
    from namesrv.protocol.codes import LanguageCode

    drafts = []
    if not os.path.isdir(VECTOR_DIR):
        return drafts
    for name in sorted(os.listdir(VECTOR_DIR)):
        if name.startswith("req_") and name.endswith(".bin"):
            with open(os.path.join(VECTOR_DIR, name), "rb") as f:
                c = decode_frame(f.read()[4:])
            header = {"code": c.code, "extFields": c.ext, "flag": c.flag, "language": LanguageCode(c.language).name,
                      "opaque": c.opaque, "remark": c.remark, "version": c.version}
            drafts.append(Draft(header, c.body, c.serialize_type))
    return drafts


def fuzz_frame(rng, opaque=1, bomb_limit=1 << 20, vectors=()):
    """One frame: a valid request (about 1 in 8) or one with 1-3 mutations."""
    if vectors and rng.random() < 0.1:
        v = rng.choice(vectors)
        draft = Draft(json.loads(json.dumps(v.header)), v.body, v.serialize_type)
        draft.header["opaque"] = opaque
    else:
        draft = frames.seed_draft(rng, opaque)
    draft.ascii_json = rng.random() < 0.7
    labels = []
    header = None
    data = None
    desync = False
    for _ in range(0 if rng.random() < 0.125 else rng.choice((1, 1, 2, 3))):
        level = _pick(rng, _LEVELS)
        if level == "draft" and header is None:
            fn = _pick(rng, DRAFT_MUTATIONS)
            if fn == "compressed":
                m.m_compressed(rng, draft, bomb_limit)
                labels.append("compressed")
            else:
                fn(rng, draft)
                labels.append(fn.__name__)
        elif level == "header" and data is None:
            if header is None:
                _fix_crc(draft, labels)
                header = frames.encode_header(draft)
            fn = h_json_text if draft.serialize_type == 0 else h_rocketmq_bytes
            header = fn(rng, header, draft)
            labels.append(fn.__name__)
        elif level == "frame" and data is None:
            if header is None:
                _fix_crc(draft, labels)
                header = frames.encode_header(draft)
            fn = _pick(rng, FRAME_MUTATIONS)
            data, desync = fn(rng, header, draft.body, draft.serialize_type)
            labels.append(fn.__name__)
    if header is None:
        _fix_crc(draft, labels)
        header = frames.encode_header(draft)
    if data is None:
        data = frames.assemble(header, draft.body, draft.serialize_type)
    return m.FuzzFrame(data, draft.header.get("code"), tuple(labels), desync)


def _fix_crc(draft, labels):
    """Keep the CRC right after body mutations, so the body decoder is reached (unless the CRC was the target)."""
    ext = draft.header.get("extFields")
    if "m_crc" in labels or not isinstance(ext, dict):
        return
    if draft.header.get("code") == 103 and ext.get("bodyCrc32") not in (None, "0"):
        ext["bodyCrc32"] = str(frames.crc32(draft.body))


def plan_connection(rng, max_frames=6, first_opaque=1, bomb_limit=1 << 20, vectors=()):
    """The frames for one connection; a frame that breaks the framing is always the last."""
    plan = []
    for i in range(rng.randint(1, max_frames)):
        frame = fuzz_frame(rng, first_opaque + i, bomb_limit, vectors)
        plan.append(frame)
        if frame.desync:
            break
    return plan
