#!/usr/bin/env bash
# test: alone (it bounds its own time or memory: nothing beside it)
# verify: the duplicate-key check across a dataset in bounded memory.
#  - duplicates across shards and a split sample inside one are reported
#    the same (same --json lines, same order) whether the keys fit
#    --key-mem or go to sorted runs in scratch files and are merged
#  - memory does not grow with the samples: 10x the samples under a small
#    --key-mem costs under 1 MiB more peak RSS
#  - a scratch directory that cannot be written: exit non-zero naming it;
#    no file is left in $TMPDIR by a spilling run
. "$(dirname "$0")/lib.sh"
need python3 cmp
tmpdir
"$SK_TOOLS/mkcorpus" "$T/c" --samples 300 --per-dir 100 >/dev/null || die "mkcorpus failed"
"$SK_BIN" pack "$T/c" -o "$T/a/s-%02d.tar" --max-count 50 -q || die "pack failed"
mkdir -p "$T/c2" && cp -r "$T/c/n00001" "$T/c2/"
"$SK_BIN" pack "$T/c2" -o "$T/b/s-%02d.tar" -q || die "pack of the copies failed"
python3 - "$T/split.tar" <<'PY' || die "making the split shard failed"
import io, sys, tarfile
with tarfile.open(sys.argv[1], "w", format=tarfile.USTAR_FORMAT) as t:
    for name in ("k/one.jpg", "k/two.jpg", "k/one.cls"):
        data = b"x" * 10
        i = tarfile.TarInfo(name); i.size = len(data)
        t.addfile(i, io.BytesIO(data))
PY

step "the same findings whether the keys fit --key-mem or spill"
mkdir -p "$T/scratch"
expect_fail 1 "" "$SK_BIN" verify --json "$T/a/manifest.json" "$T/b/s-00.tar" "$T/split.tar"
cp "$OUT" "$T/in-memory.json"
TMPDIR=$T/scratch expect_fail 1 "" "$SK_BIN" verify --json --key-mem 2K "$T/a/manifest.json" "$T/b/s-00.tar" "$T/split.tar"
cmp "$OUT" "$T/in-memory.json" || die "spilled runs gave other findings"
[ "$(grep -c '"duplicate"' "$OUT")" -eq 100 ] || die "expected 100 duplicate keys: $(grep -c '"duplicate"' "$OUT")"
grep -q '"split"' "$OUT" || die "the split sample was not reported"
[ -z "$(ls -A "$T/scratch")" ] || die "scratch files left behind: $(ls -A "$T/scratch")"

step "a scratch directory that cannot be made: an error naming it"
TMPDIR=$T/missing expect_fail 2 "$T/missing" "$SK_BIN" verify --key-mem 1K "$T/a/manifest.json"
TMPDIR=$T/missing expect_ok "$SK_BIN" verify -q "$T/a/manifest.json"   # fits: no scratch needed

step "10x the samples, about the same memory"
rss() { /usr/bin/time -f %M "$@" 2>&1 >/dev/null | tail -1; }
"$SK_TOOLS/mkcorpus" "$T/big" --samples 30000 --per-dir 1000 >/dev/null || die "mkcorpus failed"
"$SK_BIN" pack "$T/big" -o "$T/big10/s-%03d.tar" --max-count 300 -q || die "pack failed"
rm -rf "$T/big" && mkdir -p "$T/big1" && cp "$T/big10"/s-00[0-9].tar* "$T/big1/"
[ -x /usr/bin/time ] || skip "no /usr/bin/time"
small=$(rss "$SK_BIN" verify -q --key-mem 256K "$T/big1/s-{000..009}.tar")
large=$(rss "$SK_BIN" verify -q --key-mem 256K "$T/big10/manifest.json")
echo "peak RSS: $small KiB for 3,000 samples, $large KiB for 30,000"
rss_grew_within 1024 "$small" "$large" "verify of 10x the samples"
echo "verify_keys_bounded: ok"
