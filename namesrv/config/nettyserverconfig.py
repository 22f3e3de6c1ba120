"""Java's ``NettyServerConfig`` (org.apache.rocketmq.remoting.netty): the listening side's properties.

Most tune Netty's threads and buffers, which a single reactor does not have: they are accepted and
marked ``informational`` (a value other than the default is warned about at start).
"""

from namesrv.config.table import Bool, Int, Port, Str

NETTY_SERVER_CONFIG = (
    Str("bindAddress", "127.0.0.1", "address to listen on (Java 5.x: 0.0.0.0; 4.9 always every interface)"),
    Port("listenPort", 9876, "TCP port (0: any free port)"),
    Int("serverWorkerThreads", 8, "Java worker threads (informational here)", informational=True),
    Int("serverCallbackExecutorThreads", 0, "Java callback threads (informational here)", informational=True),
    Int("serverSelectorThreads", 3, "Java selector threads (informational here)", informational=True),
    Int("serverOnewaySemaphoreValue", 256, "Java oneway semaphore (informational here)", informational=True),
    Int("serverAsyncSemaphoreValue", 64, "Java async semaphore (informational here)", informational=True),
    Int("serverChannelMaxIdleTimeSeconds", 120, "close connections idle this long; a change applies to new connections", runtime=True),
    Int("serverSocketSndBufSize", 0, "socket send buffer (0 = OS default)"),
    Int("serverSocketRcvBufSize", 0, "socket receive buffer (0 = OS default)"),
    Int("writeBufferHighWaterMark", 0, "Java write buffer high water mark (informational here)", informational=True),
    Int("writeBufferLowWaterMark", 0, "Java write buffer low water mark (informational here)", informational=True),
    Int("serverSocketBacklog", 1024, "listen backlog"),
    Bool("serverNettyWorkerGroupEnable", True, "Java 5.x separate Netty worker group (informational here)", informational=True),
    Bool("serverPooledByteBufAllocatorEnable", True, "Java buffer pooling (informational here)", informational=True),
    Bool("enableShutdownGracefully", False, "Java 5.x graceful Netty shutdown (informational here)", informational=True),
    Int("shutdownWaitTimeSeconds", 30, "Java 5.x graceful shutdown wait (informational here)", informational=True),
    Bool("useEpollNativeSelector", False, "Java epoll selector (informational here)", informational=True),
)
