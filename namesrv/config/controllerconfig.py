"""Java's ``ControllerConfig`` (org.apache.rocketmq.common.ControllerConfig, 5.x): the controller's properties,
for the embedded controller (``enableControllerInNamesrv``) and ``twistd controller`` alike.

``CONTROLLER_CONFIG_KEYS`` is what GET_CONTROLLER_CONFIG answers: Java's ControllerConfig and
NettyServerConfig keys we have.
"""

from namesrv.config.table import Bool, Int, Long, Str

CONTROLLER_CONFIG = (
    Str("controllerType", "DLedger", "DLedger: controllers listed in controllerDLegerPeers, replicated by Raft (pysyncobj, on the controller port); jRaft is refused"),
    Str("controllerDLegerGroup", "", "name of the controllers' group, as 1005 answers it"),
    Str("controllerDLegerPeers", "", "every controller as id-host:port;... (brokers' controllerAddr lists the same addresses)"),
    Str("controllerDLegerSelfId", "", "this controller's id in controllerDLegerPeers"),
    Str("controllerStorePath", "", "directory of the controller's state (empty: ~/DLedgerController, ~/DLedgerController-<port> on a port other than 9876); one controller keeps a JSON file, several a Raft journal", path=True),
    Long("scanInactiveMasterInterval", 5000, "ms between the leader's scans for groups whose master is gone", runtime=True, minimum=1),
    Bool("enableElectUncleanMaster", False, "elect from every replica when no in-sync one is alive (may lose messages)", runtime=True),
    Bool("notifyBrokerRoleChanged", True, "send NOTIFY_BROKER_ROLE_CHANGED to the group's live members after an election", runtime=True),
    Int("electMasterMaxRetryCount", 3, "Java's retries of a controller-made election (informational here: an election commits or is refused)", informational=True),
    Bool("isProcessReadEvent", False, "reads (1004, 1006) commit an empty entry first, as Java's; off, the leader answers them under its lease, never from a state a newer leader may have changed", runtime=True),
    Int("controllerThreadPoolNums", 16, "Java controller request pool size (informational here)", informational=True),
    Int("controllerRequestThreadPoolQueueCapacity", 50000, "Java controller request queue capacity (informational here)", informational=True),
    Int("mappedFileSize", 1073741824, "Java DLedger file size (informational here)", informational=True),
    Str("controllerPeerSecretFile", "", "file holding the controllers' shared secret (at least 16 bytes, the same on every member): members prove it to each other before any Raft message is read; required with several controllers", path=True),
    Bool("controllerPeerAuthDisabled", False, "let controllers join without the shared secret and member keys (a closed network only: anyone reaching a controller port could join as anyone); warned at every start"),
    Str("controllerMembersFile", "", "every member's Ed25519 public key, 'id key' per line, the same file on every member (two lines for one id while its key rotates); a member proves its id with its key; required with several controllers; reread when it changes", path=True),
    Str("controllerMemberKeyFile", "", "this member's Ed25519 private key (namesrv-admin createControllerKey); empty: <controllerDLegerSelfId>.key beside controllerMembersFile; reread when it changes", path=True),
    Int("controllerMemberMaxPendingHandshakes", 16, "member-link connections in their handshake at once; more are closed at once (a configured member's host takes the oldest stranger's place); every member connection also counts towards serverMaxConnections"),
    Bool("controllerJoin", False, "this member joins a group that already runs: it has no vote until the group's configuration says so (namesrv-admin addController, then promoteController); once it has the group's log, the log's configuration is used"),
    Int("controllerSnapshotEntries", 20000, "a snapshot replaces the Raft log once it holds this many entries"),
    Long("controllerSnapshotBytes", 16777216, "a snapshot replaces the Raft log once the journal reaches this many bytes (at most a quarter of controllerStoreMaxBytes)"),
    Int("controllerSnapshotIntervalSeconds", 3600, "a snapshot replaces the Raft log at least this often while entries come in"),
    Long("controllerStoreMaxBytes", 67108864, "the bound on a member's Raft store (journal, snapshot and their temporary copies); a snapshot larger than a quarter of it is warned about, one from the leader larger than it refused"),
    Int("controllerLeaderTransferTimeoutMillis", 2000, "a leadership transfer (namesrv-admin transferControllerLeader) not done by then is abandoned and the leader serves again"),
    Int("controllerRaftPortOffset", 1, "no longer used: controllers talk Raft on the controller port itself (kept so that older files load)", informational=True),
    # what a client may make the controller keep (namesrv/controller/limits.py); refusals are counted in the metrics
    Long("controllerHeartbeatTimeoutMinMillis", 1000, "shortest heartbeat timeout a broker may ask for (heartbeatTimeoutMills of BROKER_HEARTBEAT); shorter is raised to it"),
    Long("controllerHeartbeatTimeoutMaxMillis", 120000, "longest heartbeat timeout a broker may ask for; longer is lowered to it, and a beat without one gets it (Java's 120 s)"),
    Int("controllerHeartbeatMaxBrokers", 10000, "most brokers one controller's heartbeat table holds; a beat for one more is refused"),
    Int("controllerHeartbeatMaxBrokersPerConnection", 64, "most brokers one connection may beat for (a broker container beats for each of its brokers)"),
    Int("controllerMaxFieldLength", 256, "longest broker address or register check code accepted (names follow Java's topic rule: [%|a-zA-Z0-9_-], a broker name at most 100 characters, a cluster name 127)"),
    Int("controllerMaxBrokerGroups", 10000, "most broker groups (broker names) the controllers keep; an apply-broker-id for one more is refused"),
    Int("controllerMaxBrokersPerGroup", 64, "most broker ids one group keeps; forget gone ones with cleanBrokerMetadata"),
    Long("controllerUnaliveGroupExpireMillis", 600000, "a group no master was ever elected in, none of whose brokers beats, is forgotten by every controller after this long (0 = never)"),
)

CONTROLLER_CONFIG_KEYS = (
    "rocketmqHome", "configStorePath", "controllerType", "scanNotActiveBrokerInterval", "controllerThreadPoolNums",
    "controllerRequestThreadPoolQueueCapacity", "controllerDLegerGroup", "controllerDLegerPeers",
    "controllerDLegerSelfId", "mappedFileSize", "controllerStorePath", "electMasterMaxRetryCount",
    "enableElectUncleanMaster", "isProcessReadEvent", "notifyBrokerRoleChanged", "scanInactiveMasterInterval",
    "configBlackList", "controllerPeerAuthDisabled", "controllerHeartbeatTimeoutMinMillis",
    "controllerHeartbeatTimeoutMaxMillis", "controllerHeartbeatMaxBrokers", "controllerHeartbeatMaxBrokersPerConnection",
    "controllerMaxFieldLength", "controllerMaxBrokerGroups", "controllerMaxBrokersPerGroup",
    "controllerUnaliveGroupExpireMillis",
    "bindAddress", "listenPort", "serverWorkerThreads", "serverCallbackExecutorThreads", "serverSelectorThreads",
    "serverOnewaySemaphoreValue", "serverAsyncSemaphoreValue", "serverChannelMaxIdleTimeSeconds",
    "serverSocketSndBufSize", "serverSocketRcvBufSize", "serverSocketBacklog", "serverPooledByteBufAllocatorEnable",
    "useEpollNativeSelector")
