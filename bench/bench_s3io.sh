#!/usr/bin/env bash
# bench_s3io.sh - pack 20,000 small objects from S3 to S3 (one local
# moto_server, auth off), against the two-step route a user would script
# without shardkit: `aws s3 sync` down to local disk, `tar cf`, `aws s3 cp`
# up.  Reports wall seconds, objects/s and peak RSS (bench/lib.sh measure;
# BENCH_RUNS runs, median), and shardkit's RSS at two --concurrency values
# to show memory is bounded by the objects in flight, not the input size.
# Env: BENCH_S3IO_SAMPLES (default 6667 samples = 20,001 objects).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
export SK_ROOT=$ROOT
. "$ROOT/bench/lib.sh"
. "$ROOT/tests/helpers/moto.sh"
skip_unless_moto
SAMPLES=${BENCH_S3IO_SAMPLES:-6667}
trap 'moto_stop' EXIT
moto_start
AWS=$(command -v aws)   # GNU time needs a program, not a shell function
"$AWS" --endpoint-url "$MOTO_URL" s3 mb s3://bench >/dev/null

C=$BENCH_DIR/corpus-$SAMPLES
make_corpus "$C" "$SAMPLES"
corpus_stats "$C"
echo "s3io: uploading $C_FILES objects ($C_BYTES bytes) to moto (untimed) ..." >&2
# aws s3 sync, not shardkit upload: that one opens every file up front, and
# 20,001 files pass the usual limit of 20,000 open files
"$AWS" --endpoint-url "$MOTO_URL" s3 sync --quiet "$C" s3://bench/src/

# Both routes as scripts taking measure's fresh output directory ($1): its
# basename keeps each run's objects apart in the bucket.
sk_pack=$BENCH_DIR/sk_pack.sh
{
    echo '#!/usr/bin/env bash'
    echo '# shardkit: S3 objects straight into S3 shards; $2 = --concurrency'
    echo "exec '$SK_BIN' pack --endpoint-url '$MOTO_URL' s3://bench/src/ \\"
    echo '    -o "s3://bench/sk/$(basename "$1")/train-%06d.tar" --max-size 256M --concurrency "$2"'
} >"$sk_pack"
two_step=$BENCH_DIR/two_step.sh
{
    echo '#!/usr/bin/env bash'
    echo '# the route without shardkit: download everything, tar it, upload the tar'
    echo 'set -euo pipefail'
    echo "'$AWS' --endpoint-url '$MOTO_URL' s3 sync --quiet s3://bench/src/ \"\$1/files/\""
    echo 'tar cf "$1/train.tar" -C "$1/files" .'
    echo "'$AWS' --endpoint-url '$MOTO_URL' s3 cp --quiet \"\$1/train.tar\" \"s3://bench/two-step/\$(basename \"\$1\")/train.tar\""
} >"$two_step"
chmod +x "$sk_pack" "$two_step"

report() { # label
    printf '%-34s wall %7.2fs  %6s objects/s  peak RSS %7.1f MiB\n' "$1" "$M_WALL" \
        "$(fmt_rate "$C_FILES" "$M_WALL")" "$M_RSS"
}
measure "shardkit pack s3->s3 (c=64)" "$sk_pack" @OUT@ 64
sk_wall=$M_WALL
report "shardkit pack s3->s3 (c=64)"
measure "shardkit pack s3->s3 (c=8)" "$sk_pack" @OUT@ 8
report "shardkit pack s3->s3 (c=8)"
measure "two-step (aws sync, tar, aws cp)" "$two_step" @OUT@
report "two-step (aws sync, tar, aws cp)"
echo "speedup, two-step / shardkit (c=64): $(fmt_ratio "$M_WALL" "$sk_wall")x"
