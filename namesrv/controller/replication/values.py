"""msgpack to plain data and back, bounded: the only decoding anything a member sent goes through.

No object types (extension types are refused), string map keys only, and every length bounded.
"""

from typing import Any, NoReturn

import msgpack

#: bounds on what one decoded value may hold (a frame is already bounded by members.MAX_FRAME;
#: a snapshot by controllerStoreMaxBytes)
MAX_ITEMS = 1 << 20
MAX_BYTES = 64 << 20


class CodecError(ValueError):
    """Bytes that are not a message, command or snapshot we know."""


def _no_ext(code: int, data: bytes) -> NoReturn:
    raise CodecError("msgpack extension type %d refused" % code)


def pack(value: Any) -> bytes:
    return msgpack.packb(value, use_bin_type=True)


def unpack(data: bytes | bytearray | memoryview) -> Any:
    """msgpack to plain Python data: dict, list, str, bytes, int, float, bool, None. Nothing else (Any: what the
    caller checks)."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise CodecError("expected bytes, got %s" % type(data).__name__)
    try:
        return msgpack.unpackb(bytes(data), raw=False, use_list=True, strict_map_key=True, ext_hook=_no_ext,
                               max_bin_len=MAX_BYTES, max_str_len=MAX_BYTES, max_array_len=MAX_ITEMS,
                               max_map_len=MAX_ITEMS)
    except CodecError:
        raise
    except Exception as e:      # msgpack raises several types (ExtraData, FormatError, ValueError, ...)
        raise CodecError("not msgpack: %s" % e)
