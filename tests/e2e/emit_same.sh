#!/usr/bin/env bash
# emit_same.sh - the bytes every shard writer emits stay the same: pack
# (plain, cut by --max-size and --max-count, --shuffle, zstd, and with
# --image-size), shard (plain, --num-shards, --shuffle of inputs read
# through their indexes and through libarchive, filters, zstd, images,
# --part) and the streaming sample writer each write a fixed corpus, and
# every file they leave (shards, indexes, manifests) must have the SHA-256
# recorded in emit_same.sha256 -- made by the build before the shard engine
# was split and its inputs moved to the store interface (2026-11-27), so a
# refactoring of the write side that changes one byte fails here.
# The image cases (p4, s6) were recorded again on 2026-11-28: the resample
# does its vertical pass first when shrinking, which rounds differently
# (by at most one level; docs/images.md), on purpose.
# The zstd and JPEG bytes are those of the Debian libzstd and libjpeg-turbo
# this machine has: after an upgrade of either, record the hashes again
# with a build of the commit before a change (not with the change).
# EMIT_SAME_RECORD=FILE writes the hashes to FILE instead of comparing.
set -euo pipefail
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
golden=$SK_ROOT/tests/e2e/emit_same.sha256
# the libraries whose bytes the hashes hold (zstd frames, JPEG encodes):
# on a machine with other versions the hashes say nothing, so skip, saying so
recorded="libjpeg62-turbo=1:2.1.5-2 libzstd1=1.5.4+dfsg2-5"
if [ -z "${EMIT_SAME_RECORD:-}" ]; then
    have=$(dpkg-query -W -f='${Package}=${Version} ' libjpeg62-turbo libzstd1 2>/dev/null || true)
    if [ "${have% }" != "$recorded" ]; then
        echo "skip: the hashes were recorded with $recorded; this machine has ${have:-no dpkg}"
        exit 77
    fi
fi
sk() { timeout 300 "$SK_BIN" "$@"; }
M=--mtime=1700000000

"$SK_TOOLS/mkcorpus" "$t/c" --samples 300 --per-dir 100 --pool 24 >/dev/null
cd "$t"
echo "== pack"
sk pack c -o out/p1/s-%03d.tar --max-size 600K $M -q
sk pack c -o out/p2/s-%03d.tar --max-count 70 --shuffle --seed 3 $M -q
sk pack c -o out/p3/s-%03d.tar.zst --max-count 120 --compress zstd $M -q
sk pack c -o out/p4/s-%03d.tar --max-count 100 --image-size 32 --image-meta $M -j 2 -q
echo "== shard"
sk shard out/p1/manifest.json -o out/s1/s-%02d.tar --max-count 90 $M -q
sk shard out/p1/manifest.json -o out/s2/s-%02d.tar --num-shards 3 $M -q
sk shard out/p1/manifest.json -o out/s3/s-%02d.tar --shuffle --seed 5 --max-size 500K $M -q
sk shard out/p3/manifest.json -o out/s4/s-%02d.tar --shuffle --seed 5 --max-count 80 $M -q
sk shard out/p1/manifest.json -o out/s5/s-%02d.tar.zst --select jpg,cls --rename cls=label \
    --compress zstd --max-count 100 $M -q
sk shard out/p1/manifest.json -o out/s6/s-%02d.tar --image-size 24 --max-count 100 $M -j 2 -q
sk shard out/p1/manifest.json -o 'out/s7/{part}-%02d.tar' --part 1/3 --max-count 50 $M -q
sk shard out/p1/manifest.json -o - $M >out/s8.tar
echo "== the sample writer"
"$SK_TOOLS/sample_write" --max-size 200000 --mtime 1700000000 7 150 out/w1/s-%03d.tar >/dev/null
"$SK_TOOLS/sample_write" --max-count 40 --compress 3 7 150 out/w2/s-%03d.tar.zst >/dev/null

(cd out && find . -type f | LC_ALL=C sort | xargs sha256sum) >"$t/now.sha256"
[ "$(wc -l <"$t/now.sha256")" -gt 40 ] || fail "too few outputs: $(wc -l <"$t/now.sha256")"
if [ -n "${EMIT_SAME_RECORD:-}" ]; then
    cp "$t/now.sha256" "$EMIT_SAME_RECORD"
    echo "recorded $(wc -l <"$t/now.sha256") hashes"
    exit 0
fi
if ! diff "$golden" "$t/now.sha256" >"$t/diff"; then
    cat "$t/diff" >&2
    fail "outputs differ from the recorded bytes (above: < recorded, > now)"
fi
echo "ok: $(wc -l <"$t/now.sha256") files as recorded"
