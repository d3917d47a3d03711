"""badimages.py - a web server on 127.0.0.1 that serves images the way a
broken or hostile site might, for tests/e2e/urls_hostile.sh (pack
--from-urls).  Python's standard library only.
Usage: badimages.py PORTFILE JPEG

It writes its port to PORTFILE.  JPEG is a real JPEG the answers are made
of.  Paths (a query string is ignored, so one path can appear as several
rows):
  /ok.jpg          200, the JPEG
  /404, /500       that status, a short HTML body
  /429             429 with Retry-After: 1 the first time each query asks,
                   then the JPEG
  /503             503 with Retry-After: 1, always
  /503-long        503 with Retry-After: 3600 (longer than a client waits)
  /drip.jpg        200, Content-Length of the JPEG, one byte a second
  /endless.jpg     200, no Content-Length, bytes without end
  /longer.jpg      200, Content-Length of the JPEG, then the JPEG and 64 KiB
                   more
  /html.jpg        200, Content-Type image/jpeg, an HTML page
  /bomb.jpg        200, the JPEG with its frame header saying 60000x60000
  /loop            302 to itself
  /to-metadata     302 to http://169.254.169.254/latest/meta-data/
  /to-private      302 to http://10.11.12.13/x.jpg
  /robots.jpg      200, the JPEG, X-Robots-Tag: noai
  /robots-other.jpg  200, the JPEG, X-Robots-Tag: otherbot: noai, noindex
  /robots-ours.jpg   200, the JPEG, X-Robots-Tag: MyBot: noimageai
  /hits            the number of requests so far for each path, as JSON
anything else      404
Every wait is bounded: the server stops by itself after 300 s.
"""
import http.server
import json
import socketserver
import sys
import threading
import time

PORTFILE, JPEG = sys.argv[1], sys.argv[2]
DATA = open(JPEG, "rb").read()


def bomb(d):
    """The JPEG with the height and width of its SOFn set to 60000."""
    b = bytearray(d)
    i = 2
    while i + 9 < len(b):
        if b[i] != 0xFF:
            break
        m, n = b[i + 1], (b[i + 2] << 8) | b[i + 3]
        if m in (0xC0, 0xC1, 0xC2):
            b[i + 5:i + 9] = bytes([0xEA, 0x60, 0xEA, 0x60])
            return bytes(b)
        i += 2 + n
    raise SystemExit("no SOF marker in " + JPEG)


BOMB = bomb(DATA)
HITS = {}
SEEN = set()
LOCK = threading.Lock()


class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def send(self, code, body, ctype="image/jpeg", extra=()):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in extra:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        path, _, query = self.path.partition("?")
        with LOCK:
            HITS[path] = HITS.get(path, 0) + 1
        page = b"<html><body>not an image</body></html>\n"
        if path == "/ok.jpg":
            return self.send(200, DATA)
        if path in ("/404", "/500"):
            return self.send(int(path[1:]), page, "text/html")
        if path == "/429":
            with LOCK:
                first = self.path not in SEEN
                SEEN.add(self.path)
            if first:
                return self.send(429, page, "text/html", [("Retry-After", "1")])
            return self.send(200, DATA)
        if path == "/503":
            return self.send(503, page, "text/html", [("Retry-After", "1")])
        if path == "/503-long":
            return self.send(503, page, "text/html", [("Retry-After", "3600")])
        if path == "/drip.jpg":
            self.send_response(200)
            self.send_header("Content-Type", "image/jpeg")
            self.send_header("Content-Length", str(len(DATA)))
            self.end_headers()
            try:
                for i in range(min(len(DATA), 60)):
                    self.wfile.write(DATA[i:i + 1])
                    self.wfile.flush()
                    time.sleep(1)
            except OSError:
                pass
            return
        if path == "/endless.jpg":
            self.send_response(200)
            self.send_header("Content-Type", "image/jpeg")
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
            chunk = DATA + b"\0" * 65536
            t0 = time.time()
            try:
                while time.time() - t0 < 60:
                    self.wfile.write(chunk)
            except OSError:
                pass
            return
        if path == "/longer.jpg":
            self.send_response(200)
            self.send_header("Content-Type", "image/jpeg")
            self.send_header("Content-Length", str(len(DATA)))
            self.end_headers()
            self.close_connection = True
            try:
                self.wfile.write(DATA + b"\xff" * 65536)
            except OSError:
                pass
            return
        if path == "/html.jpg":
            return self.send(200, page)
        if path == "/bomb.jpg":
            return self.send(200, BOMB)
        if path in ("/loop", "/to-metadata", "/to-private"):
            to = {"/loop": "/loop", "/to-metadata": "http://169.254.169.254/latest/meta-data/",
                  "/to-private": "http://10.11.12.13/x.jpg"}[path]
            return self.send(302, b"", "text/plain", [("Location", to)])
        if path == "/robots.jpg":
            return self.send(200, DATA, extra=[("X-Robots-Tag", "noai")])
        if path == "/robots-other.jpg":
            return self.send(200, DATA, extra=[("X-Robots-Tag", "otherbot: noai, noindex")])
        if path == "/robots-ours.jpg":
            return self.send(200, DATA, extra=[("X-Robots-Tag", "MyBot: noimageai")])
        if path == "/hits":
            with LOCK:
                body = json.dumps(HITS).encode()
            return self.send(200, body, "application/json")
        return self.send(404, page, "text/html")


class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def handle_error(self, request, client_address):
        pass  # a client that hangs up on a drip or an endless body is expected


srv = S(("127.0.0.1", 0), H)
with open(PORTFILE + ".tmp", "w") as f:
    f.write(str(srv.server_address[1]))
import os  # noqa: E402

os.rename(PORTFILE + ".tmp", PORTFILE)
threading.Timer(300, srv.shutdown).start()
srv.serve_forever()
