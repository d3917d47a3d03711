#!/usr/bin/env bash
# trust_lock.sh - two runs writing one dataset at once cannot mix their
# shards: the second pack (or shard) fails at once, naming the first;
# --part runs (each with its own manifest) share a directory; a killed
# run's lock and temporary files do not stop a rerun, and the rerun
# removes the temporary files the killed run left.
. "$(dirname "$0")/lib.sh"
tmpdir T
cd "$T" || die cd
"$SK_TOOLS/mkcorpus" c --samples 50 >/dev/null || die mkcorpus
mkdir -p out

step "pack: a second run into the same dataset fails at once"
mkfifo list
(cd c && find . -type f | sort) >names
"$SK_BIN" pack --files-from list --root c -o out/s-%03d.tar -q 2>first.err &
first=$!
exec 7>list # the first run now holds the lock and waits for its file list
sleep 0.5
start=$(date +%s)
run "$SK_BIN" pack c -o out/s-%03d.tar -q
[ "$RC" = 2 ] || die "the second pack exited $RC, not 2: $(cat "$ERR")"
assert_contains "$ERR" "out/manifest.json is being written by another run (pid $first: shardkit pack)"
[ $(( $(date +%s) - start )) -le 2 ] || die "the second pack did not fail at once"
step "shard: the same, against the running pack"
run "$SK_BIN" shard c/n00000/00000000.jpg -o out/s-%03d.tar
[ "$RC" = 2 ] || die "shard exited $RC, not 2"
assert_contains "$ERR" "pid $first: shardkit pack"
cat names >&7
exec 7>&-
wait "$first" || die "the first pack failed: $(cat first.err)"
check_shards out
ls -a out | grep -q lock && die "the lock file was left: $(ls -a out)"

step "--part runs share the directory"
for i in 0 1 2; do "$SK_BIN" pack c -o "parts/s-{part}-%03d.tar" --part "$i/3" -q & done
wait || die "a --part run failed"
[ "$(ls parts/manifest-*.json | wc -l)" = 3 ] || die "not three part manifests: $(ls parts)"

step "a killed run: the rerun takes the lock and removes its temporary files"
mkfifo list2
"$SK_BIN" pack --files-from list2 --root c -o k/s-%03d.tar --max-size 64K -q &
victim=$!
exec 8>list2
sleep 0.3
kill -9 "$victim"; wait "$victim" 2>/dev/null
exec 8>&-
mkdir -p k
: >"k/.s-000.tar.$victim.0.tmp" # what a killed writer leaves behind
: >"k/.notes.123.tmp.keep"       # not ours: never touched
expect_ok "$SK_BIN" pack c -o k/s-%03d.tar --max-size 64K -q
[ ! -e "k/.s-000.tar.$victim.0.tmp" ] || die "the killed run's temporary file is still there"
[ -e "k/.notes.123.tmp.keep" ] || die "a file shardkit did not make was removed"
check_shards k
echo "one run per dataset"
