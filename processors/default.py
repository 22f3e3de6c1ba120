"""The default processor: GET_NAMESRV_CONFIG and UPDATE_NAMESRV_CONFIG, the configuration part of Java's
DefaultRequestProcessor (``getConfig``, ``updateConfig``; its brokers' and tools' parts are the route
processor's, processors/route/, its KV part the kvconfig processor's).

UPDATE_NAMESRV_CONFIG follows Java's order: parse the properties body, refuse the whole
update if any key is black-listed (NO_PERMISSION), apply, persist every property to
``configStorePath``. Where we differ from Java:
- a value that does not parse is refused (SYSTEM_ERROR naming the key) and nothing
  changes; Java silently skips it;
- the body is read as UTF-8 (Java's ``Properties.load(InputStream)`` reads ISO-8859-1,
  so it garbles non-ASCII values);
- the answer waits for the file write, done atomically in a thread; if it fails the
  change stays applied and the answer is SYSTEM_ERROR saying so (Java logs and answers
  SUCCESS).
As in Java, a key that is neither a property nor already present (from the ``-c`` file)
is ignored (Configuration.mergeIfExist); we name the ignored keys in the SUCCESS remark.
Changes apply live: processors and timers read the config on every use, and listeners
(the service) react to the few that need it; ``listenPort`` does not rebind.
"""

from twisted.logger import Logger
from zope.interface import implementer

from namesrv.config import ConfigError, java_text
from namesrv.interfaces import IStoppableProcessor
from namesrv.kvconfig.filewriter import SerialFileWriter
from namesrv.config.properties import PropertiesError, parse_properties
from namesrv.protocol.codes import RequestCode, ResponseCode

BLACK_LIST_REMARK = "Can not update config in black list."
#: after Java's remark: which keys, and where they can be changed instead
BLACK_LIST_HINT = " Refused keys: %s (configBlackList); set them in the -c properties file and restart."


@implementer(IStoppableProcessor)
class DefaultProcessor:
    name = "default"
    codes = frozenset([RequestCode.UPDATE_NAMESRV_CONFIG, RequestCode.GET_NAMESRV_CONFIG])
    log = Logger()

    def __init__(self, context):
        self.context = context
        self._writers = {}

    @property
    def config(self):
        return self.context.config

    def reject_request(self, request):
        return None

    def stop(self):
        """At shutdown: config writes still queued are written now, on this thread."""
        for writer in self._writers.values():
            writer.flush_sync()

    def process_request(self, request, connection):
        if request.code == RequestCode.GET_NAMESRV_CONFIG:
            return self.get_config(request)
        return self.update_config(request, connection)

    def get_config(self, request):
        text = self.config.to_properties_text()
        return request.make_response(ResponseCode.SUCCESS, body=text.encode("utf-8") if text else None)

    def update_config(self, request, connection):
        peer = getattr(connection, "peer", None)
        self.log.info("updateConfig called by {peer}", peer=peer)
        if not request.body:
            return request.make_response(ResponseCode.SUCCESS)
        try:
            updates = parse_properties(request.body.decode("utf-8"))
        except UnicodeDecodeError:
            return request.make_response(ResponseCode.SYSTEM_ERROR, "string2Properties error: body is not UTF-8; "
                                         "send the properties as UTF-8 key=value lines")
        except PropertiesError as e:
            return request.make_response(ResponseCode.SYSTEM_ERROR, "string2Properties error: %s; send the properties as "
                                         "key=value lines" % e)
        forbidden = sorted(set(updates) & self.config.black_list())
        if forbidden:
            self.log.warn("UPDATE_NAMESRV_CONFIG from {peer} refused for black-listed {keys}",
                          peer=peer, keys=forbidden)
            return request.make_response(
                ResponseCode.NO_PERMISSION, BLACK_LIST_REMARK + BLACK_LIST_HINT % ", ".join(forbidden))
        ignored = sorted(key for key in updates if key not in self.config)
        applicable = {key: value for key, value in updates.items() if key in self.config}
        if ignored:
            self.log.warn("UPDATE_NAMESRV_CONFIG from {peer}: unknown keys {keys} ignored", peer=peer, keys=ignored)
        if not applicable:
            return request.make_response(ResponseCode.SUCCESS, _ignored_remark(ignored))
        try:
            changes = self.config.update(applicable, source="UPDATE_NAMESRV_CONFIG from %s" % peer)
        except ConfigError as e:
            return request.make_response(ResponseCode.SYSTEM_ERROR, str(e))
        for key, (old, new) in changes.items():
            self.context.events.emit("config_changed", key=key, old=_text(old), new=_text(new))
        return self._persist(request, _ignored_remark(ignored))

    def _persist(self, request, remark):
        """Write every property to configStorePath (as Java's Configuration.persist), then answer."""
        path = self.config.configStorePath
        writer = self._writers.get(path)
        if writer is None:
            writer = self._writers[path] = SerialFileWriter(
                path, lambda: self.config.to_properties_text().encode("utf-8"),
                reactor=self.context.reactor, keep_backup=True, what="config file")
        return writer.changed().addCallbacks(
            lambda _: request.make_response(ResponseCode.SUCCESS, remark),
            lambda failure: request.make_response(
                ResponseCode.SYSTEM_ERROR, "config applied but not persisted to %s: %s" % (path, failure.value)))


def _ignored_remark(ignored):
    return "unknown keys ignored: %s" % ", ".join(ignored) if ignored else None


def _text(value):
    return None if value is None else java_text(value)
