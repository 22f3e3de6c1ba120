"""Hypothesis strategies for NameServer request drafts (``tools.frames.Draft``).

They complement the seeded mutators of ``tools.fuzzframes``: hypothesis picks every field
itself, so a failure shrinks to the smallest header/body that still breaks the server.
"""

import json
import zlib

from hypothesis import strategies as st

from tools import frames
from tools.frames import Draft

KNOWN_FIELDS = ("topic", "brokerName", "brokerAddr", "clusterName", "brokerId", "haServerAddr", "compressed",
                "bodyCrc32", "namespace", "key", "value", "cluster", "acceptStandardJsonOnly",
                "heartbeatTimeoutMillis", "enableActingMaster")

names = st.sampled_from(frames.FUZZ_TOPICS + tuple(frames.FUZZ_BROKERS) + frames.FUZZ_CLUSTERS
                        + frames.FUZZ_NAMESPACES)
ext_values = st.one_of(names, st.text(max_size=40), st.integers(-2**63, 2**63).map(str),
                       st.sampled_from(("true", "false", "0", "-1", "", "\ud800")))
json_scalars = st.one_of(st.none(), st.booleans(), st.integers(-2**64, 2**64), st.floats(), st.text(max_size=20))
json_values = st.recursive(json_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=10), inner, max_size=4)), max_leaves=12)


@st.composite
def register_bodies(draw):
    topics = [frames.topic_config(draw(names), draw(st.integers(-2, 64)), draw(st.integers(-1, 255)))
              for _ in range(draw(st.integers(0, 5)))]
    if draw(st.booleans()):
        return frames.register_body(topics, draw(st.integers(-1, 2**63 - 1))), False
    return zlib.compress(frames.compressed_raw(topics, draw(st.integers(0, 10)))), True


@st.composite
def drafts(draw):
    code = draw(st.one_of(st.sampled_from(frames.FUZZ_CODES), st.integers(-32768, 32767)))
    ext = draw(st.dictionaries(st.sampled_from(KNOWN_FIELDS), ext_values, max_size=8))
    body = draw(st.one_of(st.none(), st.binary(max_size=200), json_values.map(
        lambda v: json.dumps(v).encode())))
    if code == 103 and draw(st.booleans()):
        body, compressed = draw(register_bodies())
        ext["compressed"] = "true" if compressed else "false"
        ext["bodyCrc32"] = str(frames.crc32(body)) if draw(st.booleans()) else draw(ext_values)
    header = {"code": code, "extFields": ext or draw(st.sampled_from((None, {}))),
              "flag": draw(st.sampled_from((0, 0, 0, 1, 2, 3))),
              "language": draw(st.sampled_from(("JAVA", "GO", "CPP", "X", 3))),
              "opaque": draw(st.integers(-2**31, 2**31 - 1)),
              "version": draw(st.sampled_from((0, 36, 37, 401, 409, 479, -1, 32767))),
              "remark": draw(st.one_of(st.none(), st.text(max_size=30)))}
    return Draft(header, body, serialize_type=draw(st.sampled_from((0, 1))), ascii_json=draw(st.booleans()))
