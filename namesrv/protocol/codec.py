"""Encode and decode remoting headers (JSON and ROCKETMQ binary) and whole frames.

A frame is ``int32 length`` (bytes after itself) · ``int32 serializeType<<24 | headerLength``
· header · body. The framing layer strips the first int32; ``decode_frame`` takes the rest.
"""

import json
import struct
from typing import Any, Optional, overload

from namesrv.codec.fastjson import clean_surrogates
from namesrv.protocol.codes import LanguageCode, SerializeType
from namesrv.protocol.command import RemotingCommand

_INT = struct.Struct(">i")
_ROCKETMQ_FIXED = struct.Struct(">hbhii")  # code, language, version, opaque, flag
_LANGUAGE_BY_NAME = {lang.name: int(lang) for lang in LanguageCode}
_LANGUAGE_NAMES = {int(lang): lang.name for lang in LanguageCode}


class FrameDecodeError(ValueError):
    """The frame cannot be decoded; Java closes the connection without an answer."""


# -- decoding ---------------------------------------------------------------

def decode_frame(frame: bytes) -> RemotingCommand:
    """Decode one frame without its leading length field."""
    if len(frame) < 4:
        raise FrameDecodeError("frame shorter than its header length field")
    (word,) = _INT.unpack_from(frame, 0)
    serialize_type = (word >> 24) & 0xFF
    header_length = word & 0xFFFFFF
    if header_length > len(frame) - 4:
        raise FrameDecodeError("bad header length %d for a frame of %d bytes" % (header_length, len(frame) + 4))
    body = frame[4 + header_length:] or None
    command = decode_header(serialize_type, frame[4:4 + header_length])
    command.body = bytes(body) if body is not None else None
    return command


def decode_header(serialize_type: int, header: bytes) -> RemotingCommand:
    """The command a JSON or ROCKETMQ header describes (no body)."""
    if serialize_type == SerializeType.JSON:
        command = decode_json_header(header)
    elif serialize_type == SerializeType.ROCKETMQ:
        command = decode_rocketmq_header(header)
    else:
        raise FrameDecodeError("unknown serialize type %d" % serialize_type)
    command.serialize_type = serialize_type
    return command


def decode_json_header(header: bytes) -> RemotingCommand:
    try:
        data = json.loads(bytes(header).decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise FrameDecodeError("undecodable JSON header: %s" % e)
    if not isinstance(data, dict):
        raise FrameDecodeError("JSON header is not an object")
    try:
        code = _json_int(data, "code", None)
        if code is None:
            raise FrameDecodeError("JSON header has no code")
        ext = data.get("extFields")
        if ext is not None:
            if not isinstance(ext, dict):
                raise FrameDecodeError("extFields is not an object")
            ext = {str(k): _ext_value(v) for k, v in ext.items() if v is not None}
        remark = data.get("remark")
        if remark is not None and not isinstance(remark, str):
            remark = str(remark)
        if b"\\u" in header:  # only escapes make lone surrogates; Java writes them as '?'
            remark = clean_surrogates(remark)
            if ext:
                ext = {clean_surrogates(k): clean_surrogates(v) for k, v in ext.items()}
        return RemotingCommand(
            code=code,
            language=_json_language(data.get("language")),
            version=_json_int(data, "version", 0),
            opaque=_json_int(data, "opaque", 0),
            flag=_json_int(data, "flag", 0),
            remark=remark,
            ext=ext,
        )
    except (TypeError, ValueError, OverflowError, RecursionError) as e:
        if isinstance(e, FrameDecodeError):
            raise
        raise FrameDecodeError("bad JSON header field: %s" % e)


@overload
def _json_int(data: dict[str, Any], key: str, default: int) -> int: ...


@overload
def _json_int(data: dict[str, Any], key: str, default: None) -> Optional[int]: ...


def _json_int(data: dict[str, Any], key: str, default: Optional[int]) -> Optional[int]:
    value = data.get(key)
    if value is None:
        return default
    if isinstance(value, bool):
        raise FrameDecodeError("header field %s is not an integer" % key)
    if isinstance(value, float) and not value.is_integer():
        raise FrameDecodeError("header field %s is not an integer" % key)
    number = int(value)
    if not -2**31 <= number < 2**31:
        raise FrameDecodeError("header field %s out of int32 range" % key)
    return number


def _json_language(value: object) -> int:
    if isinstance(value, str):
        return _LANGUAGE_BY_NAME.get(value, LanguageCode.OTHER)
    if isinstance(value, int) and not isinstance(value, bool):
        return value if value in _LANGUAGE_NAMES else LanguageCode.OTHER
    return LanguageCode.JAVA


def _ext_value(value: object) -> str:
    """Java peers always send strings; other clients may send numbers or booleans."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    return json.dumps(value, separators=(",", ":"))


def decode_rocketmq_header(header: bytes) -> RemotingCommand:
    header = bytes(header)
    size = len(header)
    if size < _ROCKETMQ_FIXED.size + 8:
        raise FrameDecodeError("ROCKETMQ header too short (%d bytes)" % size)
    code, language, version, opaque, flag = _ROCKETMQ_FIXED.unpack_from(header, 0)
    pos = _ROCKETMQ_FIXED.size
    remark, pos = _read_string(header, pos, 4)
    if pos + 4 > size:
        raise FrameDecodeError("truncated ROCKETMQ header")
    (ext_length,) = _INT.unpack_from(header, pos)
    pos += 4
    if ext_length < 0 or ext_length > size - pos:
        raise FrameDecodeError("bad ext length %d" % ext_length)
    ext = None
    if ext_length > 0:
        fields: dict[str, Optional[str]] = {}
        end = pos + ext_length
        while pos < end:
            key, pos = _read_string(header, pos, 2, end)
            value, pos = _read_string(header, pos, 4, end)
            if key is not None:
                fields[key] = value
        ext = {k: v for k, v in fields.items() if v is not None}
    if language not in _LANGUAGE_NAMES:
        language = LanguageCode.OTHER
    return RemotingCommand(code=code, language=language, version=version, opaque=opaque,
                           flag=flag, remark=remark, ext=ext)


def _read_string(buf: bytes, pos: int, width: int, end: Optional[int] = None) -> tuple[Optional[str], int]:
    end = len(buf) if end is None else end
    if pos + width > end:
        raise FrameDecodeError("truncated ROCKETMQ header")
    if width == 2:
        (length,) = struct.unpack_from(">h", buf, pos)
    else:
        (length,) = _INT.unpack_from(buf, pos)
    pos += width
    if length < 0 or pos + length > end:
        raise FrameDecodeError("bad string length %d in ROCKETMQ header" % length)
    if length == 0:
        return None, pos
    try:
        return buf[pos:pos + length].decode("utf-8"), pos + length
    except UnicodeDecodeError:
        raise FrameDecodeError("string in ROCKETMQ header is not UTF-8")


# -- encoding ---------------------------------------------------------------

def encode_json_header(command: RemotingCommand) -> bytes:
    """The header as fastjson writes it: alphabetical keys, nulls omitted, compact, raw UTF-8."""
    parts = ['{"code":%d' % command.code]
    if command.ext is not None:
        parts.append(',"extFields":' + json.dumps(command.ext, ensure_ascii=False, separators=(",", ":")))
    parts.append(',"flag":%d' % command.flag)
    parts.append(',"language":"%s"' % _LANGUAGE_NAMES.get(command.language, "OTHER"))
    parts.append(',"opaque":%d' % command.opaque)
    if command.remark is not None:
        parts.append(',"remark":' + json.dumps(command.remark, ensure_ascii=False))
    parts.append(',"serializeTypeCurrentRPC":"JSON","version":%d}' % command.version)
    return "".join(parts).encode("utf-8", "replace")  # lone surrogates → '?', as Java's encoder


def encode_rocketmq_header(command: RemotingCommand) -> bytes:
    out = [_ROCKETMQ_FIXED.pack(_short(command.code), command.language, _short(command.version),
                                command.opaque, command.flag)]
    remark = command.remark.encode("utf-8", "replace") if command.remark else b""
    out.append(_INT.pack(len(remark)))
    out.append(remark)
    entries = []
    for key, value in (command.ext or {}).items():
        if key is None or value is None:
            continue
        k = key.encode("utf-8", "replace")
        v = str(value).encode("utf-8", "replace")
        entries.append(struct.pack(">h", len(k)) + k + _INT.pack(len(v)) + v)
    ext = b"".join(entries)
    out.append(_INT.pack(len(ext)))
    out.append(ext)
    return b"".join(out)


def _short(value: int) -> int:
    """Java casts to short: wrap into the int16 range."""
    return ((value + 0x8000) & 0xFFFF) - 0x8000


def encode_frame(command: RemotingCommand) -> bytes:
    """A whole frame, leading length included, in the command's serialize type."""
    if command.serialize_type == SerializeType.ROCKETMQ:
        header = encode_rocketmq_header(command)
    else:
        header = encode_json_header(command)
    body = command.body or b""
    return b"".join((
        _INT.pack(4 + len(header) + len(body)),
        _INT.pack((int(command.serialize_type) << 24) | len(header)),
        header,
        body,
    ))
