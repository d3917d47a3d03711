"""ShardWriter: a key repeated after other samples is refused (as pack
never writes one twice), the command line's size strings, real seconds."""
import time

import pytest

import shardkit


def test_repeated_key_refused(tmp_path):
    with shardkit.ShardWriter(str(tmp_path / "w-%03d.tar"), max_count=2) as w:
        for k in ("a", "b", "c"):
            w.write({"__key__": k, "cls": 1})
        with pytest.raises(shardkit.InputError, match='key "a": written before'):
            w.write({"__key__": "a", "cls": 2})
        w.write({"__key__": "d", "cls": 1})    # the writer goes on
    assert w.stats["samples"] == 4
    with shardkit.Dataset(str(tmp_path)) as ds:
        assert [s["__key__"] for s in ds] == ["a", "b", "c", "d"]


@pytest.mark.parametrize("given,want", [("512M", 512 << 20), ("512MiB", 512 << 20),
                                        ("200MB", 200 * 10**6), ("1.5G", 3 << 29),
                                        ("64k", 65536), ("4096", 4096), (3e9, 3 * 10**9),
                                        (1 << 20, 1 << 20)])
def test_size_strings(given, want):
    assert shardkit.parse_size(given) == want


def test_maxsize_string_cuts_shards(tmp_path):
    with shardkit.ShardWriter(str(tmp_path / "w-%03d.tar"), maxsize="8k") as w:
        for i in range(10):
            w.write({"__key__": "k%02d" % i, "bin": bytes(3000)})
    assert w.stats["shards"] == 5     # two 3,000-byte samples (7 KiB with headers) a shard


@pytest.mark.parametrize("bad", ["12X", "M", "-5M", "", "1e3e", [1]])
def test_bad_sizes_refused(tmp_path, bad):
    with pytest.raises((shardkit.UsageError, TypeError)):
        shardkit.ShardWriter(str(tmp_path / "w-%03d.tar"), max_size=bad)


def test_seconds_is_real_time(tmp_path):
    with shardkit.ShardWriter(str(tmp_path / "w-%03d.tar")) as w:
        w.write({"__key__": "a", "cls": 1})
        time.sleep(0.3)
    assert 0.3 <= w.stats["seconds"] < 30, w.stats
