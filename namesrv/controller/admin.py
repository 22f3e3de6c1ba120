"""mqadmin 5.3.3's controller sub-commands (RIP-44): metadata, in-sync sets, elections, clean-up,
the controllers' configuration, and the brokers' epochs.

Same names, options and printed lines as mqadmin (``GetControllerMetaDataSubCommand``,
``GetSyncStateSetSubCommand``, ``ReElectMasterSubCommand``, ``CleanControllerBrokerMetaSubCommand``,
``Get/UpdateControllerConfigSubCommand``, ``GetBrokerEpochSubCommand``), and the same requests
as ``MQClientAPIImpl``: what only the leader answers (1006, 1002, 1011) goes to the leader that
CONTROLLER_GET_METADATA_INFO (1005) of ``-a`` names; the configuration goes to every address of
``-a``; the epochs are asked of the brokers themselves (GET_BROKER_EPOCH_CACHE, 1007), found in
the name servers' cluster info, as mqadmin does.

Differences: ``-i`` (print again every N seconds, forever) is not offered; a refusal is one line
on stderr instead of a stack trace; ``electMaster`` also prints the member group our controller
(and Java's ``ElectMasterResponseBody``) sends under ``brokerMemberGroup``, which mqadmin 5.3.3
decodes at the wrong level and so never prints; ``-a`` may list several controllers where
mqadmin takes one: the first whose 1005 answer names a leader is used, else the first that answers.
"""

import time
from argparse import Namespace
from collections.abc import Iterable
from typing import Any, Optional

from namesrv.admin.commands import command, config_lines, json_body
from namesrv.admin.connection import AdminClient, AdminError, split_addresses
from namesrv.admin.output import Output
from namesrv.codec import fastjson
from namesrv.config.properties import decode_properties_bytes, format_properties, parse_properties
from namesrv.protocol.codes import RequestCode

CONTROLLER = "controller"
#: CommandUtil.ERROR_MESSAGE
NO_SUCH_CLUSTER = "Make sure the specified clusterName exists or the name server connected to is correct."

_ADDRESS = (("-a", "--controllerAddress"), dict(required=True, help="the address of controller"))
ADDRESSES = (("-a", "--controllerAddress"), dict(
    required=True, help="Controller address list, eg: 192.168.0.1:9878;192.168.0.2:9878"))


def java(value: object) -> str:
    """A value as Java's ``%s`` prints it: ``null`` for none, ``true``/``false``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def controllers(args: Namespace) -> list[str]:
    addresses = split_addresses(args.controllerAddress)
    if not addresses:
        raise AdminError("no controller address: give -a host:port")
    return addresses


def metadata(client: AdminClient, addresses: Iterable[str]) -> tuple[str, dict[str, str]]:
    """(address asked, its 1005 answer's header): the first controller of ``addresses`` that names a leader,
    else the first that answers. A member that has just started to join, or is cut off from the leader,
    answers without knowing one; the next address may be the leader itself (a fault-lab run whose ``-a``
    began with a joining member never found the forced survivor that led)."""
    failure: Optional[AdminError] = None
    first: Optional[tuple[str, dict[str, str]]] = None
    for address in addresses:
        try:
            answer = client.call_ok(address, RequestCode.CONTROLLER_GET_METADATA_INFO, kind=CONTROLLER)
        except AdminError as e:
            failure = e
            continue
        header = dict(answer.ext or {})
        if header.get("controllerLeaderAddress"):
            return address, header
        if first is None:
            first = address, header
    if first is not None:
        return first
    assert failure is not None          # ``addresses`` is never empty (controllers() refuses that)
    raise failure


class NoLeaderKnown(AdminError):
    """No controller of ``-a`` names a leader: none is elected, or the one just handed over is not known yet."""


def leader_address(client: AdminClient, args: Namespace) -> str:
    """The controller leader's address, as 1005 of ``-a`` names it (MQClientAPIImpl asks the same)."""
    address, header = metadata(client, controllers(args))
    leader = header.get("controllerLeaderAddress")
    if not leader:
        raise NoLeaderKnown("%s: no controller leader of group %s is known yet (try again once one is elected)"
                         % (address, header.get("group")))
    return leader


@command("getControllerMetaData", "Get controller cluster's metadata.", _ADDRESS)
def get_controller_metadata(client: AdminClient, args: Namespace) -> Output:
    _, header = metadata(client, controllers(args))
    lines = ["", "#ControllerGroup\t%s" % java(header.get("group")),
             "#ControllerLeaderId\t%s" % java(header.get("controllerLeaderId")),
             "#ControllerLeaderAddress\t%s" % java(header.get("controllerLeaderAddress"))]
    peers = [peer for peer in (header.get("peers") or "").split(";") if peer]
    lines.extend("#Peer:\t%s" % peer for peer in peers)
    data = {"group": header.get("group"), "controllerLeaderId": header.get("controllerLeaderId"),
            "controllerLeaderAddress": header.get("controllerLeaderAddress"),
            "isLeader": header.get("isLeader") == "true", "peers": peers}
    return Output(data, lines)


def cluster_info(client: AdminClient) -> Any:
    """The name servers' ClusterInfo (Any: decoded JSON, read by key)."""
    _, answer = client.call_any(RequestCode.GET_BROKER_CLUSTER_INFO)
    return json_body(answer, "ClusterInfo")


def broker_names_of_cluster(client: AdminClient, cluster: str) -> list[str]:
    """CommandUtil.fetchBrokerNameByClusterName: the cluster's broker names from the name servers."""
    names = (cluster_info(client).get("clusterAddrTable") or {}).get(cluster)
    if not names:
        raise AdminError(NO_SUCH_CLUSTER)
    return sorted(names)


def _replica(replica: dict[str, Any]) -> str:
    return ("ReplicaIdentity{brokerName='%s', brokerId=%s, brokerAddress='%s', alive=%s}"
            % (java(replica.get("brokerName")), java(replica.get("brokerId")), java(replica.get("brokerAddress")),
               java(replica.get("alive"))))


@command("getSyncStateSet", "Fetch syncStateSet for target brokers.", _ADDRESS,
         (("-c", "--clusterName"), dict(help="which cluster")),
         (("-b", "--brokerName"), dict(help="which broker to fetch")))
def get_sync_state_set(client: AdminClient, args: Namespace) -> Output:
    if args.brokerName:
        names = [args.brokerName.strip()]
    elif args.clusterName:
        names = broker_names_of_cluster(client, args.clusterName.strip())
    else:
        raise AdminError("give -b brokerName or -c clusterName (with -n)")
    leader = leader_address(client, args)
    answer = client.call_ok(leader, RequestCode.CONTROLLER_GET_SYNC_STATE_DATA,
                            body=fastjson.dumps_plain(names).encode("utf-8"), kind=CONTROLLER)
    table = json_body(answer, "BrokerReplicasInfo").get("replicasInfoTable") or {}
    lines: list[str] = []
    for name in sorted(table):
        info = table[name]
        in_sync, not_in_sync = info.get("inSyncReplicas") or [], info.get("notInSyncReplicas") or []
        lines += ["", "#brokerName\t%s" % name, "#MasterBrokerId\t%s" % java(info.get("masterBrokerId")),
                  "#MasterAddr\t%s" % java(info.get("masterAddress")), "#MasterEpoch\t%s" % java(info.get("masterEpoch")),
                  "#SyncStateSetEpoch\t%s" % java(info.get("syncStateSetEpoch")), "#SyncStateSetNums\t%d" % len(in_sync)]
        for replica in in_sync:
            lines += ["", "InSyncReplica:\t%s" % _replica(replica)]
        for replica in not_in_sync:
            lines += ["", "NotInSyncReplica:\t%s" % _replica(replica)]
    return Output(table, lines)


@command("electMaster", "Re-elect the specified broker as master.", _ADDRESS,
         (("-b", "--brokerId"), dict(required=True, type=int, help="The id of the broker which requires to become master")),
         (("-bn", "--brokerName"), dict(required=True, help="The broker name of the replicas that require to be manipulated")),
         (("-c", "--clusterName"), dict(required=True, help="the clusterName of broker")))
def elect_master(client: AdminClient, args: Namespace) -> Output:
    cluster, name = args.clusterName.strip(), args.brokerName.strip()
    leader = leader_address(client, args)
    answer = client.call_ok(leader, RequestCode.CONTROLLER_ELECT_MASTER, {
        "clusterName": cluster, "brokerName": name, "brokerId": args.brokerId, "designateElect": "true",
        "invokeTime": _now_millis()}, kind=CONTROLLER)
    header = answer.ext or {}
    body = json_body(answer, "ElectMasterResponseBody") if answer.body else {}
    group = body.get("brokerMemberGroup") or body
    members = {int(k): v for k, v in (group.get("brokerAddrs") or {}).items()}
    lines = ["", "#ClusterName\t%s" % cluster, "#BrokerName\t%s" % name,
             "#BrokerMasterAddr\t%s" % java(header.get("masterAddress")),
             "#MasterEpoch\t%s" % java(header.get("masterEpoch")),
             "#SyncStateSetEpoch\t%s" % java(header.get("syncStateSetEpoch"))]
    lines.extend("\t#Broker\t%d\t%s" % (broker_id, members[broker_id]) for broker_id in sorted(members))
    data = {"clusterName": cluster, "brokerName": name, "masterBrokerId": _int(header.get("masterBrokerId")),
            "masterAddress": header.get("masterAddress"), "masterEpoch": _int(header.get("masterEpoch")),
            "syncStateSetEpoch": _int(header.get("syncStateSetEpoch")), "brokerAddrs": members,
            "syncStateSet": body.get("syncStateSet")}
    return Output(data, lines)


def _now_millis() -> int:
    """The request headers' ``invokeTime`` (Java fills it with System.currentTimeMillis())."""
    return int(time.time() * 1000)


def _int(text: Optional[str]) -> Optional[int]:
    return None if text in (None, "") else int(text)


@command("cleanBrokerMetadata", "Clean metadata of broker on controller.",
         (("-a", "--controllerAddress"), dict(required=True, help="The address of controller")),
         (("-b", "--brokerControllerIdsToClean"), dict(
             help="The brokerController id list which requires to clean metadata. eg: 1;2;3, means that clean "
                  "broker-1, broker-2 and broker-3")),
         (("-bn", "--brokerName"), dict(required=True, help="The broker name of the replicas that require to be manipulated")),
         (("-c", "--clusterName"), dict(help="The clusterName of broker")),
         (("-l", "--cleanLivingBroker"), dict(action="store_true",
                                              help="Whether clean up living brokers,default value is false")))
def clean_broker_metadata(client: AdminClient, args: Namespace) -> Output:
    name = args.brokerName.strip()
    cluster = args.clusterName.strip() if args.clusterName else None
    if not args.cleanLivingBroker and not cluster:
        raise AdminError("cleanLivingBroker option is false, clusterName option can not be empty.")
    ext = {"brokerName": name, "isCleanLivingBroker": "true" if args.cleanLivingBroker else "false",
           "invokeTime": _now_millis()}
    if cluster:
        ext["clusterName"] = cluster
    if args.brokerControllerIdsToClean is not None:
        # mqadmin means to check the ids' format but never does (a stream without a terminal
        # operation): the controller refuses a bad list, naming the format.
        ext["brokerControllerIdsToClean"] = args.brokerControllerIdsToClean.strip()
    leader = leader_address(client, args)
    client.call_ok(leader, RequestCode.CLEAN_BROKER_DATA, ext, kind=CONTROLLER)
    return Output({"brokerName": name, "cleaned": True}, ["clear broker %s metadata from controller success! " % name])


@command("getControllerConfig", "Get controller config.", ADDRESSES)
def get_controller_config(client: AdminClient, args: Namespace) -> Output:
    configs: dict[str, dict[str, str]] = {}
    lines: list[str] = []
    for address in controllers(args):
        answer = client.call_ok(address, RequestCode.GET_CONTROLLER_CONFIG, kind=CONTROLLER)
        configs[address] = parse_properties(decode_properties_bytes(answer.body or b""))
        lines.extend(config_lines(address, configs[address]))
    return Output(configs, lines)


@command("updateControllerConfig", "Update controller config.", ADDRESSES,
         (("-k", "--key"), dict(required=True, help="config key")),
         (("-v", "--value"), dict(required=True, help="config value")))
def update_controller_config(client: AdminClient, args: Namespace) -> Output:
    key, value = args.key.strip(), args.value.strip()
    addresses = controllers(args)
    body = format_properties([(key, value)]).encode("utf-8")
    errors: list[str] = []
    for address in addresses:
        try:
            client.call_ok(address, RequestCode.UPDATE_CONTROLLER_CONFIG, body=body, kind=CONTROLLER)
        except AdminError as e:
            errors.append(str(e))
    if errors:   # MQClientAPIImpl asks every controller, then throws the last refusal
        raise AdminError(errors[-1])
    return Output({"updated": addresses, key: value},
                  ["update controller config success!%s" % "[%s]" % ", ".join(addresses), "%s : %s" % (key, value)])


def broker_addresses(client: AdminClient, broker_name: Optional[str] = None,
                     cluster: Optional[str] = None) -> list[str]:
    """CommandUtil.fetchMasterAndSlaveAddrBy{BrokerName,ClusterName}: every address the name servers list."""
    info = cluster_info(client)
    brokers = info.get("brokerAddrTable") or {}
    names: Optional[list[str]]
    if broker_name is not None:
        names = [broker_name]
    else:
        names = (info.get("clusterAddrTable") or {}).get(cluster)
        if names is None:
            raise AdminError(NO_SUCH_CLUSTER)
    addresses: list[str] = []
    for name in sorted(names):
        addrs = (brokers.get(name) or {}).get("brokerAddrs") or {}
        addresses.extend(addrs[k] for k in sorted(addrs, key=int) if addrs[k] not in addresses)
    return addresses


def epoch_lines(address: str, cache: dict[str, Any]) -> list[str]:
    """GetBrokerEpochSubCommand.printData for one broker: the last epoch ends at the broker's max offset."""
    lines = ["", "#clusterName\t%s" % java(cache.get("clusterName")), "#brokerName\t%s" % java(cache.get("brokerName")),
             "#brokerAddr\t%s" % address, "#brokerId\t%d" % int(cache.get("brokerId") or 0)]
    entries = cache.get("epochList") or []
    for i, entry in enumerate(entries):
        end = cache.get("maxOffset") if i == len(entries) - 1 else entry.get("endOffset", 2 ** 63 - 1)
        lines.append("#Epoch: EpochEntry{epoch=%s, startOffset=%s, endOffset=%s}"
                     % (java(entry.get("epoch")), java(entry.get("startOffset")), java(end)))
    return lines


@command("getBrokerEpoch", "Fetch broker epoch entries.",
         (("-c", "--clusterName"), dict(help="which cluster")),
         (("-b", "--brokerName"), dict(help="which broker to fetch")))
def get_broker_epoch(client: AdminClient, args: Namespace) -> Output:
    if args.brokerName:
        addresses = broker_addresses(client, broker_name=args.brokerName.strip())
    elif args.clusterName:
        addresses = broker_addresses(client, cluster=args.clusterName.strip())
    else:
        raise AdminError("give -b brokerName or -c clusterName (with -n)")
    caches: dict[str, Any] = {}
    lines: list[str] = []
    for address in addresses:
        answer = client.call_ok(address, RequestCode.GET_BROKER_EPOCH_CACHE, kind="broker")
        caches[address] = json_body(answer, "EpochEntryCache")
        lines.extend(epoch_lines(address, caches[address]))
    return Output(caches, lines)
