#!/usr/bin/env python3
"""s3batch.py - many S3 object transfers in one process, for the tests.

The aws cli costs about a second of Python start-up per call; tests that
put or compare dozens of objects one `aws s3 cp` at a time spent minutes of
CI's time there.  This is the same independent client underneath (botocore,
which the aws cli and moto both use), one process for a whole batch, and
only single-object requests: no listing (moto breaks listings under auth).

  s3batch.py ENDPOINT put DIR s3://BUCKET/PREFIX/    each file of DIR (not
                                                     recursive) to PREFIX+name
  s3batch.py ENDPOINT same DIR s3://BUCKET/PREFIX/   each file of DIR equals
                                                     the object PREFIX+name

Credentials and region come from the environment, as for the aws cli.
Exit 0 when done, 1 naming the first object that failed or differs.
"""
import os
import sys

import boto3
from botocore.config import Config


def split(url):
    if not url.startswith("s3://") or "/" not in url[5:]:
        sys.exit("s3batch: want s3://BUCKET/PREFIX/, got %r" % url)
    bucket, _, prefix = url[5:].partition("/")
    return bucket, prefix


def main():
    if len(sys.argv) != 5 or sys.argv[2] not in ("put", "same"):
        sys.exit(__doc__)
    endpoint, verb, local, url = sys.argv[1:]
    bucket, prefix = split(url)
    s3 = boto3.client("s3", endpoint_url=endpoint,
                      config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 3}))
    for name in sorted(os.listdir(local)):
        path = os.path.join(local, name)
        if not os.path.isfile(path):
            continue
        key = prefix + name
        with open(path, "rb") as f:
            data = f.read()
        if verb == "put":
            s3.put_object(Bucket=bucket, Key=key, Body=data)
            continue
        try:
            got = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
        except s3.exceptions.NoSuchKey:
            sys.exit("s3batch: s3://%s/%s is missing (want %s)" % (bucket, key, path))
        if got != data:
            sys.exit("s3batch: s3://%s/%s differs from %s (%d bytes, want %d)" %
                     (bucket, key, path, len(got), len(data)))


if __name__ == "__main__":
    main()
