"""The fuzz tests' table checker: what one answer shows is reported at once; a route and a cluster info
that disagree only when the disagreement is seen again (a change may come and go between two reads)."""

import json

from namesrv.protocol.codes import RequestCode, ResponseCode
from namesrv.protocol.command import RemotingCommand
from tools import checks

X_ADDRS = {"0": "127.0.0.1:20913"}


def cluster_info(with_x):
    brokers = {checks.CONTROL_BROKER: {"cluster": checks.CONTROL_CLUSTER, "brokerName": checks.CONTROL_BROKER,
                                       "brokerAddrs": {"0": checks.CONTROL_ADDR}}}
    clusters = {checks.CONTROL_CLUSTER: [checks.CONTROL_BROKER]}
    if with_x:
        brokers["x"] = {"cluster": "FuzzClusterA", "brokerName": "x", "brokerAddrs": X_ADDRS}
        clusters["FuzzClusterA"] = ["x"]
    return {"brokerAddrTable": brokers, "clusterAddrTable": clusters}


def route(broker_datas=True):
    return {"queueDatas": [{"brokerName": "x", "readQueueNums": 4, "writeQueueNums": 4, "perm": 6}],
            "brokerDatas": [{"cluster": "FuzzClusterA", "brokerName": "x", "brokerAddrs": X_ADDRS}]
            if broker_datas else []}


def answer(body, code=ResponseCode.SUCCESS):
    return RemotingCommand(code=code, body=json.dumps(body).encode() if body is not None else None)


class ScriptedClient:
    """Answers each check in turn from ``looks``: (cluster info before, the fuzz topic's route, after)."""

    def __init__(self, looks):
        self.looks = list(looks)
        self.infos = []
        self.checks = 0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def call(self, request):
        if request.code == RequestCode.GET_BROKER_CLUSTER_INFO:
            if not self.infos:
                self.checks += 1
                before, self.route, after = self.looks.pop(0)
                self.infos = [after, before]
            return answer(cluster_info(self.infos.pop()))
        topic = request.ext["topic"]
        if topic in checks.CONTROL_TOPICS:
            return RemotingCommand(code=ResponseCode.SUCCESS, body=b"control")
        if topic == "FuzzTopic-1" and self.route is not None:
            return answer(self.route)
        return answer(None, ResponseCode.TOPIC_NOT_EXIST)


def checker(looks):
    table_checker = checks.TableChecker("127.0.0.1", 1, fuzz_topics=("FuzzTopic-1", "FuzzTopic-2"))
    table_checker.expected_routes = {t: b"control" for t in checks.CONTROL_TOPICS}
    client = ScriptedClient(looks)
    table_checker._client = lambda: client
    return table_checker, client


def test_a_broker_that_came_and_went_between_two_equal_cluster_infos_is_looked_at_again():
    table_checker, client = checker([(False, route(), False), (False, None, False)])
    assert table_checker.check(pause=0) == []
    assert client.checks == 2


def test_a_route_naming_a_broker_cluster_info_never_has_is_reported():
    table_checker, client = checker([(False, route(), False)] * 3)
    assert table_checker.check(pause=0) == [
        "route FuzzTopic-1: broker 'x' is not in cluster info as None"]
    assert client.checks == 3


def test_a_route_that_contradicts_itself_is_reported_at_once():
    table_checker, client = checker([(True, route(broker_datas=False), True)])
    assert table_checker.check(pause=0) == ["route FuzzTopic-1: queue data of 'x' without broker data"]
    assert client.checks == 1


def test_cluster_info_that_keeps_changing_shows_nothing_inconsistent():
    table_checker, client = checker([(False, route(), True)] * 3)
    assert table_checker.check(pause=0) == []
    assert client.checks == 3


def test_what_the_checks_compared_and_looked_at_again_is_counted():
    table_checker, _ = checker([(False, route(), False), (False, None, False)])
    assert table_checker.check(pause=0) == []
    assert (table_checker.routes_cross_checked, table_checker.transient, table_checker.unstable) == (1, 1, 0)
    table_checker, _ = checker([(True, route(), False), (True, route(), True)])
    assert table_checker.check(pause=0) == []
    assert (table_checker.routes_cross_checked, table_checker.transient, table_checker.unstable) == (1, 0, 1)


def test_a_plans_route_answer_is_checked_whole():
    from tools.fuzz import FuzzReport, _check_route_answer
    report = FuzzReport()
    _check_route_answer(report, answer(route()))
    _check_route_answer(report, answer(route(broker_datas=False)))
    _check_route_answer(report, answer({"configTable": {}}))     # not a route
    assert report.plan_routes_checked == 2
    assert report.plan_route_problems == [["route (a plan's read): queue data of 'x' without broker data"]]
