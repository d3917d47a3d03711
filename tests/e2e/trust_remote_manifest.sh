#!/usr/bin/env bash
# trust_remote_manifest.sh - a manifest read from s3:// names objects, never
# files on this machine: one whose shard URL is a local absolute path or
# climbs out of its prefix with '..' is refused by get, cat, verify and
# shard (it used to make them read the local file, and verify called it
# sound).  Against moto_server.
. "$(dirname "$0")/lib.sh"
. "$SK_ROOT/tests/helpers/moto.sh"
s3_test_begin python3
s3_serve bkt
"$SK_TOOLS/mkcorpus" "$T/c" --samples 20 >/dev/null || die mkcorpus
expect_ok "$SK_BIN" pack "$T/c" -o "$T/ds/s-%02d.tar"
# a local shard the hostile manifest points at (it exists: reading it would succeed)
cp "$T/ds/s-00.tar" "$T/local.tar"
cp "$T/ds/s-00.tar.idx" "$T/local.tar.idx"
for bad in "$T/local.tar" "../../outside/s-00.tar" "file://$T/local.tar"; do
    step "a remote manifest naming '$bad'"
    python3 - "$T/ds/manifest.json" "$T/evil.json" "$bad" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
m["shards"][0]["url"] = sys.argv[3]
m["shards"][0]["index"] = sys.argv[3] + ".idx"
json.dump(m, open(sys.argv[2], "w"), indent=2)
PY
    aws s3 cp --quiet "$T/evil.json" s3://bkt/m/manifest.json
    aws s3 cp --quiet "$T/ds/s-00.tar" s3://bkt/m/s-00.tar
    for cmd in "get s3://bkt/m/manifest.json #0" "cat --keys s3://bkt/m/manifest.json" \
               "verify s3://bkt/m/manifest.json" "shard s3://bkt/m/manifest.json -o $T/o/x-%02d.tar"; do
        # shellcheck disable=SC2086
        run "$SK_BIN" ${cmd%% *} --endpoint-url "$MOTO_URL" ${cmd#* }
        [ "$RC" -ne 0 ] || die "'${cmd%% *}' accepted a remote manifest naming '$bad'"
        grep -qE "only s3:// URLs|not a safe relative name" "$ERR" ||
            die "'${cmd%% *}': wrong reason: $(cat "$ERR")"
    done
done
echo "a remote manifest reads only remote shards"
