#!/usr/bin/env bash
# urls_pack.sh - pack --from-urls against nginx on 127.0.0.1 serving real
# JPEGs (build/tools/mkcorpus):
#   - a CSV list (caption, extra columns, a duplicate URL, a 404) becomes
#     shards of img2dataset's shape: rows [k*N, (k+1)*N) in shard k, keys
#     shard+row, .jpg as served (or resized), .txt, .json with the columns,
#     sizes and the sha256 of the bytes, a status line for every row;
#   - the output is byte-identical for --concurrency 1 -j 1 and
#     --concurrency 256 -j 2 (downloads end in another order);
#   - a run killed mid-way and rerun with --incremental ends with the
#     same shards as an uninterrupted one, and keeps the finished ones;
#   - --part 0/2 and 1/2 write disjoint shards that together are the
#     whole; --verify-hash fails the row whose hash differs; a list on
#     stdin; shardkit verify accepts the shards.
. "$(dirname "$0")/lib.sh"
# Debian's python3 first: it needs no module beyond the standard library
# here and starts in a fraction of the time of the pyenv shim
PATH=/usr/bin:$PATH
. "$SK_ROOT/tests/helpers/nginx.sh"
skip_unless_nginx
PY=/usr/bin/python3
tmpdir T
"$SK_TOOLS/mkcorpus" "$T/www" --samples 120 >/dev/null || die "mkcorpus failed"
# a client naming itself "slow" (--user-agent-token slow) is served at
# 100 KB/s, so a run can be killed mid-way; the output never depends on it
NGINX_EXTRA='set $lr 0; if ($http_user_agent ~ slow) { set $lr 100k; } limit_rate $lr;' \
    nginx_start "$T/www" || die "nginx did not start"
at_exit nginx_stop
U=$NGINX_URL
(cd "$T/www" && find . -name '*.jpg' | sort | sed 's|^\./||') >"$T/files"

step "a CSV list of 120 images, a duplicate, a 404"
{
    echo 'url,caption,label,sha'
    n=0
    while read -r f; do
        echo "$U/$f,\"photo $n, \"\"quoted\"\"\",L$n,$(sha256sum "$T/www/$f" | cut -c1-64)"
        n=$((n + 1))
    done <"$T/files"
    echo "$U/$(head -1 "$T/files"),duplicate,dup,"
    echo "$U/missing.jpg,missing,none,"
} >"$T/list.csv"
common=(--from-urls "$T/list.csv" --caption-col caption --save-additional-columns label
        --number-sample-per-shard 50 --allow-private-addresses=127.0.0.1/32 -q)
expect_ok "$SK_BIN" pack "${common[@]}" -o "$T/a/%05d.tar" --concurrency 1 -j 1
ls "$T/a" >"$T/ls"
assert_eq "$(tr '\n' ' ' <"$T/ls")" "00000.status.jsonl 00000.tar 00000.tar.idx 00001.status.jsonl 00001.tar 00001.tar.idx 00002.status.jsonl 00002.tar 00002.tar.idx manifest.json stats.json " "outputs"
check_shards "$T/a"
expect_ok "$SK_BIN" verify "$T/a/manifest.json"

step "samples as img2dataset writes them"
$PY - "$T" <<'EOF' || die "samples wrong"
import hashlib, json, sys, tarfile
T = sys.argv[1]
files = open(T + "/files").read().split()
got = {}
for k in range(3):
    with tarfile.open(f"{T}/a/{k:05d}.tar") as t:
        for m in t.getmembers():
            got[m.name] = t.extractfile(m).read()
    status = [json.loads(l) for l in open(f"{T}/a/{k:05d}.status.jsonl", encoding="utf-8")]
    assert len(status) == (50 if k < 2 else 22), (k, len(status))
    for i, s in enumerate(status):
        assert s["key"] == f"{k:05d}{i:02d}", s
for row, f in enumerate(files):
    key = f"{row // 50:05d}{row % 50:02d}"
    src = open(f"{T}/www/{f}", "rb").read()
    assert got[key + ".jpg"] == src, key
    assert got[key + ".txt"] == f'photo {row}, "quoted"'.encode(), got[key + ".txt"]
    j = json.loads(got[key + ".json"])
    assert j["label"] == f"L{row}" and j["status"] == "success" and j["key"] == key, j
    assert j["sha256"] == hashlib.sha256(src).hexdigest(), j
    assert j["width"] == j["original_width"] > 0 and j["height"] == j["original_height"] > 0, j
    assert "sha" not in j, "a column not asked for is not saved"
assert got["0000220.jpg"] == got["0000000.jpg"], "the duplicate URL is its own sample"
assert "0000221.jpg" not in got
last = [json.loads(l) for l in open(f"{T}/a/00002.status.jsonl")][-1]
assert last["status"] == "failed_to_download" and last["http"] == 404, last
s = json.load(open(T + "/a/stats.json"))
assert s["rows"] == 122 and s["success"] == 121 and s["failed_to_download"] == 1, s
# bodies are given back to the downloader once written and refilled: at
# --concurrency 1 -j 1 at most 1 in flight + 8 in the ring (2*1 + 2*1 + 4)
# are alive at once; a spare too small for the next body is swapped for a
# larger one (sizes are powers of two), so a few more are made, never one
# a body (121 before buffers were reused)
assert 1 <= s["body_buffers"] <= 30, s
EOF

step "byte-identical for --concurrency 1 and 256, -j 1 and 2"
expect_ok "$SK_BIN" pack "${common[@]}" -o "$T/b/%05d.tar" --concurrency 256 -j 2
for f in 00000.tar 00001.tar 00002.tar 00000.tar.idx 00002.tar.idx manifest.json; do
    cmp "$T/a/$f" "$T/b/$f" || die "$f differs between --concurrency 1 and 256"
done
expect_ok "$SK_BIN" pack "${common[@]}" -o "$T/r1/%05d.tar" --concurrency 1 -j 1 --image-size 64 --resize-mode center_crop
expect_ok "$SK_BIN" pack "${common[@]}" -o "$T/r2/%05d.tar" --concurrency 200 -j 2 --image-size 64 --resize-mode center_crop
for f in 00000.tar 00001.tar 00002.tar manifest.json; do
    cmp "$T/r1/$f" "$T/r2/$f" || die "resized $f differs between --concurrency 1 and 200"
done
tar xOf "$T/r1/00000.tar" 0000003.json | $PY -c 'import json,sys; d=json.load(sys.stdin); assert d["width"]==d["height"]==64 and d["original_width"]>64, d' ||
    die "--image-size 64: the .json gives the new and original sizes"

step "a killed run, rerun with --incremental, equals an uninterrupted one"
expect_ok "$SK_BIN" pack "${common[@]}" -o "$T/full/%05d.tar" --concurrency 8
"$SK_BIN" pack "${common[@]}" -o "$T/k/%05d.tar" --concurrency 2 -j 1 --user-agent-token slow &
pid=$!
for _ in $(seq 600); do [ -e "$T/k/00000.status.jsonl" ] && break; sleep 0.05; done
kill -9 "$pid" 2>/dev/null || die "the run ended before it could be killed"
wait "$pid" 2>/dev/null || :
[ -e "$T/k/00000.status.jsonl" ] && [ ! -e "$T/k/manifest.json" ] || die "the kill came at the wrong time"
[ ! -e "$T/k/00002.tar" ] || die "the kill came too late"
expect_ok "$SK_BIN" pack "${common[@]}" -o "$T/k/%05d.tar" --concurrency 8 --incremental --json
assert_contains "$OUT" '"shards_kept": 1'
for f in 00000.tar 00001.tar 00002.tar 00000.tar.idx 00001.tar.idx 00002.tar.idx manifest.json; do
    cmp "$T/full/$f" "$T/k/$f" || die "$f differs after a killed run and --incremental"
done
assert_no_tmp "$T/k"

step "--incremental with another --number-sample-per-shard is refused, naming both"
# the kept shards hold 50 rows each: with 40 or 60 a shard would be kept
# whose rows are not the ones its number now stands for
incr() { # LIST OUT N: --incremental with N rows a shard
    run "$SK_BIN" pack --from-urls "$1" --caption-col caption --save-additional-columns label \
        --allow-private-addresses=127.0.0.1/32 -q -o "$2/%05d.tar" --incremental --json \
        --number-sample-per-shard "$3"
}
for n in 40 60; do
    incr "$T/list.csv" "$T/k" $n
    assert_eq "$RC" 2 "exit status with --number-sample-per-shard $n"
    assert_contains "$ERR" "holds 50 rows"
    assert_contains "$ERR" "--number-sample-per-shard $n"
    assert_contains "$ERR" "00000.status.jsonl"
done
# a list shorter than one shard: the kept shard's keys say its row width
# (per-shard 50: 2 digits; 1000: 3), so the count of rows alone is not enough
head -11 "$T/list.csv" >"$T/short.csv"
incr "$T/short.csv" "$T/s" 50
assert_eq "$RC" 0 "a first run of the short list"
incr "$T/short.csv" "$T/s" 1000
assert_eq "$RC" 2 "exit status with --number-sample-per-shard 1000"
assert_contains "$ERR" "written with another --number-sample-per-shard"
incr "$T/short.csv" "$T/s" 60
assert_eq "$RC" 0 "the short list's shard is the same with 60 rows a shard"
assert_contains "$OUT" '"shards_kept": 1'
for f in 00000.tar 00001.tar 00002.tar manifest.json; do
    cmp "$T/full/$f" "$T/k/$f" || die "$f changed by a refused --incremental run"
done

step "status files: the same lines whatever the concurrency and a kill, but for ms"
# ms is each row's download time, a measurement: everything else is the same
for d in b k; do
    for k in 0 1 2; do
        cmp <(sed 's/,"ms":[0-9]*}$/}/' "$T/a/0000$k.status.jsonl") \
            <(sed 's/,"ms":[0-9]*}$/}/' "$T/$d/0000$k.status.jsonl") ||
            die "$d/0000$k.status.jsonl differs from a run with --concurrency 1 beyond ms"
    done
done

step "--part 0/2 and 1/2: disjoint shards, together the whole"
for p in 0 1; do
    expect_ok "$SK_BIN" pack "${common[@]}" -o "$T/p/{part}-%05d.tar" --part $p/2 --concurrency 8
done
ls "$T/p" | grep '\.tar$' | tr '\n' ' ' >"$T/pl"
assert_eq "$(cat "$T/pl")" "0-00000.tar 0-00002.tar 1-00001.tar " "shards of each part"
for k in 0 1 2; do
    cmp "$T/p/$((k % 2))-0000$k.tar" "$T/full/0000$k.tar" || die "part shard $k differs from the whole run's"
done
[ -e "$T/p/stats-0.json" ] && [ -e "$T/p/manifest-1.json" ] || die "each part's stats and manifest"

step "index merge joins the parts' manifests and their stats"
expect_ok "$SK_BIN" index merge "$T/p/manifest-1.json" "$T/p/manifest-0.json" -o "$T/p/manifest.json"
$PY - "$T/p/stats.json" "$T/full/stats.json" <<'EOF' || die "merged stats wrong: $(cat "$T/p/stats.json")"
import json, sys
m, whole = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
for k in ("rows", "success", "failed_to_download", "failed_to_resize", "errors", "bytes", "shards",
          "output_bytes"):
    assert m[k] == whole[k], (k, m[k], whole[k])
assert m["rows"] == 122 and m["errors"] == {"HTTP 404": 1} and m["parts"] == 2, m
assert m["images_per_second"] > 0 and m["seconds"] > 0, m
EOF
# the parts' manifests say which part each is: one left out is named
expect_fail 1 "part 1/2 is missing" "$SK_BIN" index merge "$T/p/manifest-0.json" -o "$T/p/manifest2.json"
mv "$T/p/stats-1.json" "$T/p/stats-1.moved"
expect_fail 1 "stats-1.json: missing, while" "$SK_BIN" index merge "$T/p/manifest-0.json" \
    "$T/p/manifest-1.json" -o "$T/p/manifest2.json"
echo '{"rows": "many"}' >"$T/p/stats-1.json"
expect_fail 1 'stats-1.json: "rows" is not a count' "$SK_BIN" index merge "$T/p/manifest-0.json" \
    "$T/p/manifest-1.json" -o "$T/p/manifest2.json"
[ ! -e "$T/p/manifest2.json" ] || die "a merge that failed wrote its manifest"

step "--verify-hash and a list on stdin"
head -4 "$T/list.csv" | sed '4s/,[0-9a-f]*$/,0000/' | "$SK_BIN" pack --from-urls - --input-format csv \
    --verify-hash sha --allow-private-addresses -o "$T/v/%05d.tar" -q || die "stdin list failed"
grep -c '"success"' "$T/v/00000.status.jsonl" | grep -qx 2 || die "two rows match their hash"
grep -q '"hash mismatch' "$T/v/00000.status.jsonl" || die "the third row's hash differs"
echo "urls_pack: ok"
