#!/usr/bin/env bash
# cat_pipe.sh - `shardkit cat` into a pipe (Pipe mode): the stream a
# consumer reads is the one a file gets, byte for byte, and it arrives in
# large writes (about one per MiB, where three writes a member used to
# make tens of thousands), read from the shards in large reads (a futex
# handoff and a small read per sample before).
. "$(dirname "$0")/lib.sh"
need strace
tmpdir
"$SK_TOOLS/mkcorpus" "$T/c" --samples 2000 >/dev/null || die "mkcorpus failed"
expect_ok "$SK_BIN" pack "$T/c" -o "$T/s/train-%06d.tar" --max-count 700

step "through a pipe: the bytes a file gets"
"$SK_BIN" cat "$T/s" >"$T/file.tar" || die "cat to a file failed"
"$SK_BIN" cat "$T/s" | cat >"$T/pipe.tar" || die "cat to a pipe failed"
cmp -s "$T/file.tar" "$T/pipe.tar" || die "the pipe got other bytes"
"$SK_BIN" cat --shuffle 50 --seed 3 "$T/s" | cmp -s - <("$SK_BIN" cat --shuffle 50 --seed 3 "$T/s") ||
    die "a shuffled stream differs from itself"

step "large writes to the pipe, large reads from the shards"
ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 strace -f -qq -e trace=write,writev,read,pread64 -o "$T/trace" "$SK_BIN" cat "$T/s" | cat >/dev/null ||
    die "cat under strace failed"
bytes=$(stat -c %s "$T/file.tar")
writes=$(grep -cE '^[0-9]+ +(write|writev)\(1,' "$T/trace")
reads=$(grep -cE '^[0-9]+ +(read|pread64)\(' "$T/trace")
step "$bytes bytes: $writes writes to stdout, $reads reads"
[ "$writes" -le $((bytes / 500000 + 4)) ] || die "$writes writes for $bytes bytes: not batched"
[ "$reads" -le $((bytes / 200000 + 60)) ] || die "$reads reads for $bytes bytes: small reads"
echo ok
