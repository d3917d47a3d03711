"""images.py - the image side of tests/e2e/images.sh, run with Debian's
python3 (Pillow and numpy from apt).

  images.py make DIR          writes DIR/in.tar: JPEGs of every shape the
                              test needs (landscape, portrait, square,
                              1 pixel wide, small, EXIF-rotated, grey, CMYK,
                              progressive) with .json members on some
  images.py check OUT MODE SIZE ONLY_IF_BIGGER
                              reads OUT (a shard shardkit wrote from in.tar)
                              and checks every image's size against
                              img2dataset's rule computed here, independently,
                              and its pixels against Pillow's resize of the
                              same upright source (PSNR >= 30 dB)
  images.py meta OUT          every .json carries the four size keys and
                              keeps the keys it had
  images.py hostile DIR       writes DIR/bad.tar: truncated, not-a-JPEG and
                              decompression-bomb members beside a good one
Exit status 0 when all hold; a message naming the sample otherwise.
"""
import io
import json
import math
import sys
import tarfile

import numpy as np
from PIL import Image, ImageOps


def gradient(w, h, mode="RGB"):
    x = np.linspace(0, 255, w, dtype=np.float64)[None, :].repeat(h, 0)
    y = np.linspace(0, 255, h, dtype=np.float64)[:, None].repeat(w, 1)
    if mode == "L":
        return Image.fromarray(((x + y) / 2).astype(np.uint8), "L")
    rgb = np.stack([x, y, (x * 0.5 + 64 + np.sin(y / 9) * 40)], axis=2).clip(0, 255)
    return Image.fromarray(rgb.astype(np.uint8), "RGB")


def jpeg(im, **kw):
    b = io.BytesIO()
    im.save(b, "JPEG", quality=95, **kw)
    return b.getvalue()


def rotated_exif(w, h, orientation):
    """A JPEG whose stored pixels are the upright image turned so that
    the EXIF orientation brings it back."""
    upright = gradient(w, h)
    undo = {6: Image.Transpose.ROTATE_90, 8: Image.Transpose.ROTATE_270,
            3: Image.Transpose.ROTATE_180}[orientation]
    stored = upright.transpose(undo)
    exif = Image.Exif()
    exif[0x0112] = orientation
    return jpeg(stored, exif=exif.tobytes())


SAMPLES = {  # key: (jpeg bytes, json or None)
    "s/land": (lambda: jpeg(gradient(640, 480)), {"caption": "a landscape"}),
    "s/port": (lambda: jpeg(gradient(300, 700)), None),
    "s/square": (lambda: jpeg(gradient(500, 500)), None),
    "s/thin": (lambda: jpeg(gradient(1, 300)), None),
    "s/small": (lambda: jpeg(gradient(60, 40)), {"n": 1}),
    "s/exif6": (lambda: rotated_exif(400, 300, 6), None),
    "s/exif8": (lambda: rotated_exif(360, 240, 8), None),
    "s/grey": (lambda: jpeg(gradient(420, 300, "L")), None),
    "s/cmyk": (lambda: jpeg(gradient(400, 320).convert("CMYK")), None),
    "s/prog": (lambda: jpeg(gradient(520, 390), progressive=True), None),
}


def make(d):
    with tarfile.open(f"{d}/in.tar", "w", format=tarfile.USTAR_FORMAT) as t:
        for key in sorted(SAMPLES):
            make_jpg, meta = SAMPLES[key]
            data = make_jpg()
            members = [("jpg", data)] + ([("json", json.dumps(meta).encode())] if meta else [])
            for ext, blob in members:
                ti = tarfile.TarInfo(f"{key}.{ext}")
                ti.size = len(blob)
                t.addfile(ti, io.BytesIO(blob))
            Image.open(io.BytesIO(data)).load()  # Pillow itself reads every input


def expected(w, h, mode, s, only_if_bigger):
    """img2dataset's rule: (resized w, h), (final w, h)."""
    small, large = min(w, h), max(w, h)
    if mode == "no":
        return (w, h), (w, h)
    side = small if mode in ("keep_ratio", "center_crop") else large
    if only_if_bigger and side <= s:
        return (w, h), (w, h)
    f = s / side
    rw = s if w == side else max(1, int(math.floor(w * f + 0.5)))
    rh = s if h == side else max(1, int(math.floor(h * f + 0.5)))
    if mode in ("center_crop", "border"):
        return (rw, rh), (s, s)
    return (rw, rh), (rw, rh)


def reference(src, mode, s, only_if_bigger):
    """Pillow's version of the same job, from the upright source."""
    im = ImageOps.exif_transpose(Image.open(io.BytesIO(src))).convert("RGB")
    (rw, rh), (cw, ch) = expected(im.width, im.height, mode, s, only_if_bigger)
    if (rw, rh) != im.size:
        im = im.resize((rw, rh), Image.Resampling.BOX if rw < im.width else Image.Resampling.BILINEAR)
    if (cw, ch) != (rw, rh):
        canvas = Image.new("RGB", (cw, ch))
        canvas.paste(im, ((cw - rw) // 2, (ch - rh) // 2))  # crop: negative offsets
        im = canvas
    return im


def psnr(a, b):
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    mse = ((a - b) ** 2).mean()
    return 99.0 if mse == 0 else 10 * math.log10(255 * 255 / mse)


def members(path):
    out = {}
    with tarfile.open(path) as t:
        for m in t.getmembers():
            out[m.name] = t.extractfile(m).read()
    return out


def check(out, mode, s, only_if_bigger):
    s, only_if_bigger = int(s), only_if_bigger == "1"
    got = members(out)
    src = {}
    with tarfile.open(out.rsplit("/", 2)[0] + "/in.tar") as t:
        for m in t.getmembers():
            src[m.name] = t.extractfile(m).read()
    bad, worst = [], 99.0
    for name in sorted(src):
        if name.endswith(".jpg") and name not in got:
            up = ImageOps.exif_transpose(Image.open(io.BytesIO(src[name])))
            (rw, rh), _ = expected(up.width, up.height, mode, s, only_if_bigger)
            if max(rw, rh) <= 65500:  # only an impossible size may drop a sample
                bad.append(f"{name}: missing from the output")
    for name, data in sorted(got.items()):
        if not name.endswith(".jpg"):
            continue
        im = Image.open(io.BytesIO(data))
        if mode != "no" and 0x0112 in im.getexif() and im.getexif()[0x0112] != 1:
            bad.append(f"{name}: output still carries EXIF orientation")
        up = ImageOps.exif_transpose(Image.open(io.BytesIO(src[name])))
        if mode == "no":
            up = Image.open(io.BytesIO(src[name]))  # untouched: as stored
        _, want = expected(up.width, up.height, mode, s, only_if_bigger)
        if im.size != want:
            bad.append(f"{name}: {im.size}, want {want} (source {up.size}, {mode} {s})")
            continue
        if mode == "no" and data != src[name]:
            bad.append(f"{name}: --resize-mode no changed the bytes")
        if mode == "no":
            continue
        ref = reference(src[name], mode, s, only_if_bigger)
        mine = im.convert("RGB")
        p = psnr(mine, ref)
        worst = min(worst, p)
        if p < 30:
            bad.append(f"{name}: PSNR {p:.1f} dB against Pillow's resize")
    if worst < 99:
        print(f"{mode} {s} only_if_bigger={int(only_if_bigger)}: lowest PSNR {worst:.1f} dB")
    for b in bad:
        print(b)
    return 1 if bad else 0


def meta(out):
    got = members(out)
    bad = []
    for name, data in sorted(got.items()):
        if not name.endswith(".jpg"):
            continue
        key = name[:-4]
        if key + ".json" not in got:
            bad.append(f"{key}: no .json")
            continue
        j = json.loads(got[key + ".json"])
        im = Image.open(io.BytesIO(data))
        if (j.get("width"), j.get("height")) != im.size:
            bad.append(f"{key}: json says {j.get('width')}x{j.get('height')}, image is {im.size}")
        if "original_width" not in j or "original_height" not in j:
            bad.append(f"{key}: no original size")
        if key == "s/land" and j.get("caption") != "a landscape":
            bad.append(f"{key}: the keys it had were lost: {j}")
        if key == "s/exif6" and (j["original_width"], j["original_height"]) != (400, 300):
            bad.append(f"{key}: original size not upright: {j}")
    for b in bad:
        print(b)
    return 1 if bad else 0


def hostile(d):
    """DIR/bad.tar: a good sample, a truncated JPEG, a file that is not a
    JPEG at all, and a 'bomb' (a small JPEG whose frame header claims
    30000x30000 pixels)."""
    good = jpeg(gradient(320, 240))
    trunc = good[: len(good) // 2]
    bomb = bytearray(jpeg(gradient(64, 48)))
    i = bomb.find(b"\xff\xc0")
    bomb[i + 5:i + 9] = (30000).to_bytes(2, "big") + (30000).to_bytes(2, "big")
    with tarfile.open(f"{d}/bad.tar", "w", format=tarfile.USTAR_FORMAT) as t:
        for key, blob in (("b/bomb", bytes(bomb)), ("b/good", good), ("b/notjpeg", b"hello, world"),
                          ("b/trunc", trunc)):
            for ext, data in (("jpg", blob), ("cls", b"1")):
                ti = tarfile.TarInfo(f"{key}.{ext}")
                ti.size = len(data)
                t.addfile(ti, io.BytesIO(data))


if __name__ == "__main__":
    if sys.argv[1] == "hostile":
        hostile(sys.argv[2])
        sys.exit(0)
    cmd = sys.argv[1]
    if cmd == "make":
        make(sys.argv[2])
        sys.exit(0)
    if cmd == "check":
        sys.exit(check(*sys.argv[2:6]))
    if cmd == "meta":
        sys.exit(meta(sys.argv[2]))
    sys.exit(f"images.py: unknown command {cmd}")
