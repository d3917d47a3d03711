#!/usr/bin/env bash
# bench_mount.sh - `shardkit mount` side by side with the FUSE peers from
# Debian on one corpus (default 20,000 samples = 60,000 files), warm page
# cache (every input read once, untimed):
#   shardkit     shardkit mount of the packed shards (plain tar, with index)
#   archivemount one tar of the same tree (libarchive; it walks the archive
#                from its start for a file it opens)
#   squashfuse   a squashfs image of the same tree (mksquashfs)
#   directory    the tree itself, no FUSE: the kernel's floor
# Timed, each on a fresh mount (so the FUSE page cache starts empty):
#   mount+list   mount, then `find MP -type f | wc -l`
#   random       BENCH_RANDOM files (default 3,000) chosen with a seed, read
#                with cat (xargs, 500 a process); archivemount reads
#                BENCH_RANDOM_ARCHIVEMOUNT (default 100) of them and the
#                column gives its time scaled to BENCH_RANDOM
#   all x1, x8   every file read, by one and by eight cat processes at a time
#                (not run for archivemount: each open walks the tar, so
#                reading all files is quadratic)
# BENCH_ALL=0 leaves out the all-files columns (on a loaded machine each
# FUSE round trip waits for a core, and they dominate the run).
# Rounds are interleaved (each round runs every tool once); medians of
# BENCH_RUNS rounds (default 3), whole-process wall seconds.  Prints a
# Markdown table and the load average.  Needs root (or fuse access),
# archivemount, squashfuse, mksquashfs.
set -u
. "$(dirname "$0")/lib.sh"
for t in archivemount squashfuse mksquashfs fusermount3 mountpoint; do
    command -v $t >/dev/null || bench_die "$t is not installed (scripts/deps bench)"
done
N=${BENCH_SAMPLES:-20000}
R=${BENCH_RANDOM:-3000}
RA=${BENCH_RANDOM_ARCHIVEMOUNT:-100}
ALL=${BENCH_ALL:-1}
W=$BENCH_DIR/mount-$N
C=$BENCH_DIR/corpus-$N
mkdir -p "$W"
make_corpus "$C" "$N"
if [ ! -f "$W/ds/manifest.json" ]; then
    "$SK_BIN" pack "$C" -o "$W/ds/t-%04d.tar" --max-size 64M -q >&2 || bench_die "pack failed"
fi
[ -f "$W/one.tar" ] || (cd "$C" && tar cf "$W/one.tar.tmp" . && mv "$W/one.tar.tmp" "$W/one.tar") ||
    bench_die "tar failed"
[ -f "$W/img.sqfs" ] || { mksquashfs "$C" "$W/img.sqfs.tmp" -noappend -quiet -no-progress >&2 &&
    mv "$W/img.sqfs.tmp" "$W/img.sqfs"; } || bench_die "mksquashfs failed"
warm_cache "$W/ds"
cat "$W/one.tar" "$W/img.sqfs" >/dev/null
warm_cache "$C"
(cd "$C" && find . -type f | sort) >"$W/files"
python3 -c '
import random, sys
files = open(sys.argv[1]).read().split("\n")[:-1]
r = random.Random(1)
for f in r.sample(files, int(sys.argv[2])): print(f)' "$W/files" "$R" >"$W/random"
head -n "$RA" "$W/random" >"$W/random_am"
MP=$W/mp
mkdir -p "$MP"

up() { # TOOL: mount it on MP (the directory: nothing)
    case $1 in
    shardkit) "$SK_BIN" mount "$W/ds" "$MP" ;;
    archivemount) archivemount -o ro,readonly "$W/one.tar" "$MP" >/dev/null 2>&1 ;;
    squashfuse) squashfuse "$W/img.sqfs" "$MP" ;;
    directory) return 0 ;;
    esac
}
down() { [ "$1" = directory ] || fuse_down "$MP"; }
root() { [ "$1" = directory ] && echo "$C" || echo "$MP"; }
# run TOOL OP: prints the seconds OP took on a fresh mount (mount+list
# includes the mount)
run() {
    local t=$1 op=$2 s e r
    down "$t" 2>/dev/null
    [ "$op" = list ] && s=$(now)
    up "$t" || bench_die "$t: mount failed"
    r=$(root "$t")
    [ "$op" = list ] || s=$(now)
    case $op in
    list) find "$r" -type f | wc -l >"$W/count" ;;
    random) (cd "$r" && xargs -n 500 cat <"$W/random" >/dev/null) ;;
    random_am) (cd "$r" && xargs -n 500 cat <"$W/random_am" >/dev/null) ;;
    all1) (cd "$r" && xargs -n 1000 cat <"$W/files" >/dev/null) ;;
    all8) (cd "$r" && xargs -P 8 -n 1000 cat <"$W/files" >/dev/null) ;;
    esac
    e=$(now)
    down "$t"
    [ "$op" = list ] && [ "$(cat "$W/count")" != "$(wc -l <"$W/files")" ] &&
        bench_die "$t: listed $(cat "$W/count") files, want $(wc -l <"$W/files")"
    echo "$e - $s" | bc -l
}
# bench_op TOOL OP (for mount_rounds): archivemount reads fewer random
# files (scaled) and not all of them; BENCH_ALL=0 leaves the all-files
# columns out
bench_op() {
    local t=$1 op=$2 o=$2 v
    [ "$ALL" = 1 ] || case $op in all1 | all8) return 0 ;; esac
    if [ "$t" = archivemount ]; then
        case $op in random) o=random_am ;; all1 | all8) return 0 ;; esac
    fi
    v=$(run "$t" "$o") || return 1
    [ "$o" = random_am ] && v=$(echo "$v * $R / $RA" | bc -l)
    echo "$v"
}
tools=(shardkit squashfuse archivemount directory)
mount_rounds "${tools[*]}" "list random all1 all8"
med() { mr_med "$1"; }
echo
echo "| $N samples, $(wc -l <"$W/files") files | mount + list (s) | $R random files (s) | per random file (ms) | all files, 1 reader (s) | all files, 8 readers (s) |"
echo "| --- | ---: | ---: | ---: | ---: | ---: |"
for t in "${tools[@]}"; do
    r=$(med "$t.random")
    per=$([ "$r" = - ] && echo - || printf '%.3f' "$(echo "$r * 1000 / $R" | bc -l)")
    echo "| $t | $(med "$t.list") | $r | $per | $(med "$t.all1") | $(med "$t.all8") |"
done
echo
echo "load average before / after: $MR_LOAD0 / $MR_LOAD1; medians of $BENCH_RUNS interleaved rounds, whole-process wall time; archivemount's random column is $RA files scaled to $R"
