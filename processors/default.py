"""The default processor: GET_NAMESRV_CONFIG and UPDATE_NAMESRV_CONFIG, the configuration part of Java's
DefaultRequestProcessor (``getConfig``, ``updateConfig``; its brokers' and tools' parts are the route
processor's, processors/route/, its KV part the kvconfig processor's).

UPDATE_NAMESRV_CONFIG follows Java's order (parse the properties body, refuse the whole update for a
refused key with NO_PERMISSION, apply) with an allow-list instead of Java's "anything but the black list"
(namesrv/config/runtime.py): only the name server's properties marked runtime change, each applies live
(processors and timers read the config on every use, listeners react to the rest), and the change is kept in
the instance's runtime overlay, never in the ``-c`` file (namesrv/config/overlay.py). Where we differ from
Java:
- a key that is not runtime (a path, a port, an address, a security switch, the controller's membership) is
  refused like a black-listed one, and the remark names every refused key; a key that is not a property is
  refused too (Java ignores it);
- a value that does not parse is refused (SYSTEM_ERROR naming the key) and nothing changes; Java silently
  skips it;
- the body is read as UTF-8 (Java's ``Properties.load(InputStream)`` reads ISO-8859-1, so it garbles
  non-ASCII values);
- the answer waits for the overlay's write, done atomically in a thread; if it fails the change stays
  applied and the answer is SYSTEM_ERROR saying so (Java logs and answers SUCCESS).
"""

from zope.interface import implementer

from namesrv.config.remote import answer_config_update
from namesrv.config.runtime import NAMESRV
from namesrv.interfaces import IStoppableProcessor
from namesrv.protocol.codes import RequestCode, ResponseCode


@implementer(IStoppableProcessor)
class DefaultProcessor:
    name = "default"
    codes = frozenset([RequestCode.UPDATE_NAMESRV_CONFIG, RequestCode.GET_NAMESRV_CONFIG])

    def __init__(self, context):
        self.context = context

    @property
    def config(self):
        return self.context.config

    def reject_request(self, request):
        return None

    def stop(self):
        """At shutdown: an overlay write still queued is written now, on this thread."""
        self.config.overlay.flush_sync()

    def process_request(self, request, connection):
        if request.code == RequestCode.GET_NAMESRV_CONFIG:
            return self.get_config(request)
        return self.update_config(request, connection)

    def get_config(self, request):
        text = self.config.to_properties_text()
        return request.make_response(ResponseCode.SUCCESS, body=text.encode("utf-8") if text else None)

    def update_config(self, request, connection):
        return answer_config_update(request, connection, self.config, NAMESRV, self.config.black_list(),
                                    self.context.events, self.context.reactor)
