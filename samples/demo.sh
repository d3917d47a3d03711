#!/usr/bin/env bash
# demo.sh - what `make demo` runs: generate a small WebDataset-style corpus
# (2,000 samples of .jpg/.cls/.json) with build/tools/mkcorpus, pack it into
# 16 MB shards with `shardkit pack`, then show the shards, the first members
# of the first shard and the head of the manifest.  Output in demo-out/.
set -eu   # no pipefail: `... | head` may end the left side early
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
out=demo-out

if [ ! -d "$out/corpus" ]; then
    echo "== generating $out/corpus"
    rm -rf "$out/corpus.tmp"
    "$BUILD/tools/mkcorpus" "$out/corpus.tmp" --samples 2000
    mv "$out/corpus.tmp" "$out/corpus"
fi

echo "== shardkit pack $out/corpus -o $out/shards/train-%06d.tar --max-size 16M"
rm -rf "$out/shards"
mkdir -p "$out/shards"
"$BUILD/shardkit" pack "$out/corpus" -o "$out/shards/train-%06d.tar" --max-size 16M

echo "== shards"
ls -l "$out/shards"

first=$(ls "$out"/shards/*.tar | head -1)
echo "== tar tvf $first | head"
tar tvf "$first" | head -6

manifest=$out/shards/manifest.json
[ -f "$manifest" ] || manifest=$(ls "$out"/shards/*.json 2>/dev/null | head -1)
if [ -n "$manifest" ]; then
    echo "== head of $manifest"
    python3 -m json.tool "$manifest" | head -25
fi
