"""A lossy, slow link in user space, for what this kernel's ``tc`` cannot do (no netem here).

    python -m tools.faultlab.proxy --listen 127.0.0.1:19000 --control FILE

Runs inside a lab host. iptables sends the host's outgoing controller-to-controller connections to
it (``-t nat -A OUTPUT ... -j DNAT --to 127.0.0.1:19000``); it finds where each was going
(``SO_ORIGINAL_DST``), connects there itself with a mark the DNAT rule skips, and copies bytes
both ways. While the control file (JSON, re-read every 100 ms) says so, each chunk is delayed by
``delay`` seconds and, with probability ``loss``, held back ``stall`` seconds more: what a lost
TCP segment costs, since TCP retransmits it; ``reset`` is the chance that a chunk instead resets
both connections. With an empty or missing control file the link is clean. Order is kept per
direction, as TCP keeps it.
"""

import argparse
import asyncio
import json
import os
import random
import socket
import struct
import time

SO_ORIGINAL_DST = 80
#: the mark on the proxy's own connections, which the DNAT rule leaves alone
MARK = 0x2A


def original_destination(sock):
    raw = sock.getsockopt(socket.SOL_IP, SO_ORIGINAL_DST, 16)
    port, packed = struct.unpack_from("!2xH4s", raw)
    return socket.inet_ntoa(packed), port


class Settings:
    def __init__(self, path):
        self.path = path
        self.value = {}
        self.read_at = 0.0

    def get(self):
        now = time.monotonic()
        if now - self.read_at > 0.1:
            self.read_at = now
            try:
                with open(self.path) as f:
                    self.value = json.load(f) or {}
            except (OSError, ValueError):
                self.value = {}
        return self.value


async def pump(reader, writer, settings, rng, peer_writer):
    try:
        while True:
            data = await reader.read(65536)
            if not data:
                break
            now = settings.get()
            delay = float(now.get("delay", 0.0))
            if rng.random() < float(now.get("reset", 0.0)):
                for w in (writer, peer_writer):
                    sock = w.get_extra_info("socket")
                    if sock is not None:
                        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    w.close()
                return
            if rng.random() < float(now.get("loss", 0.0)):
                delay += float(now.get("stall", 0.3))
            if delay:
                await asyncio.sleep(delay)
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        writer.close()


async def handle(reader, writer, settings, rng):
    sock = writer.get_extra_info("socket")
    try:
        host, port = original_destination(sock)
        out = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        out.setsockopt(socket.SOL_SOCKET, socket.SO_MARK, MARK)
        out.setblocking(False)
        await asyncio.get_running_loop().sock_connect(out, (host, port))
        peer_reader, peer_writer = await asyncio.open_connection(sock=out)
    except OSError:
        writer.close()
        return
    await asyncio.gather(pump(reader, peer_writer, settings, rng, writer),
                         pump(peer_reader, writer, settings, rng, peer_writer))


async def serve(listen, control, seed):
    host, port = listen.rsplit(":", 1)
    settings = Settings(control)
    rng = random.Random(seed)
    server = await asyncio.start_server(lambda r, w: handle(r, w, settings, rng), host, int(port))
    open(control + ".ready", "w").close()
    async with server:
        await server.serve_forever()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--listen", default="127.0.0.1:19000")
    parser.add_argument("--control", required=True)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if not os.path.exists(args.control):
        open(args.control, "w").close()
    asyncio.run(serve(args.listen, args.control, args.seed))


if __name__ == "__main__":
    main()
