"""latency_proxy.py - a TCP proxy that delays what clients send, as a WAN
would, for bench_urls.sh: every chunk a client sends (an HTTP request: a
GET is one) reaches the server MS milliseconds later; answers come back at
once.  One asyncio thread moves the bytes (no thread a connection, no
parsing: keep-alive and any HTTP version pass through), so its own cost
stays small beside the clients'.  Python standard library only.
Usage: latency_proxy.py UPSTREAM_PORT MS   (prints the port it listens on)
"""
import asyncio
import sys


async def pump(reader, writer, delay):
    try:
        while True:
            data = await reader.read(65536)
            if not data:
                break
            if delay:
                await asyncio.sleep(delay)
            writer.write(data)
            await writer.drain()
    except (ConnectionError, asyncio.CancelledError):
        pass
    finally:
        writer.close()


async def main():
    upstream, delay = int(sys.argv[1]), float(sys.argv[2]) / 1000

    async def client(cr, cw):
        try:
            ur, uw = await asyncio.open_connection("127.0.0.1", upstream)
        except OSError:
            cw.close()
            return
        await asyncio.gather(pump(cr, uw, delay), pump(ur, cw, 0))

    srv = await asyncio.start_server(client, "127.0.0.1", 0, backlog=1024)
    print(srv.sockets[0].getsockname()[1], flush=True)
    async with srv:
        await srv.serve_forever()


asyncio.run(main())
