#!/usr/bin/env python3
"""credserver.py - a stand-in for the container credentials endpoint and the
EC2 instance metadata service (IMDSv2), for tests/e2e/s3_creds.sh.
Serves the access key given on the command line:
  GET /creds                     needs "Authorization: <--auth>"
  PUT /latest/api/token          needs the TTL header, answers a session token
  GET /latest/meta-data/iam/security-credentials/[role]  needs that token
Prints its port first; logs each path to --log.
With --ak2/--sk2 (temporary credentials that rotate): the first answer
carries --ak/--sk expiring --ttl seconds from now, every later one
--ak2/--sk2 expiring in 2099; each answer logs "creds N" (N = 1, 2, ...,
never a key)."""
import argparse, datetime, http.server, json, threading

args = None
served = 0
lock = threading.Lock()


class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def reply(self, code, body):
        b = body.encode()
        self.send_response(code)
        self.send_header("Content-Length", str(len(b)))
        self.end_headers()
        self.wfile.write(b)

    def creds(self):
        global served
        ak, sk, exp = args.ak, args.sk, "2099-01-01T00:00:00Z"
        if args.ak2:
            with lock:
                served += 1
                n = served
            with open(args.log, "a") as f:
                f.write("creds %d\n" % n)
            if n == 1:
                t = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=args.ttl)
                exp = t.strftime("%Y-%m-%dT%H:%M:%S.123Z")  # fractions, as some endpoints send
            else:
                ak, sk = args.ak2, args.sk2
        return json.dumps({"AccessKeyId": ak, "SecretAccessKey": sk, "Token": None,
                           "Expiration": exp, "Code": "Success"})

    def do_PUT(self):
        with open(args.log, "a") as f:
            f.write("PUT %s\n" % self.path)
        if self.path == "/latest/api/token" and self.headers.get("X-aws-ec2-metadata-token-ttl-seconds"):
            return self.reply(200, "imds-session-token")
        self.reply(400, "")

    def do_GET(self):
        with open(args.log, "a") as f:
            f.write("GET %s\n" % self.path)
        if self.path == "/creds":
            if self.headers.get("Authorization") != args.auth:
                return self.reply(401, "")
            return self.reply(200, self.creds())
        if self.path.startswith("/latest/meta-data/iam/security-credentials/"):
            if self.headers.get("X-aws-ec2-metadata-token") != "imds-session-token":
                return self.reply(401, "")
            role = self.path.rsplit("/", 1)[1]
            return self.reply(200, self.creds() if role == "sk-role" else "sk-role\n")
        self.reply(404, "")


p = argparse.ArgumentParser()
for a in ("--ak", "--sk", "--auth", "--log"):
    p.add_argument(a, required=True)
p.add_argument("--ak2")
p.add_argument("--sk2")
p.add_argument("--ttl", type=float, default=3600)
args = p.parse_args()
srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
print(srv.server_address[1], flush=True)
srv.serve_forever()
