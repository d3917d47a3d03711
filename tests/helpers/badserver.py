"""badserver.py - an HTTP server on 127.0.0.1 that answers like a broken or
hostile S3 endpoint, for tests/e2e/s3_hostile.sh.  Python's standard
library only.  Usage: badserver.py PORTFILE LOGFILE

It writes the port it listens on to PORTFILE and one line per request to
LOGFILE ("METHOD PATH").  Paths (bucket "bkt", path-style):
  /bkt/endless/manifest.json   200, a body that never ends (stops after
                               the client hangs up)
  /bkt?list-type=2&prefix=loop/  a truncated listing whose next token is
                               always the same
  /bkt?list-type=2&prefix=empty/ empty truncated pages, each with a new
                               token, forever
  /bkt/drip.tar                HEAD: 200, 1 MiB; GET: one byte a second
  /bkt/e501.tar                501 Not Implemented
  /bkt/e503.tar                503 Slow Down (S3's SlowDown)
  /bkt?list-type=2&prefix=lie/   a listing that names keys outside the
                               prefix, with "..", in a "subdirectory",
                               a dot name, and lie/a.tar twice
  /bkt/lie/a.tar               a one-sample tar (HEAD and GET, ranges too)
anything else                  404 NoSuchKey
Every wait is bounded: the server stops by itself after 120 s.
"""
import http.server
import os
import socketserver
import sys
import threading
import time
import urllib.parse

PORTFILE, LOGFILE = sys.argv[1], sys.argv[2]


def one_sample_tar():
    import io
    import tarfile
    b = io.BytesIO()
    with tarfile.open(fileobj=b, mode="w", format=tarfile.USTAR_FORMAT) as t:
        for name, data in (("s/k.cls", b"7"), ("s/k.txt", b"hello")):
            ti = tarfile.TarInfo(name)
            ti.size = len(data)
            t.addfile(ti, io.BytesIO(data))
    return b.getvalue()


LIE_TAR = one_sample_tar()
LIE_KEYS = ["lie/a.tar", "elsewhere/evil.tar", "lie/../evil.tar", "lie/sub/x.tar", "lie/.h.tar",
            "lie/a.tar", "lien/b.tar"]
log_lock = threading.Lock()


def log(line):
    with log_lock, open(LOGFILE, "a") as f:
        f.write(line + "\n")


def xml_error(code, msg):
    return (f'<?xml version="1.0" encoding="UTF-8"?><Error><Code>{code}</Code>'
            f"<Message>{msg}</Message></Error>").encode()


class Handler(http.server.BaseHTTPRequestHandler):
    # TCP_NODELAY: a reply in two writes would wait on a delayed ACK (40 ms)
    disable_nagle_algorithm = True
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def send(self, status, body=b"", headers=()):
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def handle_any(self):
        u = urllib.parse.urlparse(self.path)
        q = urllib.parse.parse_qs(u.query)
        log(f"{self.command} {self.path}")
        if u.path == "/bkt/endless/manifest.json":
            if self.command == "HEAD":
                return self.send(200, headers=[("Content-Type", "application/json")])
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            chunk = b"[" + b" " * 65535
            end = time.time() + 60
            try:
                while time.time() < end:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            except (BrokenPipeError, ConnectionResetError):
                pass
            self.close_connection = True
            return
        if u.path in ("/bkt", "/bkt/") and q.get("list-type") == ["2"] and q.get("prefix") == ["lie/"]:
            items = "".join(f"<Contents><Key>{k}</Key><Size>{len(LIE_TAR)}</Size><ETag>\"e\"</ETag></Contents>"
                            for k in LIE_KEYS)
            body = ('<?xml version="1.0" encoding="UTF-8"?><ListBucketResult><IsTruncated>false'
                    f"</IsTruncated>{items}</ListBucketResult>").encode()
            return self.send(200, body, [("Content-Type", "application/xml")])
        if u.path == "/bkt/lie/a.tar":
            body, status, headers = LIE_TAR, 200, [("ETag", '"e"')]
            rng = self.headers.get("Range", "")
            if rng.startswith("bytes="):
                a, _, z = rng[6:].partition("-")
                a, z = int(a), min(int(z) if z else len(LIE_TAR) - 1, len(LIE_TAR) - 1)
                headers.append(("Content-Range", f"bytes {a}-{z}/{len(LIE_TAR)}"))
                body, status = LIE_TAR[a:z + 1], 206
            if self.command == "HEAD":
                self.send_response(200)
                self.send_header("Content-Length", str(len(LIE_TAR)))
                self.send_header("ETag", '"e"')
                self.end_headers()
                return
            return self.send(status, body, headers)
        if u.path in ("/bkt", "/bkt/") and q.get("list-type") == ["2"] and q.get("prefix") == ["empty/"]:
            n = int(q.get("continuation-token", ["0"])[0]) + 1
            body = ('<?xml version="1.0" encoding="UTF-8"?><ListBucketResult><IsTruncated>true'
                    f"</IsTruncated><NextContinuationToken>{n}</NextContinuationToken>"
                    "</ListBucketResult>").encode()
            return self.send(200, body, [("Content-Type", "application/xml")])
        if u.path in ("/bkt", "/bkt/") and q.get("list-type") == ["2"]:
            body = (b'<?xml version="1.0" encoding="UTF-8"?><ListBucketResult>'
                    b"<IsTruncated>true</IsTruncated><NextContinuationToken>same-token</NextContinuationToken>"
                    b"<Contents><Key>loop/a.jpg</Key><Size>3</Size><ETag>\"x\"</ETag></Contents>"
                    b"</ListBucketResult>")
            return self.send(200, body, [("Content-Type", "application/xml")])
        if u.path == "/bkt/drip.tar":
            size = 1 << 20
            if self.command == "HEAD":
                return self._head(size)
            self.send_response(200)
            self.send_header("Content-Length", str(size))
            self.end_headers()
            end = time.time() + 60
            try:
                while time.time() < end:
                    self.wfile.write(b"\0")
                    self.wfile.flush()
                    time.sleep(1)
            except (BrokenPipeError, ConnectionResetError):
                pass
            self.close_connection = True
            return
        if u.path == "/bkt/e501.tar":
            return self.send(501, xml_error("NotImplemented", "not implemented"))
        if u.path == "/bkt/e503.tar":
            return self.send(503, xml_error("SlowDown", "slow down"))
        return self.send(404, xml_error("NoSuchKey", "no such key"))

    def _head(self, size):
        self.send_response(200)
        self.send_header("Content-Length", str(size))
        self.send_header("ETag", '"d"')
        self.end_headers()

    do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = handle_any


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


srv = Server(("127.0.0.1", 0), Handler)
with open(PORTFILE + ".tmp", "w") as f:
    f.write(str(srv.server_address[1]))
os.rename(PORTFILE + ".tmp", PORTFILE)
threading.Timer(120, srv.shutdown).start()
srv.serve_forever()
