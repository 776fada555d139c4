#!/usr/bin/env python3
"""A loopback TCP relay that behaves like a slower network link: a bandwidth limit shared by every connection in
each direction, and a fixed round-trip time. It relays bytes as they are (TLS passes through untouched), so a
client pointed at it talks to the real server over the emulated link.

    python bench/linkproxy.py --upstream 127.0.0.1:6443 [--listen 127.0.0.1:0] [--mbit 100] [--rtt-ms 20]

It prints `listening HOST:PORT` on stdout once it accepts connections and runs until it is terminated. Only
loopback addresses are accepted on either side.

The model: each direction is one link. A chunk read from one side is sent when the link is free (serialization at
`--mbit`) and delivered half the round-trip later. At most `--buffer` bytes are in flight per connection and
direction; past that the proxy stops reading from the sender, as a TCP receive window would, so a slow reader
slows the server down instead of the proxy's memory growing. Standard library only.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ipaddress
import signal
import sys
import time

CHUNK = 64 << 10


class Link:
    """One direction of the emulated link, shared by every connection: when it is next free to send."""

    def __init__(self, bits_per_second: float, one_way_delay: float) -> None:
        self.rate = bits_per_second / 8  # bytes per second
        self.delay = one_way_delay
        self.free_at = 0.0
        self.bytes = 0

    def schedule(self, size: int) -> float:
        """The monotonic time at which `size` bytes, queued now, arrive at the other end."""
        start = max(time.monotonic(), self.free_at)
        self.free_at = start + size / self.rate
        self.bytes += size
        return self.free_at + self.delay


async def pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, link: Link, window: int) -> None:
    """Relay one direction: read, schedule on the link, deliver in order at the arrival time."""
    queue: asyncio.Queue[tuple[float, bytes] | None] = asyncio.Queue(maxsize=max(1, window // CHUNK))

    async def deliver() -> None:
        while (item := await queue.get()) is not None:
            due, data = item
            wait = due - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            writer.write(data)
            await writer.drain()
        with contextlib.suppress(OSError):
            if writer.can_write_eof():
                writer.write_eof()

    sender = asyncio.create_task(deliver())
    try:
        while data := await reader.read(CHUNK):
            await queue.put((link.schedule(len(data)), data))  # blocks when the window is full
    except OSError:
        pass
    finally:
        await queue.put(None)
        with contextlib.suppress(OSError, ConnectionError):
            await sender


async def serve(listen: tuple[str, int], upstream: tuple[str, int], up: Link, down: Link, window: int) -> None:
    async def handle(client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        try:
            server_r, server_w = await asyncio.open_connection(*upstream)
        except OSError:
            client_w.close()
            return
        await asyncio.sleep(up.delay + down.delay)  # the TCP handshake's round trip
        try:
            await asyncio.gather(pump(client_r, server_w, up, window), pump(server_r, client_w, down, window))
        finally:
            for w in (client_w, server_w):
                w.close()

    server = await asyncio.start_server(handle, *listen, limit=CHUNK)
    host, port = server.sockets[0].getsockname()[:2]
    print(f"listening {host}:{port}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    async with server:
        await stop.wait()
    print(f"relayed {up.bytes:,} bytes up, {down.bytes:,} bytes down", file=sys.stderr, flush=True)


def loopback_address(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    host = host.strip("[]") or "127.0.0.1"
    if host != "localhost" and not ipaddress.ip_address(host).is_loopback:
        raise argparse.ArgumentTypeError(f"{text}: only loopback addresses")
    return host, int(port)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    ap.add_argument("--upstream", type=loopback_address, required=True, help="HOST:PORT of the real server")
    ap.add_argument("--listen", type=loopback_address, default=("127.0.0.1", 0), help="default: a free port")
    ap.add_argument("--mbit", type=float, default=100.0, help="bandwidth per direction, Mbit/s (default 100)")
    ap.add_argument("--rtt-ms", type=float, default=20.0, help="round-trip time in ms (default 20)")
    ap.add_argument("--buffer", type=int, default=4 << 20, help="bytes in flight per connection and direction")
    args = ap.parse_args(argv)
    half = args.rtt_ms / 2000
    up, down = Link(args.mbit * 1e6, half), Link(args.mbit * 1e6, half)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(args.listen, args.upstream, up, down, args.buffer))
    return 0


if __name__ == "__main__":
    sys.exit(main())
