#!/usr/bin/env bash
# cache_replaced.sh - the reader's disk cache never serves a dataset that
# was replaced: after the S3 dataset is rewritten under the same names and
# sizes (new bytes, new manifest CRCs), `cat --cache-dir` returns the new
# bytes, read through the manifest (the copy is keyed by its CRC32C) and
# through the shard URL alone (keyed by the object's ETag at open).
set -euo pipefail
. "$SK_ROOT/tests/helpers/moto.sh"
skip_unless_moto
t=$(mktemp -d)
trap 'moto_stop; rm -rf "$t"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
s3_serve auth bkt

corpus() { # $1 dir, $2 fill byte: 40 samples whose sizes do not depend on $2
    python3 - "$1" "$2" <<'PY'
import os, sys
d, b = sys.argv[1], sys.argv[2].encode()
os.makedirs(d)
for i in range(40):
    open(os.path.join(d, "s%03d.txt" % i), "wb").write(b * (100 + i))
PY
}
corpus "$t/a" A
corpus "$t/b" B
"$SK_BIN" pack "$t/a" -o "$t/da/shard-%03d.tar" --max-count 20 >/dev/null 2>&1
"$SK_BIN" pack "$t/b" -o "$t/db/shard-%03d.tar" --max-count 20 >/dev/null 2>&1
cmp -s "$t/da/shard-000.tar" "$t/db/shard-000.tar" && fail "the two datasets are the same bytes"
[ "$(stat -c %s "$t/da/shard-000.tar")" = "$(stat -c %s "$t/db/shard-000.tar")" ] || fail "sizes differ"
"$SK_BIN" cat "$t/db/manifest.json" >"$t/b.tar"
sk() { "$SK_BIN" cat --endpoint-url "$MOTO_URL" --cache-dir "$t/cache" "$@"; }

echo "== through the manifest: a new CRC32C is a new copy"
aws s3 cp --recursive --quiet "$t/da" s3://bkt/ds/
sk s3://bkt/ds/manifest.json >"$t/first.tar"
ls "$t/cache"/*.skc >/dev/null 2>&1 || fail "nothing was cached"
aws s3 cp --recursive --quiet "$t/db" s3://bkt/ds/
sk s3://bkt/ds/manifest.json >"$t/second.tar"
cmp -s "$t/second.tar" "$t/b.tar" || fail "cat --cache-dir served the replaced dataset's old bytes"

echo "== a shard URL alone: a new ETag is a new copy"
rm -rf "$t/cache"
aws s3 cp --quiet "$t/da/shard-000.tar" s3://bkt/one/shard-000.tar
sk s3://bkt/one/shard-000.tar | cmp -s - "$t/da/shard-000.tar" || fail "first read differs"
aws s3 cp --quiet "$t/db/shard-000.tar" s3://bkt/one/shard-000.tar
sk s3://bkt/one/shard-000.tar | cmp -s - "$t/db/shard-000.tar" ||
    fail "cat --cache-dir served a replaced object's old bytes"

echo "== a copy whose bytes miss the manifest's CRC32C is not kept"
rm -rf "$t/cache"
# the manifest of dataset B over the objects of dataset A
aws s3 cp --recursive --quiet "$t/da" s3://bkt/mix/
aws s3 cp --quiet "$t/db/manifest.json" s3://bkt/mix/manifest.json
sk s3://bkt/mix/manifest.json >/dev/null 2>&1 || true
if ls "$t/cache"/*.skc >/dev/null 2>&1; then fail "a copy that does not match its CRC32C was kept"; fi
echo ok
