"""The route hot path in this process, without sockets: CPU per request, step by step.

A NameServer is built with ``make_service`` (not started, a ``task.Clock`` as its reactor)
and one of its connections is fed pipelined GET_ROUTEINFO_BY_TOPIC frames through a
``StringTransport``: framing, header decoding, isolation, dispatch, the route processor
and response encoding all run, system calls do not. The baseline server's protocol is fed
the same bytes. The figure is taken with the AnswerCache (its steady state: every request
a repeat) and without it (every request decoded and dispatched). Being CPU-bound and single-process, these figures move much less than the
socket ones on a busy machine: they are the ones to optimise against. Each figure is the
best of a few repeats.
"""

import os
import random
import tempfile
import time

from twisted.internet import task
from twisted.internet.address import IPv4Address
from twisted.internet.testing import StringTransport

from bench.lib.baseline import FixedAnswerFactory
from bench.lib.brokers import broker_addr, register_body, topic_names
from bench.scenarios.route import ROUTE_TOPIC_PREFIX
from bench.lib.wire import OPAQUE_BASE, route_templates

SECTION = "Route hot path in process (no sockets)"
_PEER = IPv4Address("TCP", "127.0.0.1", 40000)


class _Sink(StringTransport):
    """A transport that counts what is written and keeps nothing."""

    def __init__(self):
        StringTransport.__init__(self, peerAddress=_PEER)
        self.written = 0

    def write(self, data):
        self.written += len(data)


def build_server(topics, brokers, workdir):
    """An unstarted NameServer holding ``brokers`` × ``topics`` routes, and one connection to it."""
    from namesrv.config import NamesrvConfig
    from namesrv.observe.eventlog import NullEventLog
    from namesrv.routes.bodies.decode import decode_register_broker_body
    from namesrv.service import make_service

    config = NamesrvConfig()
    config.update({"eventLogEnable": "false", "routeSnapshotEnable": "false", "listenPort": "0",
                   "kvConfigPath": os.path.join(workdir, "kv.json"), "logDir": workdir,
                   "configStorePath": os.path.join(workdir, "namesrv.properties")})
    service = make_service(config, reactor=task.Clock(), events=NullEventLog())
    body = register_body(topics, False)
    for i in range(brokers):
        decoded = decode_register_broker_body(body, False, 409)
        service.routes.register_broker("BenchCluster", broker_addr(i), "bench-route-broker-%02d" % i, 0,
                                       broker_addr(i), decoded.topic_config_wrapper, decoded.filter_server_list,
                                       object())
    protocol = service.listen_factory.buildProtocol(_PEER)
    transport = _Sink()
    protocol.makeConnection(transport)
    return service, protocol, transport


def _batches(templates, count, batch, seed=7):
    rng = random.Random(seed)
    opaque = OPAQUE_BASE
    chunks = []
    for _ in range(count // batch):
        parts = []
        for _ in range(batch):
            opaque += 1
            parts.append(templates[rng.randrange(len(templates))].frame(opaque))
        chunks.append(b"".join(parts))
    return chunks


def _per_request(protocol, chunks, batch, repeats):
    """Best-of-``repeats`` microseconds per request to feed every chunk to ``protocol``."""
    best = None
    for _ in range(repeats):
        started = time.perf_counter()
        for chunk in chunks:
            protocol.dataReceived(chunk)
        seconds = time.perf_counter() - started
        best = seconds if best is None else min(best, seconds)
    return best / (len(chunks) * batch) * 1e6


def _step(function, argument_list, repeats):
    best = None
    for _ in range(repeats):
        started = time.perf_counter()
        for argument in argument_list:
            function(argument)
        seconds = time.perf_counter() - started
        best = seconds if best is None else min(best, seconds)
    return best / len(argument_list) * 1e6


def run(collector, scale, log=print):
    from namesrv.protocol.codec import decode_frame, encode_frame

    count, batch, repeats = scale.inprocess_requests, 16, scale.inprocess_repeats
    topics = topic_names(ROUTE_TOPIC_PREFIX, scale.route_topics)
    templates = route_templates(topics)
    chunks = _batches(templates, count, batch)
    with tempfile.TemporaryDirectory(prefix="bench-inprocess-") as workdir:
        service, protocol, transport = build_server(topics, scale.route_brokers, workdir)
        protocol.dataReceived(b"".join(chunks))  # warm the route cache
        if transport.written == 0:
            raise RuntimeError("the in-process server wrote no answer")
        ours = _per_request(protocol, chunks, batch, repeats)
        cache, protocol.answer_cache = protocol.answer_cache, None
        uncached = _per_request(protocol, chunks, batch, repeats)   # every request decoded and dispatched
        protocol.answer_cache = cache

        frames = [templates[i % len(templates)].frame(OPAQUE_BASE + i)[4:] for i in range(min(count, 5000))]
        requests = [decode_frame(frame) for frame in frames]
        decode_us = _step(decode_frame, frames, repeats)
        registry = service.registry
        dispatch_us = _step(lambda request: registry.dispatch(request, protocol), requests, repeats)
        dispatcher = service.chain.entry
        isolated_us = _step(lambda request: dispatcher.dispatch(request, protocol), requests, repeats)
        processor = registry.processor_for(requests[0].code)
        process_us = _step(lambda request: processor.process_request(request, protocol), requests, repeats)
        responses = [registry.dispatch(request, protocol) for request in requests]
        encode_us = _step(encode_frame, responses, repeats)
        protocol.connectionLost(None)

    body = responses[0].body
    baseline = FixedAnswerFactory(body).buildProtocol(_PEER)
    baseline.makeConnection(_Sink())
    theirs = _per_request(baseline, chunks, batch, repeats)

    params = {"topics": scale.route_topics, "brokers": scale.route_brokers, "requests": len(chunks) * batch,
              "pipelined": batch}
    collector.add(SECTION, "inprocess.namesrv.us_per_request", ours, "us", **params)
    collector.add(SECTION, "inprocess.baseline.us_per_request", theirs, "us", **params)
    collector.add(SECTION, "inprocess.namesrv.ratio_to_baseline", theirs / ours, "ratio", **params)
    collector.add(SECTION, "inprocess.namesrv_uncached.us_per_request", uncached, "us", **params)
    collector.add(SECTION, "inprocess.namesrv_uncached.ratio_to_baseline", theirs / uncached, "ratio", **params)
    steps = [("decode_frame", decode_us), ("isolation dispatch (policies + registry + processor)", isolated_us),
             ("registry.dispatch (policies + processor + observers)", dispatch_us),
             ("route processor.process_request", process_us), ("encode_frame", encode_us)]
    for name, micros in steps:
        collector.add(SECTION, "inprocess.step_us", micros, "us", step=name, **params)
    collector.note(SECTION, "Steps are timed alone, in tight loops over the same requests (warm caches), so "
                   "they add up to less than the whole path; read them as the relative weight of each step.")
    log("in process: namesrv %.1f us/request (%.1f without the answer cache), baseline %.1f us (ratio %.2f); "
        "decode %.1f, dispatch %.1f (processor %.1f), encode %.1f us"
        % (ours, uncached, theirs, theirs / ours, decode_us, isolated_us, process_us, encode_us))
    return ours
