#!/usr/bin/env bash
# trust_resume.sh - --resume keeps a shard only when it is proven to be this
# run's (issue "trust, third pass"): shards of another input with the same
# names, keys and sizes but other bytes, or written with another --mtime,
# are packed again by pack (not counted as resumed, the new bytes on disk)
# and refused by shard, naming why; the same run resumed keeps them all.
# A shard damaged since it was written is not sound: written again by both
# (one rule, io/emit.c; shard kept a damaged .tar.zst before, comparing
# its members' sizes alone).
. "$(dirname "$0")/lib.sh"
need python3
tmpdir T
cd "$T" || die cd
"$SK_TOOLS/mkcorpus" c --samples 12 >/dev/null || die mkcorpus
cp -r c c2 # the same names and sizes, other bytes
python3 - <<'PY'
import os
for d, _, fs in os.walk("c2"):
    for f in fs:
        p = os.path.join(d, f)
        b = bytearray(open(p, "rb").read())
        if b:
            b[0] ^= 0xff
            open(p, "wb").write(bytes(b))
PY
resumed() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["shards_resumed"])' "$OUT"; }

step "pack --resume over the shards of another input"
expect_ok "$SK_BIN" pack c -o out/s-%03d.tar --max-count 6 -q
expect_ok "$SK_BIN" pack c2 -o out/s-%03d.tar --max-count 6 --resume --json -q
assert_eq "$(resumed)" 0 "shards resumed over another input's shards"
expect_ok "$SK_BIN" pack c2 -o ref/s-%03d.tar --max-count 6 -q
cmp -s out/s-000.tar ref/s-000.tar || die "the shards still hold the other input's bytes"
expect_ok "$SK_BIN" pack c2 -o out/s-%03d.tar --max-count 6 --resume --json -q
assert_eq "$(resumed)" 2 "shards resumed by the same run"

step "pack --resume over shards written with another --mtime"
expect_ok "$SK_BIN" pack c -o m/s-%03d.tar --max-count 6 --mtime 1000 -q
expect_ok "$SK_BIN" pack c -o m/s-%03d.tar --max-count 6 --resume --json -q
assert_eq "$(resumed)" 0 "shards resumed with another --mtime"

step "shard --resume over the shards of another input: refused, naming why"
expect_ok "$SK_BIN" pack c -o a/s-%03d.tar -q
expect_ok "$SK_BIN" pack c2 -o b/s-%03d.tar -q
expect_ok "$SK_BIN" shard a/s-000.tar -o so/x-%03d.tar --max-count 6 -q
run "$SK_BIN" shard b/s-000.tar -o so/x-%03d.tar --max-count 6 --resume -q
[ "$RC" = 1 ] || die "shard --resume over another input's shards exited $RC"
assert_contains "$ERR" "so/x-000.tar: --resume: sample 0 is not"
expect_ok "$SK_BIN" shard a/s-000.tar -o so/x-%03d.tar --max-count 6 --resume --json -q
python3 -c 'import json,sys; sys.exit(json.load(open(sys.argv[1]))["shards_resumed"] != 2)' "$OUT" \
    || die "shard --resume of the same run did not keep its shards"

step "shard --resume over a damaged .tar.zst shard: written again, as pack does"
expect_ok "$SK_BIN" shard a/s-000.tar -o sz/x-%03d.tar.zst --compress zstd --max-count 6 -q
cp sz/x-001.tar.zst good.zst
python3 - <<'PY'
p = "sz/x-001.tar.zst"
b = bytearray(open(p, "rb").read())
b[len(b) // 2] ^= 0xff
open(p, "wb").write(bytes(b))
PY
expect_ok "$SK_BIN" shard a/s-000.tar -o sz/x-%03d.tar.zst --compress zstd --max-count 6 --resume --json -q
assert_eq "$(resumed)" 1 "shards resumed with one of two damaged"
cmp -s sz/x-001.tar.zst good.zst || die "shard --resume kept a damaged shard"
echo "a resumed shard is proven to be this run's"
