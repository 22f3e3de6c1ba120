"""The answer to a configuration change sent over the network, the same on both ports.

UPDATE_NAMESRV_CONFIG (318, the name server's port) and UPDATE_CONTROLLER_CONFIG (1009, the controller's)
differ only in which properties they may change and which black list holds (runtime.py); how a change is
answered is Java's for both: SUCCESS once it is kept, NO_PERMISSION naming every refused key, SYSTEM_ERROR for
a body that is not properties text or a change applied but not kept.
"""

from namesrv.config.runtime import UpdateRefused, update_from_network
from namesrv.config.table import ConfigError
from namesrv.protocol.codes import ResponseCode
from namesrv.security.signature import ACCESS_KEY


def answer_config_update(request, connection, config, request_kind, black_list, events, reactor):
    """``request``'s answer: a response, or a Deferred of one firing once the runtime overlay holds the change.
    ``request_kind`` is runtime.NAMESRV or runtime.CONTROLLER; the account named in the change's event is the
    request's AccessKey."""
    try:
        kept = update_from_network(config, request.body, request_kind, black_list, getattr(connection, "peer", None),
                                   request.get(ACCESS_KEY), events, reactor)
    except UpdateRefused as e:
        return request.make_response(ResponseCode.NO_PERMISSION, str(e))
    except ConfigError as e:
        return request.make_response(ResponseCode.SYSTEM_ERROR, str(e))
    if kept is None:
        return request.make_response(ResponseCode.SUCCESS)
    return kept.addCallbacks(lambda _: request.make_response(ResponseCode.SUCCESS),
                             lambda failure: request.make_response(ResponseCode.SYSTEM_ERROR, str(failure.value)))
