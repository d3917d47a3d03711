"""stats_check.py - the numbers `shardkit stats --json` must give, computed
independently from the packed input tree (sizes from the files, image
dimensions from Pillow, JSON keys from Python's json), and the document's
schema as docs/stats.md gives it.

    stats_check.py schema STATS.json
    stats_check.py tree TREE STATS.json     (the tree the dataset was packed from)
    stats_check.py html PAGE.html
"""
import json, os, sys
from html.parser import HTMLParser


class Bad(Exception):
    pass


def fail(msg):
    raise Bad(msg)


INT = int
SCHEMA = {
    "format": str, "version": INT, "dataset": str, "seconds": float,
    "shards": [{"url": str, "bytes": INT, "samples": INT, "members": INT, "first_ordinal": INT}],
    "balance": {"tolerance_pct": INT, "samples": {"min": INT, "median": INT, "max": INT},
                "bytes": {"min": INT, "median": INT, "max": INT}, "off_count": INT,
                "off": [{"url": str, "samples": INT, "bytes": INT, "samples_off_pct": float,
                         "bytes_off_pct": float, "last": bool}]},
    "totals": {"shards": INT, "samples": INT, "members": INT, "bytes": INT, "data_bytes": INT},
    "extensions": ("map", {"samples": INT, "members": INT, "bytes": INT,
                           "size": {"min": INT, "p50": INT, "p90": INT, "p99": INT, "max": INT,
                                    "mean": INT},
                           "histogram": [{"lt": (INT, type(None)), "count": INT}]}),
    "extensions_other": INT,
    "missing": ("map", {"samples": INT, "examples": [str]}),
    "keys": {"sorted": bool, "duplicates": INT, "examples": [str], "method": str},
}
IMAGES = {"ext": str, "count": INT, "bad": INT, "bytes": INT, "bytes_read": INT,
          "width": ({"min": INT, "p10": INT, "p50": INT, "p90": INT, "max": INT}, type(None)),
          "height": ({"min": INT, "p10": INT, "p50": INT, "p90": INT, "max": INT}, type(None)),
          "sizes": [{"width": INT, "height": INT, "count": INT}], "sizes_other": INT,
          "aspect": [{"le": (float, type(None)), "count": INT}], "points": [[INT]],
          "bad_examples": [{"key": str, "why": str}]}
JKEYS = {"members": INT, "bad": INT, "skipped": INT, "keys_other": INT, "top_level": ("map", INT),
         "keys": ("map", {"count": INT, "types": ("map", INT)})}


def check(v, s, where):
    if isinstance(s, tuple) and s and s[0] == "map":
        if not isinstance(v, dict):
            fail(f"{where}: not an object")
        for k, x in v.items():
            check(x, s[1], f"{where}.{k}")
    elif isinstance(s, tuple):
        for alt in s:
            try:
                check(v, alt, where)
                return
            except Bad:
                pass
        fail(f"{where}: {v!r} is none of {s}")
    elif isinstance(s, dict):
        if not isinstance(v, dict):
            fail(f"{where}: not an object")
        for k, x in s.items():
            if k not in v:
                fail(f"{where}: no '{k}'")
            check(v[k], x, f"{where}.{k}")
        extra = sorted(set(v) - set(s))
        if extra:
            fail(f"{where}: {extra} not in the documented schema")
    elif isinstance(s, list):
        if not isinstance(v, list):
            fail(f"{where}: not an array")
        for i, x in enumerate(v):
            check(x, s[0], f"{where}[{i}]")
    elif s is bool:
        if not isinstance(v, bool):
            fail(f"{where}: {v!r} not a boolean")
    elif s is float:
        if not isinstance(v, (int, float)) or isinstance(v, bool):
            fail(f"{where}: {v!r} not a number")
    elif s is int:
        if not isinstance(v, int) or isinstance(v, bool):
            fail(f"{where}: {v!r} not an integer")
    elif s is type(None):
        if v is not None:
            fail(f"{where}: {v!r} not null")
    elif not isinstance(v, s):
        fail(f"{where}: {v!r} not {s.__name__}")


def documented_keys():
    """The top-level keys docs/stats.md's JSON table names (its first
    column, between backquotes), so the schema here and the page agree."""
    import re
    page = os.path.join(os.path.dirname(__file__), "..", "..", "..", "docs", "stats.md")
    text = open(page, encoding="utf-8").read()
    table = text.split("## JSON (`--json`)", 1)[1].split("\n## ", 1)[0]
    keys = set()
    for line in table.splitlines():
        if line.startswith("| `"):
            keys.update(re.findall(r"`([a-z_]+)`", line.split("|")[1]))
    return keys


def schema(doc):
    want = set(SCHEMA) | {"images", "json_keys"}
    if documented_keys() != want:
        fail(f"docs/stats.md's JSON table names {sorted(documented_keys() ^ want)} "
             f"differently from this schema")
    top = {k: v for k, v in doc.items() if k not in ("images", "json_keys")}
    check(top, SCHEMA, "stats")
    if doc["format"] != "shardkit-stats" or doc["version"] != 1:
        fail("format/version")
    if "images" in doc:
        check(doc["images"], IMAGES, "stats.images")
    if "json_keys" in doc:
        check(doc["json_keys"], JKEYS, "stats.json_keys")


def tree(root, doc):
    from PIL import Image
    samples = {}
    for d, _, files in os.walk(root):
        for f in files:
            p = os.path.join(d, f)
            rel = os.path.relpath(p, root)
            base = os.path.basename(rel)
            key = os.path.join(os.path.dirname(rel), base.split(".", 1)[0])
            ext = base.split(".", 1)[1].lower()
            samples.setdefault(key, {})[ext] = p
    t = doc["totals"]
    members = sum(len(m) for m in samples.values())
    data = sum(os.path.getsize(p) for m in samples.values() for p in m.values())
    want = {"samples": len(samples), "members": members, "data_bytes": data}
    for k, v in want.items():
        if t[k] != v:
            fail(f"totals.{k}: {t[k]}, the tree has {v}")
    if t["shards"] != len(doc["shards"]):
        fail("totals.shards")
    for s in doc["shards"]:
        if os.path.getsize(s["url"]) != s["bytes"]:
            fail(f"{s['url']}: bytes {s['bytes']}, the file has {os.path.getsize(s['url'])}")
    if t["bytes"] != sum(s["bytes"] for s in doc["shards"]):
        fail("totals.bytes is not the sum of the shards'")
    if sum(s["samples"] for s in doc["shards"]) != len(samples):
        fail("the shards' samples do not add up")
    exts = {}
    for m in samples.values():
        for e, p in m.items():
            x = exts.setdefault(e, {"samples": 0, "members": 0, "bytes": 0, "sizes": []})
            x["samples"] += 1
            x["members"] += 1
            x["bytes"] += os.path.getsize(p)
            x["sizes"].append(os.path.getsize(p))
    if sorted(exts) != sorted(doc["extensions"]):
        fail(f"extensions {sorted(doc['extensions'])}, the tree has {sorted(exts)}")
    for e, x in exts.items():
        got = doc["extensions"][e]
        for k in ("samples", "members", "bytes"):
            if got[k] != x[k]:
                fail(f"extensions.{e}.{k}: {got[k]}, the tree has {x[k]}")
        sz = sorted(x["sizes"])
        if got["size"]["min"] != sz[0] or got["size"]["max"] != sz[-1]:
            fail(f"extensions.{e}.size min/max")
        p50 = sz[(len(sz) + 1) // 2 - 1]
        if abs(got["size"]["p50"] - p50) > max(1, p50 / 16):
            fail(f"extensions.{e}.size.p50 {got['size']['p50']}, the tree's {p50}")
        if sum(b["count"] for b in got["histogram"]) != x["members"]:
            fail(f"extensions.{e}.histogram does not count every member")
    for e, x in exts.items():
        miss = len(samples) - x["samples"]
        got = doc["missing"].get(e)
        if miss and (not got or got["samples"] != miss):
            fail(f"missing.{e}: {got}, the tree has {miss} samples without it")
        if not miss and got:
            fail(f"missing.{e} listed, but no sample lacks it")
        if miss:
            for k in got["examples"]:
                if e in samples.get(k, {e: 1}):
                    fail(f"missing.{e}: example {k} has it")
    if "images" in doc:
        im = doc["images"]
        pairs = {}
        n = 0
        for m in samples.values():
            for e, p in m.items():
                if e in ("jpg", "jpeg"):
                    n += 1
                    with Image.open(p) as i:
                        pairs[i.size] = pairs.get(i.size, 0) + 1
        got = {(s["width"], s["height"]): s["count"] for s in im["sizes"]}
        if im["count"] != n or im["bad"] != 0:
            fail(f"images: {im['count']} ({im['bad']} bad), the tree has {n}")
        if got != pairs:
            fail(f"images.sizes differ from Pillow's: {sorted(set(got.items()) ^ set(pairs.items()))[:5]}")
        ws = sorted(w for (w, h), c in pairs.items() for _ in range(c))
        if im["width"]["min"] != ws[0] or im["width"]["max"] != ws[-1] or \
                im["width"]["p50"] != ws[(len(ws) + 1) // 2 - 1]:
            fail(f"images.width {im['width']}, Pillow's min/p50/max {ws[0]}/{ws[len(ws)//2]}/{ws[-1]}")
        hs = sorted(h for (w, h), c in pairs.items() for _ in range(c))
        if (im["height"]["min"], im["height"]["p50"], im["height"]["max"]) != \
                (hs[0], hs[(len(hs) + 1) // 2 - 1], hs[-1]):
            fail(f"images.height {im['height']}, Pillow's min/p50/max {hs[0]}/{hs[len(hs)//2]}/{hs[-1]}")
        # aspect ratios: each image in the first bucket whose bound holds
        edges = [a["le"] for a in im["aspect"]]
        want = [0] * len(edges)
        for (w, h), c in pairs.items():
            want[next(i for i, e in enumerate(edges) if e is None or w / h <= e)] += c
        if [a["count"] for a in im["aspect"]] != want:
            fail(f"images.aspect {[a['count'] for a in im['aspect']]}, Pillow's sizes give {want}")
        if im["bytes_read"] >= im["bytes"]:
            fail(f"images: read {im['bytes_read']} of {im['bytes']} bytes: not headers only")
    if "json_keys" in doc:
        jk = doc["json_keys"]
        keys, top = {}, {}
        nj = 0
        kind = {bool: "bool", int: "integer", float: "real", str: "string",
                list: "array", dict: "object", type(None): "null"}
        for m in samples.values():
            if "json" in m:
                nj += 1
                with open(m["json"], "rb") as f:
                    v = json.load(f)
                top[kind[type(v)]] = top.get(kind[type(v)], 0) + 1
                for k, x in (v.items() if isinstance(v, dict) else ()):
                    t = kind[type(x)]
                    e = keys.setdefault(k, {"count": 0, "types": {}})
                    e["count"] += 1
                    e["types"][t] = e["types"].get(t, 0) + 1
        if jk["top_level"] != top:
            fail(f"json_keys.top_level {jk['top_level']}, the tree has {top}")
        if jk["members"] != nj or jk["keys"] != keys:
            fail(f"json_keys: {jk['members']} {jk['keys']}, the tree has {nj} {keys}")


class Strict(HTMLParser):
    VOID = {"meta", "br", "img", "input", "hr", "link", "rect", "line", "circle", "path"}

    def __init__(self):
        super().__init__()
        self.stack = []
        self.tags = set()

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        for k, v in attrs:
            if k in ("src", "href") and v and ("//" in v or ":" in v):
                fail(f"<{tag} {k}={v}>: a reference out of the page")
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.tags.add(tag)

    def handle_endtag(self, tag):
        if tag in self.VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            fail(f"</{tag}> closes {self.stack[-1:] or 'nothing'}")
        self.stack.pop()


def html(path):
    text = open(path, encoding="utf-8").read()
    if "http" in text.lower():
        fail("the page names http")
    if not text.startswith("<!DOCTYPE html>"):
        fail("no doctype")
    p = Strict()
    p.feed(text)
    p.close()
    if p.stack:
        fail(f"unclosed: {p.stack}")
    for t in ("script", "iframe", "object", "embed", "link"):
        if t in p.tags:
            fail(f"the page has <{t}>")
    if "svg" not in p.tags:
        fail("no inline SVG plot")


def main():
    what = sys.argv[1]
    if what == "schema":
        schema(json.load(open(sys.argv[2])))
    elif what == "tree":
        tree(sys.argv[2], json.load(open(sys.argv[3])))
    elif what == "html":
        html(sys.argv[2])
    else:
        fail("usage")


if __name__ == "__main__":
    try:
        main()
    except Bad as e:
        print("FAIL:", e)
        sys.exit(1)
