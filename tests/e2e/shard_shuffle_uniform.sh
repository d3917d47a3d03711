#!/usr/bin/env bash
# test: long (a minute or more: started early, so it does not run last)
# shard_shuffle_uniform.sh - the global shuffle is a uniform permutation:
# 20 samples shuffled with 2000 seeds (with a tiny --shuffle-mem, so the
# samples scatter over many buckets and an oversized bucket is split
# again), then a chi-square test of the 20x20 table "sample i landed at
# position j" against the uniform expectation (100 per cell).  The seeds
# are fixed, so the test is deterministic; the critical value is that of
# alpha = 0.001 (Wilson-Hilferty approximation), no scipy needed.
. "$(dirname "$0")/lib.sh"
need python3
tmpdir T
cd "$T"
mkdir src
for i in $(seq -w 0 19); do echo "sample $i" > "src/s$i.txt"; done
(cd src && tar --format=ustar -cf ../in.tar s*.txt)
python3 - "$SK_BIN" <<'PY' || die "shuffle is not uniform"
import math, subprocess, sys
sk = sys.argv[1]
N, SEEDS = 20, 2000
count = [[0] * N for _ in range(N)]
for seed in range(SEEDS):
    out = subprocess.run([sk, "shard", "in.tar", "-o", "-", "--shuffle", "--seed", str(seed),
                          "--shuffle-mem", "4K", "--tmp-dir", "."],
                         check=True, stdout=subprocess.PIPE).stdout
    names = [out[i:i + 100].split(b"\0")[0] for i in range(0, N * 1024, 1024)]
    order = [int(n[1:3]) for n in names]
    assert sorted(order) == list(range(N)), order
    for pos, s in enumerate(order):
        count[s][pos] += 1
e = SEEDS / N
stat = sum((c - e) ** 2 / e for row in count for c in row)
df = (N - 1) ** 2
z = 3.090  # alpha = 0.001
crit = df * (1 - 2 / (9 * df) + z * math.sqrt(2 / (9 * df))) ** 3
first = sum((count[s][0] - e) ** 2 / e for s in range(N))
print("chi2 = %.1f (df %d, critical %.1f); first position chi2 = %.1f (critical 43.8)"
      % (stat, df, crit, first))
assert stat < crit and first < 43.8
# and not suspiciously perfect (a fixed rotation would give stat = huge,
# a degenerate generator near 0)
assert stat > df * 0.5
PY
echo "shuffle uniform ok"
