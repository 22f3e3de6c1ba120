"""What a key of a ``-c`` file that is not one of our properties most likely is.

Java's NamesrvStartup copies a file's keys into NamesrvConfig, NettyServerConfig and
NettyClientConfig (the controller's into ControllerConfig) and silently keeps the rest, so a
misspelt ``listenport=9877`` starts a server on 9876 that nobody asked for. Here a key is one of:

- a property (namesrv/config/__init__.py);
- a key Java reads that means nothing here (NettyClientConfig's, the controller's metrics
  exporter...): kept, as Java keeps it, so an operator's Java file works unchanged;
- a misspelling of one of those (same letters in another case, or a close spelling): the start
  is refused with "did you mean ...", since the operator meant to change something;
- anything else: kept and reported by GET_NAMESRV_CONFIG, as Java does, with a warning.
"""

import difflib
import re

#: Fields of Java's NettyClientConfig (4.9.8, 5.3.3) and ControllerConfig (5.3.3) that we have no
#: property for; Java reads them from the same file.
JAVA_ONLY_KEYS = frozenset("""
    channelNotActiveInterval clientAsyncSemaphoreValue clientCallbackExecutorThreads
    clientChannelMaxIdleTimeSeconds clientCloseSocketIfTimeout clientOnewaySemaphoreValue
    clientPooledByteBufAllocatorEnable clientSocketRcvBufSize clientSocketSndBufSize clientWorkerThreads
    connectTimeoutMillis disableCallbackExecutor disableNettyWorkerGroup enableReconnectForGoAway
    isScanAvailableNameSrv maxReconnectIntervalTimeSeconds socksProxyConfig useTLS
    enableTransparentRetry
    jraftConfig metricGrpcExporterIntervalInMills metricGrpcExporterTimeOutInMills
    metricLoggingExporterIntervalInMills metricsExporterType metricsGrpcExporterHeader
    metricsGrpcExporterTarget metricsInDelta metricsLabel metricsPromExporterHost metricsPromExporterPort
""".split())

#: how alike (difflib's ratio) a key must be to a known one to count as its misspelling
CLOSE_ENOUGH = 0.85

_INLINE_COMMENT = re.compile(r"\s[#!]")


def suggestion(key, known):
    """The known key ``key`` most likely misspells, or None."""
    candidates = set(known) | JAVA_ONLY_KEYS
    for name in candidates:
        if name.lower() == key.lower():
            return name
    close = difflib.get_close_matches(key, sorted(candidates), n=1, cutoff=CLOSE_ENOUGH)
    return close[0] if close else None


def inline_comment(text):
    """True when ``text`` ends in what a reader would take for a comment (``value   # why``).

    A properties file has comment lines only: Java's ``Properties.load`` keeps ``# why`` as part
    of the value, and so do we, so such a value is refused rather than used with its comment."""
    return bool(_INLINE_COMMENT.search(text or ""))
