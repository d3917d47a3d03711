#!/usr/bin/env bash
# test: alone (it bounds its own time or memory: nothing beside it)
# progress_tty.sh - the progress line as a user sees it, in a real terminal
# (tmux): each long-running tool (pack, shard, index, verify, upload) is run
# in a tmux pane whose screen is captured every 50 ms.  Over the frames:
# a total, once shown, is the true one and never changes (pack walking
# directories in key order does not know its total until the walk ends:
# done and rate then, and no ETA); done never goes back; shards are counted
# as they are written, not all at the end; bytes are in binary units only
# (no MB beside MiB); and the run ends with one summary line "TOOL: N shards,
# N samples, SIZE in Ts (RATE/s)".  With stderr not a terminal, stderr is
# empty.
. "$(dirname "$0")/lib.sh"
. "$SK_ROOT/tests/helpers/moto.sh"
need tmux python3
tmpdir T
S=sk-progress-$$
at_exit "tmux kill-server -L $S"
export TMUX_TMPDIR=$T

# capture NAME CMD...: runs CMD in a 200x50 pane; frames go to $T/NAME.frames
# (the last line of the screen at each capture), the final screen to
# $T/NAME.screen
capture()
{
    local name=$1 i q
    shift
    printf -v q '%q ' "$@"
    tmux -L $S new-session -d -s "$name" -x 200 -y 50 "bash -c '$q; echo EXIT=\$?; sleep 600'" ||
        die "tmux did not start"
    : >"$T/$name.frames"
    local t0=$(date +%s.%N)
    for i in $(seq 1 1200); do
        tmux -L $S capture-pane -p -t "$name" >"$T/$name.screen" 2>/dev/null || break
        grep -v '^$' "$T/$name.screen" | tail -1 >>"$T/$name.frames"
        grep -q '^EXIT=' "$T/$name.screen" && break
        sleep 0.05
    done
    awk -v a="$(date +%s.%N)" -v b="$t0" 'BEGIN { print a - b }' >"$T/$name.secs"
    tmux -L $S kill-session -t "$name"
    grep -q '^EXIT=0' "$T/$name.screen" || { cat "$T/$name.screen"; die "$name: did not exit 0"; }
}

# check NAME TOOL: the frames obey the rules above; prints the most shards
# a progress line showed before the end
check()
{
    python3 - "$T/$1.frames" "$T/$1.screen" "$2" "$(cat "$T/$1.secs")" <<'EOF' || die "$1: $(tail -5 "$T/$1.frames")"
import re, sys
frames = [l.rstrip("\n") for l in open(sys.argv[1])]
screen = open(sys.argv[2]).read()
tool = sys.argv[3]
line = re.compile(r"^%s: (\d+)(?:/(\d+))? ([a-z ]+?)  " % tool)
seen = {}     # unit -> total shown
last = {}     # unit -> last done
most_shards = 0
progress = 0
for f in frames:
    m = line.match(f)
    if not m:
        continue
    progress += 1
    done, total, unit = int(m.group(1)), m.group(2), m.group(3)
    if unit in last and done < last[unit]:
        sys.exit("%s went back: %r" % (unit, f))
    last[unit] = done
    if total is not None:
        if unit in seen and seen[unit] != int(total):
            sys.exit("the total changed from %s: %r" % (seen[unit], f))
        seen[unit] = int(total)
    elif "ETA" in f:
        sys.exit("an ETA without a total: %r" % f)
    if re.search(r"\d MB|MB/s", f):
        sys.exit("decimal MB beside MiB: %r" % f)
    s = re.search(r"  (\d+) shards", f)
    if s:
        most_shards = max(most_shards, int(s.group(1)))
# a run over within a second can end between two captures, its progress
# line already replaced by the summary (a fast machine indexes these
# shards in a tenth of a second): only then may no frame have caught one
if not progress and float(sys.argv[4]) >= 1.0:
    sys.exit("no progress line was ever shown in %.1f s" % float(sys.argv[4]))
summary = re.compile(r"^%s: (\d+ shards, )?\d+ (samples|objects), [0-9.]+ (B|KiB|MiB|GiB) in [0-9.]+s "
                     r"\([0-9.]+ (B|KiB|MiB|GiB)/s\)$" % tool, re.M)
if not summary.search(screen):
    sys.exit("no summary line in:\n" + screen)
print(most_shards)
EOF
}

step "a corpus: 12000 samples in 24 folders"
"$SK_TOOLS/mkcorpus" "$T/c" --samples 12000 --per-dir 500 >/dev/null || die "mkcorpus failed"

step "pack in key order: no total until the walk is done, shards counted live"
capture pack "$SK_BIN" pack "$T/c" -o "$T/p/t-%04d.tar" --max-count 100 -j1
check pack pack >/dev/null || exit 1
# plain tar at -j1 can be over in half a second (two 0.2 s refreshes) on a
# quiet machine; zstd level 12 makes the same walk take seconds, so that
# frames in between must show shards being counted
capture packz "$SK_BIN" pack "$T/c" -o "$T/pz/t-%04d.tar.zst" --max-count 100 -j1 --compress zstd:12
n=$(check packz pack) || exit 1
[ "$n" -gt 0 ] || die "pack: no progress line counted a shard before the end: $(tail -3 "$T/packz.frames")"

step "shard with images resized: shards counted as they close"
capture shard "$SK_BIN" shard "$T/p/t-{0000..0119}.tar" -o "$T/s/s-%04d.tar" --max-count 50 --image-size 32
n=$(check shard shard) || exit 1
[ "$n" -gt 0 ] || die "shard: no progress line counted a shard before the end"

step "index, one shard at a time"
rm -f "$T"/p/*.idx
capture index "$SK_BIN" index -j1 --dali "$T/p/t-{0000..0119}.tar"
check index index >/dev/null

step "verify --deep --jpeg is never silent"
capture verify "$SK_BIN" verify --deep --jpeg -j1 "$T/s"
check verify verify >/dev/null

step "nothing on stderr when it is not a terminal"
run "$SK_BIN" pack "$T/c" -o "$T/q/t-%04d.tar" --max-count 1000
[ "$RC" = 0 ] && [ ! -s "$ERR" ] || die "pack wrote to a stderr that is not a terminal"
run "$SK_BIN" verify --deep "$T/q"
[ "$RC" = 0 ] && [ ! -s "$ERR" ] || die "verify wrote to a stderr that is not a terminal"

step "-q: no progress and no summary on a terminal either"
capture quiet "$SK_BIN" pack "$T/c" -o "$T/q2/t-%04d.tar" --max-count 1000 -q
if grep -q '^pack:' "$T/quiet.frames" "$T/quiet.screen"; then die "pack -q showed progress"; fi

if command -v moto_server >/dev/null && command -v aws >/dev/null; then
    step "upload: objects and bytes in MiB"
    at_exit moto_stop
    s3_serve bkt
    mkdir "$T/u" && cp "$T"/s/s-00[0-2]?.tar "$T/u/" || die "cp failed"
    capture upload "$SK_BIN" upload --endpoint-url "$MOTO_URL" --concurrency 2 "$T/u" s3://bkt/ds/
    check upload upload >/dev/null
else
    echo "(upload skipped: moto_server or aws missing)"
fi
exit 0
