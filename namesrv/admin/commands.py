"""The sub-commands: which request each sends (requests.md) and what it prints.

Names, options and messages are mqadmin's. Differences: ``clusterList`` shows what the
name server knows (mqadmin also asks every broker for its runtime statistics);
``deleteTopic`` removes the route from the name servers only (mqadmin first deletes the
topic on the brokers of ``-c``, which is then required); ``getKvConfig`` has no mqadmin
twin (mqadmin only reads KV entries through Java code).
"""

from namesrv.codec import fastjson
from namesrv.admin.connection import AdminError
from namesrv.admin.output import Output, table, to_json
from namesrv.config.properties import decode_properties_bytes, format_properties, parse_properties
from namesrv.protocol.codes import RequestCode

COMMANDS = {}


def command(name, help, *options):
    """Declare a sub-command; ``options`` are ``(flags, argparse kwargs)``."""
    def register(function):
        COMMANDS[name] = (help, options, function)
        return function
    return register


def json_body(answer, what):
    try:
        return fastjson.loads(answer.body or b"{}")
    except ValueError as e:
        raise AdminError("undecodable %s from the name server: %s" % (what, e))


def _each_server(client, code, ext=None, body=None, describe=None):
    """Send to every name server of ``-n``: (per-server results, lines, error lines)."""
    results, lines, errors = {}, [], []
    for name in client.names:
        try:
            answer = client.call_ok(name, code, ext, body)
        except AdminError as e:
            results[name] = {"ok": False, "error": str(e)}
            errors.append(str(e))
            continue
        results[name] = {"ok": True}
        if describe is not None:
            results[name].update(describe(name, answer, lines))
    return results, lines, errors


@command("clusterList", "List all of clusters")
def cluster_list(client, args):
    _, answer = client.call_any(RequestCode.GET_BROKER_CLUSTER_INFO)
    info = json_body(answer, "ClusterInfo")
    brokers = info.get("brokerAddrTable") or {}
    rows = []
    for cluster in sorted(info.get("clusterAddrTable") or {}):
        for broker_name in sorted(info["clusterAddrTable"][cluster]):
            addrs = (brokers.get(broker_name) or {}).get("brokerAddrs") or {}
            for broker_id in sorted(addrs, key=int):
                rows.append({"cluster": cluster, "brokerName": broker_name, "brokerId": int(broker_id),
                             "addr": addrs[broker_id]})
    lines = table(["Cluster Name", "Broker Name", "BID", "Addr"],
                  [[r["cluster"], r["brokerName"], r["brokerId"], r["addr"]] for r in rows])
    return Output(rows, lines)


@command("topicRoute", "Examine topic route info",
         (("-t", "--topic"), dict(required=True, help="topic name")),
         (("-l", "--list"), dict(action="store_true", help="Use list format to print data")))
def topic_route(client, args):
    topic = args.topic.strip()
    _, answer = client.call_any(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic})
    route = json_body(answer, "TopicRouteData")
    if not args.list:
        return Output(route, to_json(route).splitlines())
    queues = {q.get("brokerName"): q for q in route.get("queueDatas") or []}
    rows, total_read, total_write = [], 0, 0
    for broker in sorted(route.get("brokerDatas") or [], key=lambda b: b.get("brokerName") or ""):
        queue = queues.get(broker.get("brokerName")) or {}
        total_read += queue.get("readQueueNums") or 0
        total_write += queue.get("writeQueueNums") or 0
        addrs = broker.get("brokerAddrs") or {}
        rows.append([broker.get("cluster"), broker.get("brokerName"),
                     "{%s}" % ", ".join("%s=%s" % (k, addrs[k]) for k in sorted(addrs, key=int)),
                     queue.get("readQueueNums"), queue.get("writeQueueNums"), queue.get("perm")])
    rows.append(["Total:", len(queues), "", total_read, total_write, ""])
    return Output(route, table(["ClusterName", "BrokerName", "BrokerAddrs", "ReadQueue", "WriteQueue", "Perm"], rows))


@command("topicList", "Fetch all topic list from name server",
         (("-c", "--clusterModel"), dict(action="store_true", help="show the cluster of each topic")))
def topic_list(client, args):
    if not args.clusterModel:
        _, answer = client.call_any(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER)
        topics = sorted(json_body(answer, "TopicList").get("topicList") or [])
        return Output(topics, topics)
    _, answer = client.call_any(RequestCode.GET_BROKER_CLUSTER_INFO)
    clusters = sorted(json_body(answer, "ClusterInfo").get("clusterAddrTable") or {})
    rows = []
    for cluster in clusters:
        _, answer = client.call_any(RequestCode.GET_TOPICS_BY_CLUSTER, {"cluster": cluster})
        for topic in sorted(json_body(answer, "TopicList").get("topicList") or []):
            rows.append({"cluster": cluster, "topic": topic})
    return Output(rows, table(["Cluster Name", "Topic"], [[r["cluster"], r["topic"]] for r in rows]))


def config_lines(name, config):
    """One server's properties as mqadmin's getNamesrvConfig and getControllerConfig print them."""
    return ["============%s============" % name] + ["%-50s=  %s" % (key, config[key]) for key in sorted(config)]


@command("getNamesrvConfig", "Get configs of name server.")
def get_namesrv_config(client, args):
    def describe(name, answer, lines):
        config = parse_properties(decode_properties_bytes(answer.body or b""))
        lines.extend(config_lines(name, config))
        return {"config": config}
    results, lines, errors = _each_server(client, RequestCode.GET_NAMESRV_CONFIG, describe=describe)
    return Output(results, lines, failed=bool(errors), errors=errors)


@command("updateNamesrvConfig", "Update configs of name server.",
         (("-k", "--key"), dict(required=True, help="config key")),
         (("-v", "--value"), dict(required=True, help="config value")))
def update_namesrv_config(client, args):
    key, value = args.key.strip(), args.value.strip()
    body = format_properties([(key, value)]).encode("utf-8")
    results, lines, errors = _each_server(client, RequestCode.UPDATE_NAMESRV_CONFIG, body=body)
    done = [name for name in client.names if results[name]["ok"]]
    if done:
        # Java prints the List: [10.0.0.1:9876, 10.0.0.2:9876]
        lines = ["update name server config success![%s]" % ", ".join(done), "%s : %s" % (key, value)]
    return Output(results, lines, failed=bool(errors), errors=errors)


_NAMESPACE = (("-s", "--namespace"), dict(required=True, help="set the namespace"))


@command("updateKvConfig", "Create or update KV config.", _NAMESPACE,
         (("-k", "--key"), dict(required=True, help="set the key name")),
         (("-v", "--value"), dict(required=True, help="set the key value")))
def update_kv_config(client, args):
    ext = {"namespace": args.namespace.strip(), "key": args.key.strip(), "value": args.value.strip()}
    return _write_everywhere(client, RequestCode.PUT_KV_CONFIG, ext,
                             "create or update kv config to namespace success.")


@command("deleteKvConfig", "Delete KV config.", _NAMESPACE,
         (("-k", "--key"), dict(required=True, help="set the key name")))
def delete_kv_config(client, args):
    ext = {"namespace": args.namespace.strip(), "key": args.key.strip()}
    return _write_everywhere(client, RequestCode.DELETE_KV_CONFIG, ext, "delete kv config from namespace success.")


@command("getKvConfig", "Get a KV config value, or every key of a namespace without -k.", _NAMESPACE,
         (("-k", "--key"), dict(help="the key name (omit it to list the namespace)")))
def get_kv_config(client, args):
    namespace = args.namespace.strip()
    if args.key is not None:
        key = args.key.strip()
        _, answer = client.call_any(RequestCode.GET_KV_CONFIG, {"namespace": namespace, "key": key})
        value = (answer.ext or {}).get("value")
        return Output({key: value}, table(["Key", "Value"], [[key, value]]))
    _, answer = client.call_any(RequestCode.GET_KVLIST_BY_NAMESPACE, {"namespace": namespace})
    entries = json_body(answer, "KVTable").get("table") or {}
    return Output(entries, table(["Key", "Value"], [[k, entries[k]] for k in sorted(entries)]))


def _write_everywhere(client, code, ext, success_line):
    results, lines, errors = _each_server(client, code, ext)
    if any(r["ok"] for r in results.values()):
        lines.append(success_line)
    return Output(results, lines, failed=bool(errors), errors=errors)


_BROKER = (("-b", "--brokerName"), dict(required=True, help="broker name"))


def _perm_command(verb, code, count_field):
    def run(client, args):
        broker_name = args.brokerName.strip()

        def describe(name, answer, lines):
            count = int((answer.ext or {}).get(count_field) or 0)
            lines.append("%s write perm of broker[%s] in name server[%s] OK, %d" % (verb, broker_name, name, count))
            return {count_field: count}
        results, lines, errors = _each_server(client, code, {"brokerName": broker_name}, describe=describe)
        for name in client.names:
            if not results[name]["ok"]:
                lines.append("%s write perm of broker[%s] in name server[%s] Failed" % (verb, broker_name, name))
        return Output(results, lines, failed=bool(errors), errors=errors)
    return run


command("wipeWritePerm", "Wipe write perm of broker in all name server you defined in the -n param", _BROKER)(
    _perm_command("wipe", RequestCode.WIPE_WRITE_PERM_OF_BROKER, "wipeTopicCount"))
command("addWritePerm", "Add write perm of broker in all name server you defined in the -n param", _BROKER)(
    _perm_command("add", RequestCode.ADD_WRITE_PERM_OF_BROKER, "addTopicCount"))


@command("deleteTopic", "Delete topic from the NameServers (their routes only; brokers keep it).",
         (("-t", "--topic"), dict(required=True, help="topic name")),
         (("-c", "--clusterName"), dict(help="delete the topic's queues of this cluster only")))
def delete_topic(client, args):
    topic = args.topic.strip()
    ext = {"topic": topic}
    if args.clusterName:
        ext["clusterName"] = args.clusterName.strip()
    return _write_everywhere(client, RequestCode.DELETE_TOPIC_IN_NAMESRV, ext,
                             "delete topic [%s] from NameServer success." % topic)
