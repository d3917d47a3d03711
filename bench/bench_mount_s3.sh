#!/usr/bin/env bash
# bench_mount_s3.sh - `shardkit mount` of shards in S3 against s3fs (Debian's
# s3fs-fuse) over the same files as single objects, both on one RADOS
# gateway (tests/helpers/rgw.sh; SK_S3_SERVER=moto: a moto_server, far
# slower): the issue's "listing and reading 10,000 files" comparison.
#   shardkit   shardkit mount s3://shards/ds/ (the packed shards, 64 MiB,
#              with indexes and manifest): a small file's read fetches the
#              256 KiB read window holding it, which serves the files
#              beside it from memory
#   shardkit-1get  the same with --read-window 0: one ranged GET a file
#              (shardkit before the read windows)
#   shardkit+cache  the same with --cache-dir, empty at each mount: the
#              first read of a file fetches its 1 MiB block, which then
#              serves the files beside it
#   s3fs       s3fs of the bucket holding every file of the corpus as its
#              own object (path-style requests, no disk cache: -o ro)
# Timed, each on a fresh mount (so neither has anything cached):
#   mount+list   mount, then `find MP -type f | wc -l`
#   read         BENCH_READ files (default: all) in key order, read by one
#                `cat` process at a time (xargs, 1,000 files a process),
#                after a listing (untimed)
# BENCH_SAMPLES (default 3334: 10,002 files), BENCH_RUNS rounds (default 3),
# BENCH_TOOLS (default all four, space-separated)
# interleaved (each round runs both tools), medians of whole-process wall
# times; prints a Markdown table and the load average.  Needs root (or
# fuse access), s3fs (scripts/deps bench), the Ceph daemons (scripts/deps
# check) and the aws cli.
set -u
. "$(dirname "$0")/lib.sh"
export SK_ROOT
. "$SK_ROOT/tests/helpers/moto.sh"
export SK_S3_SERVER=${SK_S3_SERVER:-rgw}
for t in s3fs fusermount3 mountpoint aws; do
    command -v $t >/dev/null || bench_die "$t is not installed (scripts/deps bench)"
done
N=${BENCH_SAMPLES:-3334}
W=$BENCH_DIR/mount-s3-$N
C=$BENCH_DIR/corpus-$N
mkdir -p "$W"
make_corpus "$C" "$N"
if [ ! -f "$W/ds/manifest.json" ]; then
    "$SK_BIN" pack "$C" -o "$W/ds/t-%04d.tar" --max-size 64M -q >&2 || bench_die "pack failed"
fi
(cd "$C" && find . -type f | sed 's|^\./||' | sort) >"$W/files"
nfiles=$(wc -l <"$W/files")
NREAD=${BENCH_READ:-$nfiles}
head -n "$NREAD" "$W/files" >"$W/read"

moto_start || bench_die "the S3 server ($SK_S3_SERVER) did not start"
trap 'for m in "$W/mp"; do fusermount3 -u "$m" 2>/dev/null; done; moto_stop' EXIT
E=$MOTO_URL
aws() { command aws --endpoint-url "$E" "$@"; }
aws s3 mb s3://files >/dev/null && aws s3 mb s3://shards >/dev/null || bench_die "bucket creation failed"
echo "uploading $nfiles files as objects and $(ls "$W/ds" | wc -l) dataset objects ..." >&2
"$SK_BIN" upload -q --endpoint-url "$E" "$C" s3://files/ >&2 || bench_die "upload of the files failed"
"$SK_BIN" upload -q --endpoint-url "$E" "$W/ds" s3://shards/ds/ >&2 || bench_die "upload of the shards failed"
printf '%s:%s\n' "$AWS_ACCESS_KEY_ID" "$AWS_SECRET_ACCESS_KEY" >"$W/passwd"
chmod 600 "$W/passwd"

MP=$W/mp
mkdir -p "$MP"
up() {
    case $1 in
    shardkit) "$SK_BIN" mount "s3://shards/ds/" "$MP" --endpoint-url "$E" ;;
    shardkit-1get) "$SK_BIN" mount "s3://shards/ds/" "$MP" --endpoint-url "$E" --read-window 0 ;;
    shardkit+cache) rm -rf "$W/cache"
          "$SK_BIN" mount "s3://shards/ds/" "$MP" --endpoint-url "$E" --cache-dir "$W/cache" ;;
    s3fs) s3fs files "$MP" -o ro,url="$E",use_path_request_style,passwd_file="$W/passwd" || return 1
          for _ in $(seq 1 200); do mountpoint -q "$MP" && return 0; sleep 0.05; done; return 1 ;;
    esac
}
down() { fuse_down "$MP"; }
bench_op() { # TOOL OP (for mount_rounds): the seconds OP took on a fresh mount
    local t=$1 op=$2 s e
    [ "$t.$op" = shardkit-1get.list ] && return 0 # the same listing as shardkit's
    mountpoint -q "$MP" && down
    [ "$op" = list ] && s=$(now)
    up "$t" || bench_die "$t: mount failed"
    case $op in
    list) find "$MP" -type f | wc -l >"$W/count" ;;
    read) find "$MP" -type f >/dev/null
         s=$(now)
         (cd "$MP" && xargs -n 1000 cat <"$W/read" >/dev/null) ;;
    esac
    e=$(now)
    down
    [ "$op" = list ] && [ "$(cat "$W/count")" != "$nfiles" ] &&
        bench_die "$t: listed $(cat "$W/count") files, want $nfiles"
    echo "$e - $s" | bc -l
}
# shellcheck disable=SC2206  # BENCH_TOOLS: a subset, split on spaces
tools=(${BENCH_TOOLS:-shardkit shardkit-1get shardkit+cache s3fs})
mount_rounds "${tools[*]}" "list read"
med() { mr_med "$1"; }
echo
ratio() { # A / B, "-" when either was not measured
    local a b
    a=$(med "$1") b=$(med "$2")
    if [ "$a" = - ] || [ "$b" = - ]; then echo -; else echo "$a / $b" | bc -l | xargs printf '%.1fx'; fi
}
echo "| $N samples, $nfiles files, $SK_S3_SERVER | mount + list (s) | $NREAD files read, 1 reader (s) |"
echo "| --- | ---: | ---: |"
for t in "${tools[@]}"; do echo "| $t | $(med "$t.list") | $(med "$t.read") |"; done
for t in "${tools[@]}"; do
    [ "$t" = s3fs ] || echo "| s3fs / $t | $(ratio s3fs.list "$t.list") | $(ratio s3fs.read "$t.read") |"
done
echo
echo "load average before / after: $MR_LOAD0 / $MR_LOAD1; medians of $BENCH_RUNS interleaved rounds, whole-process wall time"
