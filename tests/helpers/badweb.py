"""badweb.py - a web server on 127.0.0.1 that answers the way a broken or
hostile one might, for tests/e2e/http_store.sh.  Python's standard library
only.  Usage: badweb.py PORTFILE SHARD [TEXT]

It writes its port to PORTFILE.  SHARD is a real .tar the answers are made
of.  Paths:
  /short.tar            HEAD: the shard's size; GET (ranged): 206 with the
                        Content-Length asked for, half the bytes, then closes
  /endless.tar          HEAD: the shard's size; GET: 206, the range asked for
                        and then more, without end (no Content-Length)
  /drip.tar             HEAD: the shard's size; GET: 206, one byte a second
  /short.txt            (with TEXT, a list of names or keys) as /short.tar,
                        of TEXT's bytes
  /endless/manifest.json  200, a body that never ends
anything else         404
Every wait is bounded: the server stops by itself after 120 s.
"""
import http.server
import socketserver
import sys
import threading
import time

PORTFILE, SHARD = sys.argv[1], sys.argv[2]
DATA = open(SHARD, "rb").read()
TEXT = open(sys.argv[3], "rb").read() if len(sys.argv) > 3 else None


class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def head_ok(self, length):
        self.send_response(200)
        self.send_header("Content-Length", str(length))
        self.send_header("Accept-Ranges", "bytes")
        self.end_headers()

    def do_HEAD(self):
        if self.path in ("/short.tar", "/endless.tar", "/drip.tar"):
            return self.head_ok(len(DATA))
        if self.path == "/short.txt" and TEXT is not None:
            return self.head_ok(len(TEXT))
        self.send_response(404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def rng(self, data=DATA):
        r = self.headers.get("Range", "bytes=0-")
        a, _, b = r[6:].partition("-")
        a = int(a)
        b = int(b) if b else len(data) - 1
        return a, b

    def do_GET(self):
        try:
            self.get()
        except (BrokenPipeError, ConnectionResetError):
            pass

    def get(self):
        p = self.path
        if p == "/short.tar" or (p == "/short.txt" and TEXT is not None):
            data = DATA if p == "/short.tar" else TEXT
            a, b = self.rng(data)
            self.send_response(206)
            self.send_header("Content-Range", "bytes %d-%d/%d" % (a, b, len(data)))
            self.send_header("Content-Length", str(b - a + 1))
            self.end_headers()
            self.wfile.write(data[a:a + (b - a + 1) // 2])
            self.close_connection = True
        elif p == "/endless.tar":
            a, b = self.rng()
            self.send_response(206)
            self.send_header("Content-Range", "bytes %d-%d/%d" % (a, b, len(DATA)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
            self.wfile.write(DATA[a:b + 1])  # the range, then more without end
            end = time.time() + 60
            while time.time() < end:
                self.wfile.write(b"\0" * 65536)
        elif p == "/drip.tar":
            a, b = self.rng()
            self.send_response(206)
            self.send_header("Content-Range", "bytes %d-%d/%d" % (a, b, len(DATA)))
            self.send_header("Content-Length", str(b - a + 1))
            self.end_headers()
            self.close_connection = True
            for i in range(60):
                self.wfile.write(DATA[a + i:a + i + 1])
                self.wfile.flush()
                time.sleep(1)
        elif p == "/endless/manifest.json":
            self.send_response(200)
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
            self.wfile.write(b'{"format": "shardkit-manifest", "shards": [')
            end = time.time() + 60
            while time.time() < end:
                self.wfile.write(b" " * 65536)
        else:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()


class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


srv = S(("127.0.0.1", 0), H)
with open(PORTFILE + ".tmp", "w") as f:
    f.write(str(srv.server_address[1]))
import os
os.rename(PORTFILE + ".tmp", PORTFILE)
threading.Timer(120, srv.shutdown).start()
srv.serve_forever()
