"""RemotingCommand: one request or response, independent of its serialization."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Callable, Mapping, Optional, TypeVar, Union, overload

from namesrv.protocol.codes import (
    FLAG_ONEWAY,
    FLAG_RESPONSE,
    SERVER_VERSION,
    LanguageCode,
    SerializeType,
)

T = TypeVar("T")


class HeaderFieldError(ValueError):
    """A request header field is missing or malformed.

    The registry answers SYSTEM_ERROR with ``str(error)`` as the remark; the wording
    follows Java's ``the custom field <name> is null`` so operators recognise it.
    """

    def __init__(self, name: str, problem: str = "is null") -> None:
        ValueError.__init__(self, "the custom field <%s> %s" % (name, problem))
        self.field = name


@dataclass
class RemotingCommand:
    """A decoded frame.

    ``ext`` is ``None`` when the frame had no extFields at all and ``{}`` when it had an
    empty map; Java writes ``"extFields":{}`` for responses with a typed but empty
    header, and we keep that distinction so our answers match its bytes.
    """

    code: int
    language: int = LanguageCode.JAVA
    version: int = SERVER_VERSION
    opaque: int = 0
    flag: int = 0
    remark: Optional[str] = None
    ext: Optional[dict[str, str]] = None
    body: Optional[bytes] = None
    serialize_type: int = SerializeType.JSON
    #: set by a processor on an answer that depends only on the request's header and on state
    #: whose every change invalidates the AnswerCache (see namesrv/protocol/answercache.py)
    cacheable: bool = field(default=False, compare=False, repr=False)
    #: set by a processor on a cacheable answer to a request whose other values of one ext field
    #: get this same answer but for ``body_for(value)``: ``(field name, body_for)``. With a body,
    #: the header holds for every value with one; without (``body_for`` returns None), for every
    #: value without one, with that value where this one appears in the header after the opaque
    #: (see namesrv/protocol/answershapes.py)
    varies_by: Optional[tuple[str, Callable[[str], Optional[bytes]]]] = field(default=None, compare=False,
                                                                              repr=False)

    # -- flags -------------------------------------------------------------
    @property
    def is_response(self) -> bool:
        return bool(self.flag & FLAG_RESPONSE)

    @property
    def is_oneway(self) -> bool:
        return bool(self.flag & FLAG_ONEWAY)

    # -- header fields -----------------------------------------------------
    @overload
    def get(self, name: str) -> Optional[str]: ...

    @overload
    def get(self, name: str, default: T) -> Union[str, T]: ...

    def get(self, name: str, default: Any = None) -> Any:
        """An ext field as a string; an empty string counts as absent (as in ROCKETMQ headers)."""
        if not self.ext:
            return default
        value = self.ext.get(name)
        if value is None or value == "":
            return default
        return value

    def require(self, name: str) -> str:
        """A required (Java ``@CFNotNull``) string field."""
        value = self.get(name)
        if value is None:
            raise HeaderFieldError(name)
        return value

    @overload
    def get_int(self, name: str) -> Optional[int]: ...

    @overload
    def get_int(self, name: str, default: T) -> Union[int, T]: ...

    def get_int(self, name: str, default: Any = None) -> Any:
        """An integer field (Java Integer/Long); a non-numeric value is an error, not a default."""
        value = self.get(name)
        if value is None:
            return default
        try:
            return int(str(value).strip())
        except ValueError:
            raise HeaderFieldError(name, "is not a number: %r" % (value,))

    def require_int(self, name: str) -> int:
        value = self.get_int(name)
        if value is None:
            raise HeaderFieldError(name)
        return value

    @overload
    def get_bool(self, name: str) -> Optional[bool]: ...

    @overload
    def get_bool(self, name: str, default: T) -> Union[bool, T]: ...

    def get_bool(self, name: str, default: Any = None) -> Any:
        """A boolean field parsed the Java way: "true" in any case is true, anything else false."""
        value = self.get(name)
        if value is None:
            return default
        return str(value).strip().lower() == "true"

    # -- answers -----------------------------------------------------------
    def make_response(self, code: int = 0, remark: Optional[str] = None, ext: Optional[dict[str, str]] = None,
                      body: Optional[bytes] = None) -> RemotingCommand:
        """A response to this request: flag RESPONSE, same opaque, same serialize type."""
        return RemotingCommand(
            code=int(code),
            language=LanguageCode.JAVA,
            version=SERVER_VERSION,
            opaque=self.opaque,
            flag=FLAG_RESPONSE,
            remark=remark,
            ext=ext,
            body=body,
            serialize_type=self.serialize_type,
        )

    def with_changes(self, **changes: Any) -> RemotingCommand:
        return replace(self, **changes)


def make_request(code: int, ext: Optional[Mapping[str, object]] = None, body: Optional[bytes] = None, opaque: int = 0,
                 version: int = SERVER_VERSION, oneway: bool = False, serialize_type: int = SerializeType.JSON,
                 language: int = LanguageCode.JAVA) -> RemotingCommand:
    """A request command, for clients, tests and benchmarks."""
    fields = None
    if ext is not None:
        fields = {k: (v if isinstance(v, str) else _java_str(v)) for k, v in ext.items() if v is not None}
    return RemotingCommand(
        code=int(code), language=language, version=version, opaque=opaque,
        flag=FLAG_ONEWAY if oneway else 0, ext=fields, body=body, serialize_type=serialize_type,
    )


def _java_str(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
