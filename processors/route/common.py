"""What the route processor's three parts share: the context, the tables, and how an answer says no.

The remarks explain themselves: Java's remark first (whatever matches it still does), then what was
wrong and what to do, on one line.
"""

from namesrv.protocol.codes import ResponseCode
from namesrv.protocol.command import HeaderFieldError

#: 5.x's FAQUrl.APPLY_TOPIC_URL (4.9.8: http://rocketmq.apache.org/docs/faq/).
FAQ_URL = "https://rocketmq.apache.org/docs/bestPractice/06FAQ"
LIST_DISABLED = "disable: topic lists are switched off on this name server (%s=false); set it to true to allow them"
TOO_LARGE = ("disable: this answer (%s) would take %s, more than the %d-byte frame (maxFrameLength, 16 MiB "
             "as every RocketMQ client's frameMaxLength) that a client accepts, so it is not sent; ask for a "
             "topic's route instead, or raise both limits")
#: bytes of a frame besides the body: the length fields (8) and room for the answer's header
FRAME_OVERHEAD = 8 + 1024


class RouteRequests:
    """One part of the route processor: its requests are read against ``context`` (a NamesrvContext), whose
    configuration is read on every request (UPDATE_NAMESRV_CONFIG takes effect at once)."""

    def __init__(self, context):
        self.context = context

    @property
    def routes(self):
        return self.context.routes

    @staticmethod
    def require_present(request, name):
        """A required String that may be empty (Java's @CFNotNull only refuses null)."""
        value = (request.ext or {}).get(name)
        if value is None:
            raise HeaderFieldError(name)
        return value

    @staticmethod
    def error(request, remark):
        return request.make_response(ResponseCode.SYSTEM_ERROR, remark)

    def body_limit(self):
        """The largest body an answer may carry so that its frame fits in ``maxFrameLength``."""
        return int(self.context.config.maxFrameLength) - FRAME_OVERHEAD

    def bounded(self, request, what, body):
        """SUCCESS with ``body``, or the TooLarge remark when its frame would pass ``maxFrameLength``."""
        if len(body) > self.body_limit():
            return self.error(request, TOO_LARGE % (what, "{:,} bytes".format(len(body)),
                                                    self.context.config.maxFrameLength))
        return request.make_response(ResponseCode.SUCCESS, body=body)
