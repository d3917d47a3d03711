#!/usr/bin/env bash
# test: long (a minute or more: started early, so it does not run last)
# slurm_array.sh - `pack --part auto` under a real Slurm: the test starts a
# private single-node cluster as its own child processes (munged on a
# private socket and key, slurmctld and slurmd with a slurm.conf in a
# temporary directory, free ports), submits samples/slurm/pack.sbatch as
# `sbatch --array=0-3 --wait`, merges the four manifests and checks:
#   - the parts' shards together hold exactly the corpus's files, none twice;
#   - the merged manifest's ordinals are continuous;
#   - the same array run again gives byte-identical shards and manifests;
#   - one task's lost shard comes back byte-identical when that array index
#     alone reruns (`sbatch --array=2 --wait`, pack --resume), and no other
#     part's file is touched.
# The daemons are stopped by PID at exit.  Needs root (slurmd runs jobs as
# their user and slurmctld's SlurmUser is root here) and the Debian packages
# slurmctld slurmd slurm-client munge (scripts/deps); skips otherwise.
# When something fails, the daemons' logs are printed.
. "$(dirname "$0")/lib.sh"
PATH=$PATH:/usr/sbin:/sbin # the daemons and mungekey live there
[ "$(id -u)" -eq 0 ] || skip "not root: slurmd must run jobs as root here"
for c in munged mungekey slurmctld slurmd sbatch sinfo scontrol; do
    command -v "$c" >/dev/null 2>&1 || skip "$c not installed (scripts/deps installs slurmctld slurmd slurm-client munge)"
done
need python3
tmpdir
chmod 755 "$T" # slurmstepd and the job read the corpus and write here
cd "$T"
mkdir -p munge state spool logs
chmod 700 munge

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

pids=()
stop_daemons() {
    local p
    for p in "${pids[@]+"${pids[@]}"}"; do kill "$p" 2>/dev/null; done
    for p in "${pids[@]+"${pids[@]}"}"; do
        for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$p" 2>/dev/null
    done
    pids=()
}
at_exit stop_daemons

show_logs() {
    local f
    for f in munge/munged.log logs/slurmctld.log logs/slurmd.log logs/*.log; do
        [ -s "$f" ] || continue
        echo "--- $f" >&2
        tail -25 "$f" >&2
    done
}
fail() {
    show_logs
    die "$@"
}

step "munged on a private socket"
mungekey --create --keyfile=munge/munge.key 2>/dev/null ||
    { dd if=/dev/urandom of=munge/munge.key bs=1 count=1024 2>/dev/null && chmod 600 munge/munge.key; }
sock=$T/munge/munge.socket
munged -F --force --socket="$sock" --key-file=munge/munge.key --pid-file="$T/munge/munged.pid" \
    --log-file="$T/munge/munged.log" --seed-file="$T/munge/munged.seed" 2>munge/munged.stderr &
pids+=($!)
for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.05; done
[ -S "$sock" ] || fail "munged did not create $sock"

step "slurmctld and slurmd with a private slurm.conf"
ctld_port=$(free_port)
slurmd_port=$(free_port)
while [ "$slurmd_port" = "$ctld_port" ]; do slurmd_port=$(free_port); done
cat >slurm.conf <<EOF
ClusterName=sktest
SlurmctldHost=localhost
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$sock
CredType=cred/munge
StateSaveLocation=$T/state
SlurmdSpoolDir=$T/spool
SlurmctldPidFile=$T/slurmctld.pid
SlurmdPidFile=$T/slurmd.pid
SlurmctldLogFile=$T/logs/slurmctld.log
SlurmdLogFile=$T/logs/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/builtin
SchedulerParameters=batch_sched_delay=0,sched_min_interval=0
ReturnToService=2
MessageTimeout=10
NodeName=localhost NodeAddr=127.0.0.1 CPUs=2 RealMemory=500 State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF=$T/slurm.conf
slurmctld -D -i -f "$SLURM_CONF" >logs/slurmctld.out 2>&1 &
pids+=($!)
slurmd -D -f "$SLURM_CONF" -N localhost >logs/slurmd.out 2>&1 &
pids+=($!)
state=
for _ in $(seq 150); do
    state=$(sinfo -h -n localhost -o %T 2>/dev/null || true)
    [ "$state" = idle ] && break
    sleep 0.1
done
[ "$state" = idle ] || fail "the node is not idle after 15 s (state '$state')"

"$SK_TOOLS/mkcorpus" c --samples 400 --per-dir 50 >/dev/null || fail "mkcorpus failed"
(cd c && find . -type f | sed 's|^\./||' | LC_ALL=C sort) >all.txt
export SK_INPUT=$T/c SHARDKIT=$SK_BIN SK_PACK_ARGS="--max-count 24"
unset SK_PARTS
script=$SK_ROOT/samples/slurm/pack.sbatch

array_run() { # array_run OUTDIR ARRAY: one sbatch --wait, then a check of its logs
    SK_OUT=$T/$1 sbatch --array="$2" --wait --quiet --chdir="$T" \
        --output="$T/logs/$1-%a.log" "$script" >logs/sbatch.out 2>&1 ||
        fail "sbatch --array=$2 for $1 failed: $(cat logs/sbatch.out)"
}

step "sbatch --array=0-3 --wait: pack --part auto"
t0=$(date +%s)
array_run out 0-3
for i in 0 1 2 3; do [ -f "out/manifest-$i.json" ] || fail "task $i wrote no out/manifest-$i.json"; done
echo "array run: $(( $(date +%s) - t0 )) s"
check_shards out

step "every corpus file in exactly one part"
for t in out/*.tar; do tar tf "$t"; done | LC_ALL=C sort >got.txt
[ "$(wc -l <got.txt)" = "$(wc -l <all.txt)" ] ||
    fail "the parts hold $(wc -l <got.txt) members, the corpus $(wc -l <all.txt) files"
cmp -s got.txt all.txt || fail "parts differ from the corpus: $(diff all.txt got.txt | head -5)"

step "index merge: continuous ordinals"
expect_ok "$SK_BIN" index merge out/manifest-*.json -o out/manifest.json
python3 - out <<'PY' || fail "merged manifest"
import json, sys
d = sys.argv[1]
m = json.load(open(d + "/manifest.json"))
o = 0
for s in m["shards"]:
    assert s["first_ordinal"] == o, (s, o)
    o += s["samples"]
assert o == m["totals"]["samples"] == 400, o
parts = [json.load(open(f"{d}/manifest-{i}.json")) for i in range(4)]
assert [(p["part"], p["parts"]) for p in parts] == [(i, 4) for i in range(4)]
assert all(p["totals"]["samples"] > 0 for p in parts)
PY

step "the same array again: byte-identical"
array_run again 0-3
expect_ok "$SK_BIN" index merge again/manifest-*.json -o again/manifest.json
diff -r out again >/dev/null || fail "a second array run differs: $(diff -rq out again | head -5)"

step "lose one shard of task 2, rerun that index alone with --resume"
victim=$(ls out/train-2-*.tar | head -1)
rm "$victim"
# Only task 2's lost shard, its index and its manifest (same bytes) may be
# written again; nothing else is touched.
stamp() {
    find out -type f ! -name "$(basename "$victim")" ! -name "$(basename "$victim").idx" \
        ! -name manifest-2.json -printf '%P %T@\n' | sort
}
before=$(stamp)
SK_PARTS=4 array_run out 2
cmp -s "$victim" "again/$(basename "$victim")" || fail "$victim: not restored byte-identical"
grep -q '"shards_resumed": [1-9]' logs/out-2.log || fail "the rerun did not keep its complete shards: $(cat logs/out-2.log)"
[ "$(stamp)" = "$before" ] || fail "the rerun of task 2 touched other files"
diff -r out again >/dev/null || fail "after the rerun, out differs from a clean run: $(diff -rq out again | head -5)"

step "a rerun of one index without SK_PARTS is refused, naming the cause"
if SK_OUT=$T/out sbatch --array=1 --wait --quiet --chdir="$T" --output="$T/logs/norerun.log" "$script" >/dev/null 2>&1; then
    fail "sbatch --array=1 without --parts succeeded"
fi
grep -q "SLURM_ARRAY_TASK_MIN=1" logs/norerun.log || fail "no clear refusal: $(cat logs/norerun.log)"
stop_daemons
echo "ok"
