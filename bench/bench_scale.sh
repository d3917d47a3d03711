#!/usr/bin/env bash
# bench_scale.sh - the scaling table (issue "speed at scale", Proof): how
# each cost of shardkit grows with the number of samples, every operation
# against its anchor in the same run, interleaved (bench/lib.sh interleave),
# medians.  For each N in BENCH_SCALE (samples of the benchmark corpus, 3
# files each):
#   pack        shardkit pack --max-size 512M     vs  tar cf (one tar)
#   index       shardkit index (reads all data)   vs  tar tf of every shard
#   index-fast  shardkit index --fast             vs  tar tf of every shard
#   cat         shardkit cat manifest | wc -c     vs  cat shards | wc -c
#   get         shardkit get MANIFEST KEY -e jpg  vs  cat CORPUS/KEY.jpg
#               (per call: LOOP calls in a row / LOOP; a key near the end)
#   shard       shardkit shard --max-size 512M    vs  cp of the shards
#   verify      shardkit verify (headers, index)  vs  tar tf of every shard
#   upload      shardkit upload CORPUS s3://...   vs  aws s3 sync CORPUS s3://...
#               (3N small objects, a fresh bucket per run; only while
#               N <= BENCH_UPLOAD_MAX, on a RADOS gateway when installed,
#               else moto_server)
# The shards every later operation reads are the last shardkit pack run's.
# Prints one Markdown table: per row shardkit's and the anchor's wall and CPU
# seconds, their ratio (shardkit / anchor: below 1, shardkit is faster), the
# cost per sample (per call for get), the growth exponent against the
# previous N (log(t2/t1) / log(N2/N1) of shardkit's time: 1.0 = linear,
# 0 = constant) and peak RSS of both.
#
# Env: BENCH_SCALE (default "1000 10000 100000"; add 1000000 where the disk
# holds about 1.2x the corpus's data free (2.3x for the reshard rows, which
# are skipped otherwise): a 1M corpus is 3M files, 15 GB of data, 24 GB on
# disk), BENCH_CORPUS_1K, _10K, _100K, _1M (or BENCH_CORPUS_<N>):
# an existing corpus of that size instead of $BENCH_DIR/corpus-N,
# BENCH_RUNS (rounds, default 3), BENCH_RUNS_SMALL (rounds at N <= 10k,
# default 7: runs of a second or less, noisy on a shared machine),
# BENCH_RUNS_LARGE (rounds at N >= 1M, default 1), BENCH_DISK_MARGIN (bytes
# of disk to leave free for other jobs, default 10 GB), BENCH_OPS (subset of the operations above), BENCH_UPLOAD_MAX
# (default 10000 samples = 30,000 objects), BENCH_UPLOAD_RUNS (rounds of the
# upload rows, default BENCH_RUNS), LOOP (get calls, default 100),
# SK_S3_SERVER (rgw|moto), BENCH_DIR, SK_BIN.
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# GNU time's figures to the microsecond (at 1,000 samples a run is 0.01 s)
[ -x "$SK_TOOLS/bench_time" ] || bench_die "no $SK_TOOLS/bench_time (run make)"
# shellcheck disable=SC2034  # both read by measure (bench/lib.sh)
GNU_TIME=$SK_TOOLS/bench_time BENCH_CPU_FMT=%.6f

scale=${BENCH_SCALE:-1000 10000 100000}
ops=${BENCH_OPS:-pack index index-fast cat get shard verify upload}
upload_max=${BENCH_UPLOAD_MAX:-10000}
margin=${BENCH_DISK_MARGIN:-10000000000}   # bytes left free for others
LOOP=${LOOP:-100}
started=$(date +%s)
W=$BENCH_DIR/scale
mkdir -p "$W"

has_op() { [[ " $ops " == *" $1 "* ]]; }
# label N: 1000 -> 1k, 1000000 -> 1M
label() {
    awk -v n="$1" 'BEGIN { if (n >= 1e6 && n % 1e6 == 0) printf "%dM", n / 1e6;
                           else if (n >= 1e3 && n % 1e3 == 0) printf "%dk", n / 1e3; else print n }'
}
free_bytes() { df -B1 --output=avail "$1" | tail -1; }

# An S3 server for the upload rows, started once (about 10 s for radosgw).
s3_up=
s3_start() {
    [ -n "$s3_up" ] && return 0
    command -v aws >/dev/null || return 1
    if [ -z "${SK_S3_SERVER:-}" ]; then
        if have_rgw_quiet; then export SK_S3_SERVER=rgw; else export SK_S3_SERVER=moto; fi
    fi
    # shellcheck source=tests/helpers/moto.sh
    . "$SK_ROOT/tests/helpers/moto.sh"
    trap 'moto_stop' EXIT
    moto_start >&2 || return 1
    AWS=$(command -v aws)
    s3_up=1
}
have_rgw_quiet() { for b in ceph-mon ceph-osd radosgw radosgw-admin; do command -v $b >/dev/null || return 1; done; }

# The cases of one N, run by interleave; globals: n, corpus, S (shards),
# key, LOOP.  Each is one measure (fresh @OUT@, sync, GNU time).
bucket_no=0
# clear_out: the outputs of earlier runs at this N (at 1M, a pack's and a
# tar's outputs of 24 GB each must not be on the disk at once)
clear_out() { rm -rf "$BENCH_DIR"/out/*-"$n".[0-9]*; }
run_case() {
    case $1 in
    pack | tar-cf | shard | cp) clear_out ;;
    esac
    case $1 in
    pack) measure "pack-$n" "$SK_BIN" pack "$corpus" -o @OUT@/train-%06d.tar --max-size 512M -q ;;
    tar-cf) measure "tarcf-$n" tar cf @OUT@/corpus.tar -C "$corpus" . ;;
    index) rm -f "$S"/*.idx "$S"/manifest.json*; measure "index-$n" "$SK_BIN" index -q "$S"/*.tar ;;
    index-fast) rm -f "$S"/*.idx "$S"/manifest.json*; measure "indexfast-$n" "$SK_BIN" index --fast -q "$S"/*.tar ;;
    tar-tf) measure "tartf-$n" sh -c 'for f; do tar tf "$f"; done >/dev/null' sh "$S"/*.tar ;;
    cat) measure "cat-$n" sh -c '"$1" cat "$2" | wc -c >/dev/null' sh "$SK_BIN" "$S/manifest.json" ;;
    cat-raw) measure "catraw-$n" sh -c 'cat "$@" | wc -c >/dev/null' sh "$S"/*.tar ;;
    get) measure "get-$n" sh -c 'i=0; while [ $i -lt "$1" ]; do "$2" get "$3" "$4" -e jpg >/dev/null || exit 1; i=$((i+1)); done' \
            sh "$LOOP" "$SK_BIN" "$S/manifest.json" "$key" ;;
    get-file) measure "getfile-$n" sh -c 'i=0; while [ $i -lt "$1" ]; do cat "$2" >/dev/null || exit 1; i=$((i+1)); done' \
            sh "$LOOP" "$corpus/$key.jpg" ;;
    shard) measure "shard-$n" "$SK_BIN" shard "$S/manifest.json" -o @OUT@/s-%06d.tar --max-size 512M -q ;;
    cp) measure "cp-$n" cp "$S"/*.tar @OUT@/ ;;
    verify) measure "verify-$n" "$SK_BIN" verify -q "$S/manifest.json" ;;
    upload | sync)
        bucket_no=$((bucket_no + 1))
        local b=scale$n-$1-$bucket_no
        "$AWS" --endpoint-url "$MOTO_URL" s3 mb "s3://$b" >/dev/null
        if [ "$1" = upload ]; then
            measure "upload-$n" "$SK_BIN" upload --endpoint-url "$MOTO_URL" "$corpus" "s3://$b/c/"
        else
            measure "sync-$n" "$AWS" --endpoint-url "$MOTO_URL" s3 sync --quiet "$corpus" "s3://$b/c/"
        fi ;;
    *) bench_die "unknown case $1" ;;
    esac
}

# One table row per (operation, N): appended to $W/rows as
# tab-separated op, anchor, n, wall, cpu, rss, anchor's wall, cpu, rss, unit
# (sample or call).
rows=$W/rows.$$
: >"$rows"
add_row() { # op anchor-label case anchor-case unit
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$n" "${I_WALL[$3]}" "${I_CPU[$3]}" "${I_RSS[$3]}" \
        "${I_WALL[$4]}" "${I_CPU[$4]}" "${I_RSS[$4]}" "$5" >>"$rows"
    echo "  $1 (N=$n): shardkit ${I_WALLS[$3]} s, anchor ${I_WALLS[$4]} s; row: $(tail -1 "$rows")" >&2
}

status=0
rounds_used=
declare -A cache=()
for n in $scale; do
    lab=$(label "$n")
    var=BENCH_CORPUS_${lab^^}
    alt=BENCH_CORPUS_$n
    corpus=${!var:-${!alt:-}}
    if [ -n "$corpus" ]; then
        [ -d "$corpus" ] || bench_die "$var: no directory $corpus"
    else
        corpus=$BENCH_DIR/corpus-$n
        make_corpus "$corpus" "$n"
    fi
    corpus_stats "$corpus"
    [ "$C_FILES" -eq $((3 * n)) ] || echo "bench: $corpus holds $C_FILES files, not $((3 * n))" >&2
    rounds=$BENCH_RUNS
    [ "$n" -le 10000 ] && rounds=${BENCH_RUNS_SMALL:-$((BENCH_RUNS > 7 ? BENCH_RUNS : 7))}
    [ "$n" -ge 1000000 ] && rounds=${BENCH_RUNS_LARGE:-1}
    # Warm the page cache only when the corpus fits in it with room to spare;
    # else every run reads from the disk (said in the table's footer).
    avail=$(awk '/MemAvailable/ {printf "%.0f", $2 * 1024}' /proc/meminfo)
    if [ "$C_BYTES" -lt $((avail / 2)) ]; then warm_cache "$corpus"; cache[$n]=warm; else cache[$n]=cold; fi
    rounds_used+="$lab $rounds, "
    echo "scale $lab: $C_FILES files, $((C_BYTES / 1000000)) MB, ${cache[$n]} cache, $rounds round(s), load $(cut -d' ' -f1-3 /proc/loadavg)" >&2

    S=$W/shards-$n
    rm -rf "$S"
    # one output of the corpus's size at a time while packing (tar's or
    # pack's; tar adds about 15%), and BENCH_DISK_MARGIN left for others
    [ "$(free_bytes "$W")" -gt $((C_BYTES * 6 / 5 + margin)) ] ||
        bench_die "scale $lab: $(((C_BYTES * 6 / 5 + margin) / 1000000000)) GB free needed in $W"
    if has_op pack; then
        # tar first in each round, so the round's last output is shardkit's,
        # kept as the shard set of the later operations
        interleave "$rounds" tar-cf pack || { status=1; continue; }
        add_row pack "tar cf" pack tar-cf sample
        mv "$M_OUT" "$S"
    else
        "$SK_BIN" pack "$corpus" -o "$S/train-%06d.tar" --max-size 512M -q || bench_die "pack of $corpus failed"
    fi
    clear_out
    [ "${cache[$n]}" = warm ] && warm_cache "$S"
    mkdir -p "$W/keep"
    cp "$S"/*.idx "$S"/manifest.json* "$W/keep/"
    if has_op index || has_op index-fast; then
        cases=(tar-tf)
        has_op index-fast && cases+=(index-fast)
        has_op index && cases+=(index)
        interleave "$rounds" "${cases[@]}" || status=1
        has_op index && add_row index "tar tf" index tar-tf sample
        has_op index-fast && add_row "index --fast" "tar tf" index-fast tar-tf sample
        # back to pack's own indexes and manifest (--fast leaves CRCs unknown)
        rm -f "$S"/*.idx "$S"/manifest.json*
        cp "$W/keep"/* "$S/"
    fi
    rm -rf "$W/keep"
    if has_op cat; then interleave "$rounds" cat-raw cat && add_row cat "cat shards \\| wc -c" cat cat-raw sample || status=1; fi
    if has_op get; then
        # a key near the end: the worst case of a shard-by-shard search
        key=$("$SK_BIN" get "$S/manifest.json" "#$((n - n / 200 - 1))" --tar | tar tf - | sed -n '1s/\.[^/]*$//p')
        [ -f "$corpus/$key.jpg" ] || bench_die "get: no $corpus/$key.jpg for key '$key'"
        interleave "$rounds" get-file get && add_row "get KEY -e jpg" "cat FILE" get get-file call || status=1
    fi
    if has_op shard; then
        need=$(du -sb "$S" | cut -f1)
        if [ "$(free_bytes "$W")" -gt $((need * 11 / 10 + margin)) ]; then
            interleave "$rounds" cp shard && add_row "shard (reshard)" "cp shards" shard cp sample || status=1
            clear_out
        else
            echo "  shard (N=$n): skipped, $((need / 1000000000)) GB of output does not fit in $(($(free_bytes "$W") / 1000000000)) GB free" >&2
        fi
    fi
    if has_op verify; then interleave "$rounds" tar-tf verify && add_row verify "tar tf" verify tar-tf sample || status=1; fi
    if has_op upload && [ "$n" -le "$upload_max" ]; then
        if s3_start; then
            interleave "${BENCH_UPLOAD_RUNS:-$rounds}" sync upload && add_row "upload (3N objects)" "aws s3 sync" upload sync sample || status=1
        else
            echo "  upload: no S3 server or aws cli, skipped" >&2
        fi
    fi
    rm -rf "$S"
    clear_out
done

# The table, rows grouped by operation in order of N, with the growth
# exponent of shardkit's wall and CPU against the previous N of that row.
echo
echo "### Scaling: shardkit against its anchor, $(date -u +%Y-%m-%d), samples of 3 files (~15 KB)"
echo
echo "| operation | anchor | samples | shardkit wall s / CPU s | anchor wall s / CPU s | ratio wall / CPU | shardkit µs per sample, wall / CPU | growth wall / CPU | peak RSS MiB shardkit / anchor |"
echo "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
awk -F'\t' '
    { key = $1 SUBSEP $2; if (!(key in seen)) { seen[key] = 1; order[++k] = key }
      r[key, ++cnt[key]] = $0 }
    function per(t, n, unit) { return unit == "call" ? t * 1e6 / loop : t * 1e6 / n }
    function grow(t1, t2, n1, n2) {
        if (t1 <= 0 || t2 <= 0) return "-"   # under GNU time resolution
        return sprintf("%.2f", log(t2 / t1) / log(n2 / n1))
    }
    function ratio(a, b) { return b > 0 ? sprintf("%.2f", a / b) : "n/a" }
    function sig(x) { return x >= 100 ? sprintf("%.0f", x) : sprintf("%.3g", x) }
    END {
        for (i = 1; i <= k; i++) {
            key = order[i]
            for (j = 1; j <= cnt[key]; j++) {
                split(r[key, j], f, "\t")
                g = "-"
                if (j > 1) g = grow(pw, f[4], pn, f[3]) " / " grow(pc, f[5], pn, f[3])
                u = f[10] == "call" ? " (per call)" : ""
                printf "| %s%s | %s | %d | %s / %s | %s / %s | %s / %s | %s / %s | %s | %.0f / %.0f |\n",
                    f[1], u, f[2], f[3], sig(f[4]), sig(f[5]), sig(f[7]), sig(f[8]), ratio(f[4], f[7]),
                    ratio(f[5], f[8]), sig(per(f[4], f[3], f[10])), sig(per(f[5], f[3], f[10])), g, f[6], f[9]
                pw = f[4]; pc = f[5]; pn = f[3]
            }
        }
    }' loop="$LOOP" "$rows"
rm -f "$rows"
echo
cached=
for n in $scale; do cached+="$(label "$n") ${cache[$n]:-?}, "; done
echo "ratio: shardkit / anchor (below 1: shardkit faster or cheaper); growth: log(t2/t1) / log(N2/N1) against" \
     "the row above (1.00 linear, 0 constant); get: $LOOP calls in a row, per call; medians of" \
     "interleaved rounds (${rounds_used%, }); cache: ${cached%, }."
[[ " $ops " == *" upload "* ]] && echo "upload: to ${SK_S3_SERVER:-moto} on 127.0.0.1, up to $(label "$upload_max") samples" \
    "($((3 * upload_max)) objects), ${BENCH_UPLOAD_RUNS:-the same} round(s); per sample = 3 objects."
echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), load average" \
     "$(cut -d' ' -f1-3 /proc/loadavg) at the end; $("$SK_BIN" --version 2>/dev/null || echo 'shardkit ?'); $(tar --version | head -1)"
echo "bench_scale: $(( $(date +%s) - started )) s in all" >&2
exit $status
