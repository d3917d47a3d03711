#!/usr/bin/env bash
# shard_shuffle_refs.sh - `shardkit shard --shuffle` of plain tars with
# sound indexes shuffles references (input, offset) weighing their samples'
# bytes, and reads each sample's bytes once, when it writes it: the output
# must be byte for byte that of the same inputs without their indexes
# (every sample's bytes in the buckets) for any seed, budget (in memory,
# spilled, split again), --num-shards, --mtime, .tar.zst out, a mix with
# inputs that have no index, indexes without CRC32Cs (index --fast), lying
# indexes, and more inputs than the files it may keep open.  Between the
# scatter and the drain an input cut short, changed in place or replaced
# under its name: the first two fail the run naming the shard (no
# manifest), the third changes nothing (the file first read is read).
. "$(dirname "$0")/lib.sh"
need python3
tmpdir T
cd "$T"
LIB=$(dirname "$SK_BIN")/libshardkit.so
[ -f "$LIB" ] || skip "no $LIB"
LIAR="pylib $SK_ROOT/tests/e2e/lib/liar_index.py $LIB"

# same_output DIR NAME... ($OPTS: the options): shard through the indexes
# and through copies without them; every output file must be identical
same_output() {
    local d=$1 f; shift
    rm -rf noidx o1 o2 && mkdir noidx
    local with=() without=()
    for f in "$@"; do cp "$d/$f" noidx/; with+=("$d/$f"); without+=("noidx/$f"); done
    expect_ok "$SK_BIN" shard "${with[@]}" -o "o1/s-%03d.${EXT:-tar}" $OPTS -q
    expect_ok "$SK_BIN" shard "${without[@]}" -o "o2/s-%03d.${EXT:-tar}" $OPTS -q
    for f in o2/*; do cmp -s "$f" "o1/${f#o2/}" || die "$f ($OPTS): the references give other bytes"; done
    [ "$(ls o1 | wc -l)" = "$(ls o2 | wc -l)" ] || die "($OPTS): the references give other files"
}

"$SK_TOOLS/mkcorpus" c --samples 300 >/dev/null || die "mkcorpus failed"
expect_ok "$SK_BIN" pack c -o in/i-%03d.tar --max-count 12 -q
ls in/i-024.tar >/dev/null || die "want 25 input shards"
ALL=$(cd in && ls i-*.tar)

step "references shuffle as the samples' bytes do"
for OPTS in "--shuffle --seed 1" "--shuffle --seed 2 --max-size 200K" \
            "--shuffle --seed 3 --shuffle-mem 64K" "--shuffle --seed 4 --shuffle-mem 8K" \
            "--shuffle --seed 5 --num-shards 3 --mtime 9"; do
    same_output in $ALL
done
OPTS="--shuffle --seed 6" EXT=tar.zst same_output in $ALL
[ -s o1/s-000.tar.zst ] || die "no .tar.zst written"

step "a mix: inputs without an index, and indexes without CRC32Cs (index --fast)"
mkdir mix && cp in/i-00[0-5].tar mix/ && cp in/i-00[0-2].tar.idx mix/ || die cp
for f in mix/i-003.tar mix/i-004.tar; do expect_ok "$SK_BIN" index --fast "$f" --no-manifest; done
OPTS="--shuffle --seed 7 --shuffle-mem 64K" same_output mix i-000.tar i-003.tar i-001.tar i-005.tar i-004.tar i-002.tar

step "lying indexes change nothing"
for mode in shift omit split ext size; do
    mkdir -p "l-$mode" && cp in/i-000.tar in/i-001.tar in/i-000.tar.idx "l-$mode/" || die cp
    $LIAR "l-$mode/i-001.tar" "l-$mode/i-001.tar.idx" "$mode" || die "liar_index $mode"
    OPTS="--shuffle --seed 8" same_output "l-$mode" i-000.tar i-001.tar
done
mkdir -p l-crc && cp in/i-000.tar in/i-001.tar in/i-000.tar.idx l-crc/ || die cp
$LIAR l-crc/i-001.tar l-crc/i-001.tar.idx crc || die "liar_index crc"
expect_fail 1 "CRC32C" "$SK_BIN" shard l-crc/i-000.tar l-crc/i-001.tar -o oc/s-%03d.tar --shuffle
assert_contains "$ERR" "l-crc/i-001.tar" "the shard's name"
assert_contains "$ERR" "its index records" "the cause"
[ ! -e oc/manifest.json ] || die "a manifest was written after the CRC32C mismatch"
assert_no_tmp oc

step "more inputs than open files: closed and opened again, the same bytes"
OPTS="--shuffle --seed 9"
expect_ok "$SK_BIN" shard $(printf 'in/%s ' $ALL) -o o1/s-%03d.tar $OPTS -q
( ulimit -n 40 && exec "$SK_BIN" shard $(printf 'in/%s ' $ALL) -o o3/s-%03d.tar $OPTS -q ) ||
    die "shard under ulimit -n 40"
for f in o1/*; do cmp -s "$f" "o3/${f#o1/}" || die "$f: other bytes with fewer open files"; done

# between_passes NAME CMD: shard in/v-0.tar, v/v-1.tar and then stdin
# (v-2.tar): while it waits for stdin, its scatter of the files is over
# and nothing is written yet: CMD runs then.  $RC, $ERR as for run.
mkdir v && cp in/i-000.tar v/v-0.tar && cp in/i-000.tar.idx v/v-0.tar.idx &&
    cp in/i-001.tar v/v-1.tar && cp in/i-001.tar.idx v/v-1.tar.idx && cp in/i-002.tar v/v-2.tar || die cp
between_passes() {
    local name=$1 cmd=$2 pid i w
    rm -rf "o-$name" v2 && cp -r v v2 && mkfifo "p-$name" || die "setup"
    ERR=$T/err-$name
    "$SK_BIN" shard v2/v-0.tar v2/v-1.tar - -o "o-$name/s-%03d.tar" --shuffle --seed 10 -q \
        < "p-$name" 2> "$ERR" & pid=$!
    exec 3> "p-$name"
    for i in $(seq 200); do
        w=$(cat /proc/$pid/wchan 2>/dev/null || echo)
        case $w in *pipe*) break ;; esac
        sleep 0.05
    done
    case $w in *pipe*) ;; *) sleep 2 ;; esac # no wchan here: a generous wait
    eval "$cmd" || die "$name: $cmd"
    cat v/v-2.tar >&3
    exec 3>&-
    wait $pid && RC=0 || RC=$?
}

step "between the passes: nothing changes"
between_passes same ":"
[ "$RC" = 0 ] || die "untouched inputs: exit $RC: $(cat "$ERR")"

step "between the passes: an input replaced under its name is still read as it was"
between_passes renamed "cp v/v-1.tar v2/new && mv v2/new v2/v-0.tar"
[ "$RC" = 0 ] || die "renamed: exit $RC: $(cat "$ERR")"
for f in o-same/*; do cmp -s "$f" "o-renamed/${f#o-same/}" || die "$f: other bytes after the rename"; done

step "between the passes: an input cut short fails the run, naming it"
between_passes cut "truncate -s 40000 v2/v-0.tar"
[ "$RC" = 1 ] || die "cut short: exit $RC, want 1: $(cat "$ERR")"
assert_contains "$ERR" "v2/v-0.tar" "the shard's name"
assert_contains "$ERR" "cut short" "the cause"
[ ! -e o-cut/manifest.json ] || die "a manifest after an input was cut short"
assert_no_tmp o-cut

step "between the passes: an input changed in place fails the run, naming the member"
# the last byte of the first member's data: every sample is written, so it is found
flip() { python3 - "$1" <<'PY'
import sys, tarfile
with tarfile.open(sys.argv[1]) as tf:
    m = tf.getmembers()[0]
with open(sys.argv[1], "r+b") as f:
    f.seek(m.offset_data + m.size - 1)
    b = f.read(1)
    f.seek(-1, 1)
    f.write(bytes([b[0] ^ 0xff]))
PY
}
between_passes flip "flip v2/v-1.tar"
[ "$RC" = 1 ] || die "changed in place: exit $RC, want 1: $(cat "$ERR")"
assert_contains "$ERR" "v2/v-1.tar" "the shard's name"
assert_contains "$ERR" "CRC32C" "the cause"
[ ! -e o-flip/manifest.json ] || die "a manifest after an input changed"
assert_no_tmp o-flip
echo ok
