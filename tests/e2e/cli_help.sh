#!/usr/bin/env bash
# cli_help.sh - the command line behaves alike in every tool:
# `shardkit help CMD` prints exactly `shardkit CMD --help` (and `-h`), exit 0;
# `shardkit -h`, `--help` and `help` print the tool list; an unknown option,
# or one missing its value, gets one message and exit 2 in every tool.
. "$(dirname "$0")/lib.sh"
tmpdir T
for c in pack index get cat upload shard verify stats serve; do
    step "$c"
    "$SK_BIN" help "$c" >"$T/help" || die "shardkit help $c failed"
    "$SK_BIN" "$c" --help >"$T/long" || die "shardkit $c --help failed"
    "$SK_BIN" "$c" -h >"$T/short" || die "shardkit $c -h failed"
    cmp -s "$T/help" "$T/long" || die "help $c differs from $c --help"
    cmp -s "$T/help" "$T/short" || die "$c -h differs from $c --help"
    assert_contains "$T/help" "usage: shardkit $c"
    run "$SK_BIN" "$c" --no-such-option x y
    assert_eq "$RC" 2 "$c: exit status of an unknown option"
    assert_eq "$(cat "$ERR")" "shardkit $c: unknown option '--no-such-option' (see 'shardkit $c --help')" \
        "$c: the message of an unknown option"
done
step "an option missing its value"
run "$SK_BIN" pack --max-size
assert_eq "$RC" 2 "exit status"
assert_contains "$ERR" "shardkit pack: option '--max-size' needs a value"
step "the tool list"
for h in -h --help help; do
    expect_ok "$SK_BIN" $h
    assert_contains "$OUT" "commands:"
done
run "$SK_BIN" help nosuch
assert_eq "$RC" 2 "help of a command that does not exist"
echo "one command line"
