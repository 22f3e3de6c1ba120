"""Entries for the controller's Raft log, from the client's host: ``count`` broker groups that claim an id each
(CONTROLLER_APPLY_BROKER_ID on fresh names, at the controller that says it leads), so that the log grows past
the lab's snapshot threshold while a member is down (``schedules.snapshot_catch_up``).

    python -m tools.faultlab.churn --controllers A,B,C --count 150 --prefix snap-1
"""

import argparse
import time

from namesrv.protocol.codes import RequestCode, ResponseCode
from tools.faultlab.agent import call


def leader(controllers):
    for address in controllers:
        meta = call(address, RequestCode.CONTROLLER_GET_METADATA_INFO, timeout=0.5)
        if meta is not None and meta.code == ResponseCode.SUCCESS and (meta.ext or {}).get("controllerLeaderAddress"):
            return meta.ext["controllerLeaderAddress"]
    return None


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--controllers", required=True)
    parser.add_argument("--count", type=int, default=150)
    parser.add_argument("--prefix", default="churn")
    parser.add_argument("--within", type=float, default=60.0)
    args = parser.parse_args(argv)
    controllers = [a for a in args.controllers.split(",") if a]
    done, target, deadline = 0, None, time.monotonic() + args.within
    while done < args.count and time.monotonic() < deadline:
        target = target or leader(controllers)
        if target is None:
            time.sleep(0.1)
            continue
        answer = call(target, RequestCode.CONTROLLER_APPLY_BROKER_ID, {
            "clusterName": "ChurnCluster", "brokerName": "%s-%d" % (args.prefix, done), "appliedBrokerId": 1,
            "registerCheckCode": "10.9.9.9:1;%d" % int(time.time() * 1000)})
        if answer is not None and answer.code == ResponseCode.SUCCESS:
            done += 1
        else:
            target = None
        time.sleep(0.02)
    print(done)
    return 0 if done >= args.count else 1


if __name__ == "__main__":
    raise SystemExit(main())
