"""serve_load.py - a small load client for bench_stats.sh: C concurrent
clients (threads, each with one kept-alive HTTP/1.1 connection to the
loopback server) request pages for S seconds and the pages per second
are printed.  Pages: "sample" (sample?o=RANDOM), "grid" (grid?o=RANDOM,
the page only, thumbnails not fetched) or "thumb" (thumb?o=RANDOM&m=M).

    serve_load.py URL KIND SAMPLES CLIENTS SECONDS [MEMBER]
"""
import http.client
import random
import sys
import threading
import time
import urllib.parse


def main():
    url, kind, n, clients, secs = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
    member = int(sys.argv[6]) if len(sys.argv) > 6 else 0
    u = urllib.parse.urlparse(url)
    assert u.hostname in ("127.0.0.1", "::1", "localhost"), "loopback only"
    done = [0] * clients
    bad = [0] * clients
    stop = time.monotonic() + secs

    def client(i):
        rnd = random.Random(i)
        c = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
        while time.monotonic() < stop:
            o = rnd.randrange(n)
            path = {"sample": "/sample?o=%d" % o, "grid": "/grid?o=%d" % (o - o % 48),
                    "thumb": "/thumb?o=%d&m=%d" % (o, member)}[kind]
            try:
                c.request("GET", path)
                r = c.getresponse()
                r.read()
                if r.status == 200:
                    done[i] += 1
                else:
                    bad[i] += 1
            except (OSError, http.client.HTTPException):
                bad[i] += 1
                c.close()
                c = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
        c.close()

    t0 = time.monotonic()
    ts = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    el = time.monotonic() - t0
    print("%.1f %d %d" % (sum(done) / el, sum(done), sum(bad)))


if __name__ == "__main__":
    main()
