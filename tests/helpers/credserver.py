#!/usr/bin/env python3
"""credserver.py - a stand-in for the container credentials endpoint and the
EC2 instance metadata service (IMDSv2), for tests/e2e/s3_creds.sh.
Serves the access key given on the command line:
  GET /creds                     needs "Authorization: <--auth>"
  PUT /latest/api/token          needs the TTL header, answers a session token
  GET /latest/meta-data/iam/security-credentials/[role]  needs that token
Prints its port first; logs each path to --log."""
import argparse, http.server, json

args = None


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
        return json.dumps({"AccessKeyId": args.ak, "SecretAccessKey": args.sk, "Token": None,
                           "Expiration": "2099-01-01T00:00:00Z", "Code": "Success"})

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
args = p.parse_args()
srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
print(srv.server_address[1], flush=True)
srv.serve_forever()
