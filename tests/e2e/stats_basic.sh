#!/usr/bin/env bash
# stats_basic.sh - `shardkit stats` (docs/stats.md) against numbers computed
# independently from the tree the dataset was packed from
# (tests/e2e/lib/stats_check.py: sizes from the files, image dimensions
# from Pillow, JSON keys from Python's json):
#   - counts and bytes per shard and in all, extensions, member sizes,
#     samples missing an extension (with examples that really lack it);
#   - --images: every JPEG's width x height equals Pillow's, one of them
#     with a 20 KB comment segment before its frame header (read in a
#     second, longer read), the aspect-ratio histogram Pillow's sizes give,
#     and fewer bytes read than the JPEGs hold;
#   - --json-keys: the keys of .json members and their types (all seven),
#     and the top-level types (an array among the objects);
#   - --json follows the schema of docs/stats.md: every key there, none
#     that is not, and the page's table names the same top-level keys;
#   - --html is one self-contained, well-formed page with inline SVG, no
#     script and no http reference, a hostile key shown escaped, written
#     under its name only when complete;
#   - duplicate keys: none in a packed dataset (keys rise: compared with
#     the one before); all found across two shards whose keys restart, also
#     through the external sort's temp files (--key-mem 4K);
#   - index-only stats of a 1,000-shard dataset in well under a second;
#   - --read-rate reads every sample of the shards it is given;
#   - errors: a missing dataset exits 1 naming it, usage exits 2.
. "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
$PY -c 'import PIL' 2>/dev/null || skip "Pillow (python3-pil) is not installed"
CHK="$SK_ROOT/tests/e2e/lib/stats_check.py"
tmpdir T
cd "$T"

step "a corpus with a sample missing .json, a long-header JPEG, a hostile key, JSON of every type"
"$SK_TOOLS/mkcorpus" c --samples 400 --per-dir 100 >/dev/null || die mkcorpus
rm c/n00001/00000150.json c/n00002/00000230.json
$PY - c/n00003/00000300.jpg <<'PYEOF' || die "long-header JPEG"
import sys
p = sys.argv[1]
b = open(p, "rb").read()
com = b"\xff\xfe" + (20002).to_bytes(2, "big") + b"x" * 20000
open(p, "wb").write(b[:2] + com + b[2:])
PYEOF
printf 'hostile\n' >'c/<b>bold'"'"'&.txt'
# JSON members with every type a key may hold, and one that is an array
printf '{"a": 1.5, "b": true, "c": null, "d": [1], "e": {"x": 1}, "label": "seven"}' >c/n00000/00000010.json
printf '[1, 2]' >c/n00000/00000011.json
expect_ok "$SK_BIN" pack c -o ds/s-%03d.tar --max-count 60

step "stats --json --images --json-keys equals the tree's numbers"
expect_ok "$SK_BIN" stats --json --images --json-keys ds
cp "$OUT" s.json
$PY "$CHK" schema s.json || die "--json schema"
$PY "$CHK" tree c s.json || die "stats differ from the tree"
$PY - s.json <<'PYEOF' || die "balance, keys or the shard list"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["keys"] == {"sorted": True, "duplicates": 0, "examples": [], "method": "adjacent"}, d["keys"]
assert len(d["shards"]) == 7 and d["balance"]["samples"] == {"min": 41, "median": 60, "max": 60}, d["balance"]
off = [o["url"] for o in d["balance"]["off"]]
assert "ds/s-006.tar" in off and d["balance"]["off"][-1]["last"], off
assert d["missing"]["json"]["samples"] == 3, d["missing"]  # two removed, and the hostile sample
PYEOF

step "the table"
expect_ok "$SK_BIN" stats --images ds
assert_contains "$OUT" "samples 401" "table totals"
assert_contains "$OUT" "member sizes of .jpg" "table histogram"
assert_contains "$OUT" "####" "text bars"
grep -q $'\x1b' "$OUT" && die "escape bytes in the table"

step "--html: one self-contained page, written whole"
expect_ok "$SK_BIN" stats --images --json-keys --html page.html -q ds
[ -s "$OUT" ] && die "-q printed the table"
$PY "$CHK" html page.html || die "--html page"
assert_contains page.html '&lt;b&gt;bold&#39;&amp;' "escaped hostile key"
assert_not_contains page.html '<b>bold' "raw hostile key"
assert_no_tmp .
mkdir ro && chmod 555 ro
if [ "$(id -u)" != 0 ]; then
    expect_fail 1 "ro/" "$SK_BIN" stats --html ro/page.html ds
fi

step "duplicate keys across shards whose keys restart, in bounded memory"
expect_ok "$SK_BIN" pack c -o ds2/s-%03d.tar --max-count 400
for km in "" 4K; do
    args=(); [ -n "$km" ] && args=(--key-mem "$km")
    mkdir -p two; cp ds2/s-000.tar two/a.tar; cp ds2/s-000.tar.idx two/a.tar.idx
    cp ds2/s-000.tar two/b.tar; cp ds2/s-000.tar.idx two/b.tar.idx
    expect_ok "$SK_BIN" stats --json "${args[@]}" two
    $PY - "$OUT" <<'PYEOF' || die "duplicates (--key-mem $km)"
import json, sys
k = json.load(open(sys.argv[1]))["keys"]
assert k["sorted"] is False and k["duplicates"] == 400 and k["method"] == "external-sort", k
assert len(k["examples"]) == 5, k
PYEOF
done

step "index-only stats of 1,000 shards in well under a second"
"$SK_TOOLS/mkcorpus" big --samples 3000 --per-dir 1000 --pool 8 >/dev/null || die mkcorpus
expect_ok "$SK_BIN" pack big -o big-ds/s-%04d.tar --max-count 3
expect_ok "$SK_BIN" stats --json big-ds
$PY - "$OUT" <<'PYEOF' || die "1000 shards"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["totals"]["shards"] == 1000 and d["totals"]["samples"] == 3000, d["totals"]
assert d["seconds"] < 0.5, f"index-only stats of 1000 shards took {d['seconds']:.3f} s"
print(f"1000 shards: {d['seconds']*1000:.1f} ms")
PYEOF

step "--read-rate reads every sample of the shards asked for"
expect_ok "$SK_BIN" stats --read-rate --shards 3 --json ds
$PY - "$OUT" <<'PYEOF' || die "--read-rate"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["shards"] == 3, d
for run in ("no_cache", "cache_fill", "cache_read"):
    r = d[run]
    assert r["samples"] == 180 and r["bytes"] > 0 and r["first_sample_seconds"] <= r["seconds"], (run, r)
PYEOF
expect_ok "$SK_BIN" stats --read-rate ds
assert_contains "$OUT" "samples/s" "read-rate table"

step "errors"
expect_fail 1 "nope" "$SK_BIN" stats nope/manifest.json
expect_fail 2 "" "$SK_BIN" stats
expect_fail 2 "" "$SK_BIN" stats --read-rate --images ds
expect_fail 2 "" "$SK_BIN" stats --bogus ds
echo "stats_basic: ok"
