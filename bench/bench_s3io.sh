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

# Resharding in S3: the shards just packed, rewritten into 32 MB shards
# straight from S3 to S3, against the same job staged through local disk
# (aws s3 cp down, shardkit shard, aws s3 cp up).
"$SK_BIN" pack --endpoint-url "$MOTO_URL" s3://bench/src/ -o s3://bench/packed/train-%06d.tar \
    --max-size 256M >/dev/null 2>&1
sk_shard=$BENCH_DIR/sk_shard.sh
{
    echo '#!/usr/bin/env bash'
    echo '# shardkit: S3 shards straight into new S3 shards'
    echo "exec '$SK_BIN' shard --endpoint-url '$MOTO_URL' s3://bench/packed/manifest.json \\"
    echo '    -o "s3://bench/rs/$(basename "$1")/train-%06d.tar" --max-size 32M'
} >"$sk_shard"
staged=$BENCH_DIR/staged_shard.sh
{
    echo '#!/usr/bin/env bash'
    echo '# the same through local disk: download, reshard, upload'
    echo 'set -euo pipefail'
    echo "'$AWS' --endpoint-url '$MOTO_URL' s3 cp --quiet --recursive s3://bench/packed/ \"\$1/in/\""
    echo "'$SK_BIN' shard \"\$1/in/manifest.json\" -o \"\$1/out/train-%06d.tar\" --max-size 32M -q"
    echo "'$AWS' --endpoint-url '$MOTO_URL' s3 cp --quiet --recursive \"\$1/out/\" \"s3://bench/staged/\$(basename \"\$1\")/\""
} >"$staged"
chmod +x "$sk_shard" "$staged"
report_mb() {
    printf '%-34s wall %7.2fs  %8s MB/s  peak RSS %7.1f MiB\n' "$1" "$M_WALL" \
        "$(fmt_rate $((C_BYTES / 1000000)) "$M_WALL")" "$M_RSS"
}
measure "shardkit shard s3->s3" "$sk_shard" @OUT@
rs_wall=$M_WALL
report_mb "shardkit shard s3->s3"
measure "staged (aws cp, shard, aws cp)" "$staged" @OUT@
report_mb "staged (aws cp, shard, aws cp)"
echo "speedup, staged / shardkit shard: $(fmt_ratio "$M_WALL" "$rs_wall")x"
