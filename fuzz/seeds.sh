#!/usr/bin/env bash
# fuzz/seeds.sh BUILD OUTDIR - seed corpora for the fuzz targets, made by the
# built shardkit from a small generated corpus (real shards, indexes,
# manifests, zstd shards, JPEGs) plus hand-written S3 XML, brace patterns and
# names.  One directory per target under OUTDIR.
set -euo pipefail
B=$1 O=$2
S=$(cd "$(dirname "$0")/.." && pwd)
rm -rf "$O" && mkdir -p "$O"
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
"$B/tools/mkcorpus" "$t/c" --samples 12 >/dev/null
"$B/shardkit" pack "$t/c" -o "$t/p/s-%02d.tar" --max-count 4 -q
"$B/shardkit" pack "$t/c" -o "$t/z/s-%02d.tar.zst" --max-count 6 --compress zstd -q
mkdir -p "$O"/{tar,index,manifest,manifest_table,s3_xml,zstd_seek,brace,names,image,urllist,robots,jpeg_head,mount_tree}
# a manifest of 64 shards has a lookup table beside it
"$B/tools/mkcorpus" "$t/c64" --samples 64 >/dev/null
"$B/shardkit" pack "$t/c64" -o "$t/l/s-%02d.tar" --max-count 1 -q
cp "$t"/l/manifest.json.lookup "$O/manifest_table/t.lookup"
cp "$t"/p/s-00.tar "$O/tar/plain.tar"
python3 - "$O/tar" <<'PY'
import io, sys, tarfile
d = sys.argv[1]
for fmt, name in ((tarfile.PAX_FORMAT, "pax.tar"), (tarfile.GNU_FORMAT, "gnu.tar")):
    with tarfile.open(f"{d}/{name}", "w", format=fmt) as t:
        for n in ("a/" + "long" * 40 + ".txt", "../up/b.json", "c.d.e.jpg"):
            ti = tarfile.TarInfo(n); ti.size = 3; t.addfile(ti, io.BytesIO(b"abc"))
PY
cp "$t"/p/s-00.tar.idx "$O/index/s-00.idx"
cp "$t"/z/s-00.tar.zst.idx "$O/index/z-00.idx"
cp "$t"/p/s-00.tar.idx "$O/mount_tree/s-00.idx"
cp "$t"/p/manifest.json "$O/manifest/m.json"
cp "$t"/z/s-00.tar.zst "$O/zstd_seek/s.tar.zst"
cp "$(find "$t/c" -name '*.jpg' | head -1)" "$O/image/a.jpg"
cp "$O/image/a.jpg" "$O/jpeg_head/a.jpg"
cat >"$O/s3_xml/list.xml" <<'X'
<?xml version="1.0" encoding="UTF-8"?><ListBucketResult><IsTruncated>true</IsTruncated><NextContinuationToken>t1</NextContinuationToken><Contents><Key>a/b.tar</Key><Size>10</Size><ETag>"e"</ETag><ChecksumCRC32C>AAAAAA==</ChecksumCRC32C></Contents></ListBucketResult>
X
cat >"$O/s3_xml/error.xml" <<'X'
<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>
X
cat >"$O/s3_xml/mpu.xml" <<'X'
<InitiateMultipartUploadResult><Bucket>b</Bucket><Key>k</Key><UploadId>u-1</UploadId></InitiateMultipartUploadResult>
X
printf 'train-{000000..000009}.tar' >"$O/brace/range"
# URL lists: the first byte picks the format (txt, csv, tsv, jsonl)
printf '\000http://a/1.jpg\nhttps://b/2.jpg\n' >"$O/urllist/txt"
printf '\001url,caption,a\r\n"http://a/1.jpg","a ""cat"",\nsat",x\nhttp://b,,\n' >"$O/urllist/csv"
printf '\002url\tcaption\ta\nhttp://a\tt\t1\n' >"$O/urllist/tsv"
printf '\003{"url":"http://a","caption":"c","a":[1,{"b":null}]}\n{"url":7}\n' >"$O/urllist/jsonl"
mkdir -p "$O/sagemaker"
printf '[{"prefix": "s3://bucket/data/"}, "a/1.jpg", "a/1.cls", "b/2.jpg"]' >"$O/sagemaker/manifestfile"
printf '{"source-ref": "s3://bucket/img/1.jpg", "class": 3, "mask-ref": "s3://other/m/1.png"}\n\n{"source-ref": "s3://bucket/img/2.jpg", "meta": {"a": [1, "x"]}}\n' >"$O/sagemaker/augmented"
printf 'googlebot: noindex, noai\n' >"$O/robots/token"
printf 'Sun, 06 Nov 1994 08:49:37 GMT' >"$O/robots/date"
printf '{a,b}-{0..3}-{x,{y,z}}.tar' >"$O/brace/nested"
printf 'a/b/c.txt' >"$O/names/ok"
printf '../../x' >"$O/names/up"
printf '/abs/y' >"$O/names/abs"
printf 'a//b' >"$O/names/empty"
mkdir -p "$O/recordio"
python3 - "$O/recordio" "$t/p/s-00.tar" <<'PY'
import struct, sys
d, tar = sys.argv[1], open(sys.argv[2], "rb").read()
M = struct.pack("<I", 0xced7230a)
def part(data, flag):
    return M + struct.pack("<I", len(data) | flag << 29) + data + b"\0" * (-len(data) % 4)
# the first two bytes pick the fuzz target's piece sizes
open(f"{d}/whole", "wb").write(b"\x03\x40" + part(tar, 0) + part(b"abcde", 0))
open(f"{d}/multi", "wb").write(b"\x00\x05" + part(b"1234", 1) + part(b"", 2) + part(b"xyz", 3) + part(b"", 0))
PY
mkdir -p "$O/reader_state"
python3 - "$O/reader_state" <<'PY'
import struct, sys
d = sys.argv[1]
# sound states of the target's own job (slot 0 of 1, 2 shards, seed 0): at the
# start, in the first shard, in the second; then the same with a buffer byte
for i, (shard_pos, ordinal, yielded) in enumerate(((0, 0, 0), (0, 5, 5), (1, 3, 15))):
    for tail in (0, 4):
        st = struct.pack("<IIIIQQQQQQQQ", 0x534B5253, 1, 0, 1, 2, 0, 0, 0, tail & 7, yielded, shard_pos, ordinal)
        open(f"{d}/s{i}-{tail}", "wb").write(st + bytes([tail]))
PY
# unpack: compressed shards, and pieces back to back (the first byte picks
# the fuzz target's piece size)
mkdir -p "$O/unpack"
for z in "gzip -c" "bzip2 -c" "xz -c" "xz --format=lzma -c"; do
    n=${z%% *}; [ "$z" = "xz --format=lzma -c" ] && n=lzma
    command -v "${z%% *}" >/dev/null || continue
    { printf '\x09'; $z "$t/p/s-00.tar"; } >"$O/unpack/$n"
    { printf '\x02'; $z "$t/p/s-00.tar"; cat "$t/p/s-01.tar"; } >"$O/unpack/$n-tar"
    { printf '\x40'; $z "$t/p/s-00.tar"; cat "$t/z/s-00.tar.zst"; } >"$O/unpack/$n-zst"
done
# HTTP answers' header lines: S3's HEAD, a web server's ranged GET after a
# redirect (the redirect's headers forgotten at the next status line)
mkdir -p "$O/http_resp" "$O/stats_json"
printf 'HTTP/1.1 200 OK\r\nx-amz-id-2: abc\r\nETag: "9b2cf535f27731c974343645a3985328"\r\nx-amz-checksum-crc32c: yZRlqg==\r\nx-amz-meta-shardkit-etag: 0a1b2c-3\r\nContent-Length: 10240\r\n\r\n' >"$O/http_resp/s3_head"
printf 'HTTP/1.1 302 Found\r\nLocation: https://cdn/x.tar\r\nContent-Length: 0\r\nETag: "old"\r\n\r\nHTTP/2 206\r\ncontent-range: bytes 0-511/10240\r\ncontent-length: 512\r\netag: W/"5e-1"\r\nlast-modified: Sun, 06 Nov 1994 08:49:37 GMT\r\n\r\n' >"$O/http_resp/redirect_206"
printf '\xc8HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 18446744073709551616\r\nETag: ""\r\n' >"$O/http_resp/odd"
# .json members, cut at 0xFF bytes
printf '{"caption":"a cat","width":640,"nsfw":0.1,"tags":["x"],"meta":{"a":null},"ok":true}\xff[1,2]\xff"s"\xffnot json\xff{"caption":"b","ok":false}' >"$O/stats_json/members"
printf '{"a":1,"a":2,"\\u00e9":3.5,"":null}' >"$O/stats_json/dup_keys"
