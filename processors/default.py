"""The default processor: GET_NAMESRV_CONFIG and UPDATE_NAMESRV_CONFIG.

Unlike Java, a value that does not parse is refused (SYSTEM_ERROR naming the key) and
nothing changes; Java silently ignores it. Changes apply live (the processors and
timers read the config on every use) and are persisted to ``configStorePath``
atomically, in a thread.
"""

from twisted.internet import threads
from twisted.logger import Logger
from zope.interface import implementer

from namesrv.atomicfile import write_atomic
from namesrv.config import ConfigError
from namesrv.interfaces import IRequestProcessor
from namesrv.properties import PropertiesError, parse_properties
from namesrv.protocol.codes import RequestCode, ResponseCode

BLACK_LIST_REMARK = "Can not update config in black list."


@implementer(IRequestProcessor)
class DefaultProcessor:
    name = "default"
    codes = frozenset([RequestCode.UPDATE_NAMESRV_CONFIG, RequestCode.GET_NAMESRV_CONFIG])
    log = Logger()

    def __init__(self, context):
        self.context = context
        self.config = context.config

    def reject_request(self, request):
        return None

    def process_request(self, request, connection):
        if request.code == RequestCode.GET_NAMESRV_CONFIG:
            return self.get_config(request)
        return self.update_config(request, connection)

    def get_config(self, request):
        text = self.config.to_properties_text()
        return request.make_response(ResponseCode.SUCCESS, body=text.encode("utf-8") if text else None)

    def update_config(self, request, connection):
        if not request.body:
            return request.make_response(ResponseCode.SUCCESS)
        try:
            updates = parse_properties(request.body.decode("utf-8"))
        except (UnicodeDecodeError, PropertiesError):
            return request.make_response(ResponseCode.SYSTEM_ERROR, "string2Properties error")
        forbidden = sorted(set(updates) & self.config.black_list())
        if forbidden:
            self.log.warn("UPDATE_NAMESRV_CONFIG from {peer} refused for black-listed {keys}",
                          peer=connection.peer, keys=forbidden)
            return request.make_response(ResponseCode.NO_PERMISSION, BLACK_LIST_REMARK)
        try:
            changes = self.config.update(updates, source="UPDATE_NAMESRV_CONFIG")
        except ConfigError as e:
            return request.make_response(ResponseCode.SYSTEM_ERROR, str(e))
        for key, (old, new) in changes.items():
            self.log.info("config {key} changed from {old} to {new} by {peer}", key=key, old=old, new=new,
                          peer=connection.peer)
            self.context.events.emit("config_changed", key=key, old=_text(old), new=_text(new))
        return self._persist(request)

    def _persist(self, request):
        path = self.config.configStorePath
        data = self.config.to_properties_text().encode("utf-8")
        reactor = self.context.reactor
        d = threads.deferToThreadPool(reactor, reactor.getThreadPool(), write_atomic, path, data)
        d.addCallbacks(lambda _: request.make_response(ResponseCode.SUCCESS),
                       lambda failure: request.make_response(
                           ResponseCode.SYSTEM_ERROR, "config applied but not persisted to %s: %s"
                           % (path, failure.value)))
        return d


def _text(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    return None if value is None else str(value)
