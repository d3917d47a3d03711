#!/usr/bin/env python3
"""faultproxy.py - an HTTP proxy for the S3 tests, Python standard library only.

Sits between shardkit and moto_server, logs every request it receives
("METHOD PATH?QUERY" per line, to --log, written when the request has been
read completely and forwarded), and with --faults injects, by request number:
  every 5th request   answered 503 SlowDown without reaching the server
  every 7th request   the connection reset halfway through the request body
  request 4           forwarded, then the answer stalled for --stall seconds
With --delay S every PUT waits S seconds before its answer (for kill tests).
With --log-key every line ends with " key=ID", the access key id the
request was signed with (the id only: the secret never reaches a proxy).
With --cut-gets N every Nth GET answer with a body over 1 KiB is cut: its
headers promise the whole body, half is sent, then the connection is reset
(a mid-body network failure; the log line ends " cut", and with this option
every GET's line ends with its Range header or "-").
With --etag V every PUT answer names ETag "V" (header and CopyObjectResult),
as an encrypted object's opaque ETag would; with --head-size N every HEAD
answer claims N bytes (a server that lost some of what it was sent).
Prints the port it listens on as its first line of stdout.
"""
import argparse, http.client, http.server, re, socket, struct, sys, threading, time

args = None
lock = threading.Lock()
count = 0
gets = 0


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def _handle(self):
        global count
        with lock:
            count += 1
            n = count
        length = int(self.headers.get("Content-Length") or 0)
        if args.faults and n % 7 == 0 and length > 1024:
            self.rfile.read(length // 2)
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()
            self.close_connection = True
            return
        body = self.rfile.read(length) if length else b""
        if args.faults and n % 5 == 0:
            msg = b"<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>"
            self.send_response(503)
            self.send_header("Content-Length", str(len(msg)))
            self.end_headers()
            # a HEAD answer has no body: bytes written here would be read
            # as the start of the next answer on the kept-alive connection
            if self.command != "HEAD":
                self.wfile.write(msg)
            return
        up = http.client.HTTPConnection("127.0.0.1", args.upstream, timeout=120)
        headers = {k: v for k, v in self.headers.items()}
        up.request(self.command, self.path, body=body if self.command not in ("GET", "HEAD") or body else None,
                   headers=headers)
        r = up.getresponse()
        data = r.read()
        up.close()
        cut = False
        if args.cut_gets and self.command == "GET":
            global gets
            with lock:
                gets += 1
                cut = gets % args.cut_gets == 0 and len(data) > 1024
        with open(args.log, "a") as f:
            if args.cut_gets and self.command == "GET":
                f.write("%s %s %d %s%s\n" % (self.command, self.path, r.status,
                                              self.headers.get("Range", "-"), " cut" if cut else ""))
            elif args.log_key:
                auth = self.headers.get("Authorization", "")
                kid = auth.split("Credential=", 1)[1].split("/", 1)[0] if "Credential=" in auth else "-"
                f.write("%s %s %d key=%s\n" % (self.command, self.path, r.status, kid))
            else:
                f.write("%s %s %d\n" % (self.command, self.path, r.status))
        if args.faults and n == 4:
            time.sleep(args.stall)
            self.close_connection = True
            return
        if args.delay and self.command == "PUT":
            time.sleep(args.delay)
        etag = args.etag if self.command == "PUT" else None
        if etag:
            data = re.sub(rb"<ETag>[^<]*</ETag>", b"<ETag>&quot;" + etag.encode() + b"&quot;</ETag>", data)
        self.send_response(r.status)
        for k, v in r.getheaders():
            if k.lower() not in ("transfer-encoding", "connection", "content-length", "server", "date"):
                self.send_header(k, '"%s"' % etag if etag and k.lower() == "etag" else v)
        # a HEAD answer carries the object's length, not its (empty) body's
        clen = r.getheader("Content-Length") if self.command == "HEAD" else None
        if self.command == "HEAD" and args.head_size is not None:
            clen = str(args.head_size)
        self.send_header("Content-Length", clen or str(len(data)))
        self.end_headers()
        if cut:
            self.wfile.write(data[:len(data) // 2])
            self.wfile.flush()
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()
            self.close_connection = True
            return
        if self.command != "HEAD":
            self.wfile.write(data)

    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _handle


def main():
    global args
    p = argparse.ArgumentParser()
    p.add_argument("--upstream", type=int, required=True)
    p.add_argument("--log", required=True)
    p.add_argument("--faults", action="store_true")
    p.add_argument("--stall", type=float, default=5)
    p.add_argument("--delay", type=float, default=0)
    p.add_argument("--cut-gets", type=int, default=0)
    p.add_argument("--log-key", action="store_true")
    p.add_argument("--etag")
    p.add_argument("--head-size", type=int)
    args = p.parse_args()
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    print(srv.server_address[1], flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()
