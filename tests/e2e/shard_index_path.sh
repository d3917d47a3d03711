#!/usr/bin/env bash
# shard_index_path.sh - `shardkit shard` without filters reads a plain tar
# with a sound index through the index (no libarchive): its output must be
# byte for byte the output of the same input read by its headers alone
# (no index beside it), for shardkit's own shards and for foreign tars
# (GNU long names, pax headers, directories, meta members, prefix-split
# names); and an index that lies is caught: offsets, sizes, extensions or
# sample boundaries that disagree with the tar change nothing in the
# output, a CRC32C that disagrees with the member's bytes fails the run
# and names the member (with --shuffle too).  The index path maps the input (private) and
# copies in only what it must change: checked with strace when it is
# installed (no bulk pread while the headers are already the output's;
# pread from the second batch on once they are not), and the input is
# never written through the mapping.
. "$(dirname "$0")/lib.sh"
need python3 tar
tmpdir T
cd "$T"
LIB=$(dirname "$SK_BIN")/libshardkit.so
[ -f "$LIB" ] || skip "no $LIB"
LIAR="pylib $SK_ROOT/tests/e2e/lib/liar_index.py $LIB"

# same_output DIR_WITH_INDEXES NAME... : shard through the indexes and
# through copies without them; every output file must be identical
# ($MT: the --mtime option, unquoted: empty for the input's own)
MT="--mtime 7"
same_output() {
    local d=$1 f; shift
    rm -rf noidx o1 o2 && mkdir noidx
    local with=() without=()
    for f in "$@"; do cp "$d/$f" noidx/; with+=("$d/$f"); without+=("noidx/$f"); done
    expect_ok "$SK_BIN" shard "${with[@]}" -o o1/s-%03d.tar --max-size 300K $MT --json
    cp "$OUT" o1.json
    assert_not_contains "$ERR" "error" "stderr"
    expect_ok "$SK_BIN" shard "${without[@]}" -o o2/s-%03d.tar --max-size 300K $MT --json
    for f in o2/*; do cmp -s "$f" "o1/${f#o2/}" || die "$f: the index path gives other bytes"; done
    [ "$(ls o1 | wc -l)" = "$(ls o2 | wc -l)" ] || die "the index path gives other files"
    grep -o '"samples_in": [0-9]*, "samples": [0-9]*, "members": [0-9]*' o1.json > a
    grep -o '"samples_in": [0-9]*, "samples": [0-9]*, "members": [0-9]*' "$OUT" > b
    cmp -s a b || die "counts differ: $(cat a) / $(cat b)"
}

"$SK_TOOLS/mkcorpus" c --samples 60 >/dev/null || die "mkcorpus failed"
expect_ok "$SK_BIN" pack c -o in/i-%03d.tar --max-count 20 -q

step "shardkit's shards: index path = header path"
same_output in i-000.tar i-001.tar i-002.tar
[ -s o1/s-001.tar ] || die "expected several output shards"

step "foreign tars: GNU long names and directories, pax headers and meta members, ustar prefixes"
mkdir -p f/d
python3 "$SK_ROOT/tests/e2e/lib/index_check.py" corpus f/c
python3 "$SK_ROOT/tests/e2e/lib/index_check.py" paxtar f/c f/pax.tar
(cd f/c && tar --format=gnu -cf ../gnu.tar $(cat ../list.txt | tr '\n' ' ') s) || die "GNU tar failed"
python3 - <<'PY' || die "ustar tar"
import io, tarfile
with tarfile.open("f/ustar.tar", "w", format=tarfile.USTAR_FORMAT) as tf:
    for i in range(12):
        for ext, data in (("bin", bytes(range(256)) * (i + 1)), ("TXT", b"caption %d" % i)):
            ti = tarfile.TarInfo("p/" + "q" * 110 + "/k%02d.%s" % (i, ext))
            ti.size = len(data)
            tf.addfile(ti, io.BytesIO(data))
PY
for t in pax gnu ustar; do expect_ok "$SK_BIN" index f/$t.tar --no-manifest; done
same_output f pax.tar gnu.tar ustar.tar
same_output in i-000.tar
cp in/i-000.tar in/i-001.tar f/ && $LIAR f/i-000.tar f/i-000.tar.idx true && \
    cp in/i-001.tar.idx f/ || die "true index"
same_output f i-000.tar ustar.tar i-001.tar

step "headers already the output's (the input's own mtime): mapped, nothing copied in"
MT="" same_output in i-000.tar i-001.tar i-002.tar
mkdir big && "$SK_TOOLS/mkcorpus" bc --samples 400 >/dev/null || die "mkcorpus failed"
expect_ok "$SK_BIN" pack bc -o big/b-%03d.tar --max-size 5M -q
[ "$(stat -c %s big/b-000.tar)" -gt $((4 << 20)) ] || die "big/b-000.tar: want a shard of several 2 MiB batches"
cp -r big big.orig
MT="" same_output big b-000.tar b-001.tar
MT="--mtime 9" same_output big b-000.tar b-001.tar
for f in big.orig/*; do cmp -s "$f" "big/${f#big.orig/}" || die "${f#big.orig/}: the input changed"; done
if command -v strace >/dev/null; then
    # pread64 calls of a whole batch: not while the headers stand as they are
    # (LeakSanitizer cannot run under ptrace: an ASan build is traced without it)
    bulk() { ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
             strace -f -e trace=pread64 -o trace "$SK_BIN" shard big/b-000.tar -o "$1"/s-%03d.tar $2 -q ||
             die "shard under strace"; awk '/pread64/ && $NF + 0 > 65536' trace | wc -l; }
    n=$(bulk st1 "")
    [ "$n" = 0 ] || die "headers as they are: $n bulk preads, want none (the input mapped)"
    n=$(bulk st2 "--mtime 9")
    [ "$n" -ge 1 ] || die "headers rewritten: want pread after the first batch, got $n"
    expect_ok "$SK_BIN" shard noidx/b-000.tar -o st3/s-%03d.tar --mtime 9 -q
    cmp -s st2/s-000.tar st3/s-000.tar || die "strace run: other bytes"
fi

step "an index that lies about offsets, sizes, extensions or samples changes nothing"
for mode in shift omit split ext size; do
    mkdir -p "l-$mode" && cp in/i-001.tar "l-$mode/" || die cp
    $LIAR "l-$mode/i-001.tar" "l-$mode/i-001.tar.idx" "$mode" || die "liar_index $mode"
    "$SK_BIN" verify -q "l-$mode/i-001.tar" >/dev/null 2>&1 && die "verify takes the $mode index"
    same_output "l-$mode" i-001.tar
done

step "an index whose CRC32C is not the member's: caught, the run fails, no manifest"
mkdir -p l-crc && cp in/i-001.tar l-crc/ && $LIAR l-crc/i-001.tar l-crc/i-001.tar.idx crc || die liar
expect_fail 1 "CRC32C" "$SK_BIN" shard in/i-000.tar l-crc/i-001.tar -o oc/s-%03d.tar
assert_contains "$ERR" "l-crc/i-001.tar" "the shard's name"
assert_contains "$ERR" "its index records" "the cause"
[ ! -e oc/manifest.json ] || die "a manifest was written after the CRC32C mismatch"
assert_no_tmp oc

step "--shuffle reads through the index too: the same bytes, and its CRC32C is checked"
MT="--shuffle --seed 3" same_output in i-000.tar i-001.tar i-002.tar
MT="--shuffle --seed 4 --mtime 9" same_output big b-000.tar b-001.tar
expect_fail 1 "CRC32C" "$SK_BIN" shard in/i-000.tar l-crc/i-001.tar -o ocs/s-%03d.tar --shuffle
assert_contains "$ERR" "l-crc/i-001.tar" "the shard's name"
[ ! -e ocs/manifest.json ] || die "a manifest was written after the CRC32C mismatch"
echo ok
