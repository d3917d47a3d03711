"""pil_resize.py - the anchor of bench_images.sh: what a Python user does
without shardkit.  Walks a corpus directory in key order and writes one tar
with every .jpg resized by Pillow (EXIF orientation applied, the smaller
side to SIZE: img2dataset's keep_ratio, BOX filter to shrink, as our area
filter), re-encoded at quality 95; other members copied.  One process, as
a single img2dataset worker.  Run with Debian's /usr/bin/python3 (Pillow
from python3-pil).

usage: pil_resize.py CORPUS OUT.tar SIZE
"""
import io
import os
import sys
import tarfile

from PIL import Image, ImageOps


def main(corpus, out, size):
    size = int(size)
    names = []
    for d, _, files in os.walk(corpus):
        for f in files:
            names.append(os.path.relpath(os.path.join(d, f), corpus))
    names.sort()
    with tarfile.open(out, "w", format=tarfile.USTAR_FORMAT) as t:
        for name in names:
            with open(os.path.join(corpus, name), "rb") as f:
                data = f.read()
            if name.endswith(".jpg"):
                im = ImageOps.exif_transpose(Image.open(io.BytesIO(data)))
                w, h = im.size
                f = size / min(w, h)
                im = im.resize((max(1, round(w * f)), max(1, round(h * f))),
                               Image.Resampling.BOX if f < 1 else Image.Resampling.BILINEAR)
                b = io.BytesIO()
                im.save(b, "JPEG", quality=95)
                data = b.getvalue()
            ti = tarfile.TarInfo(name)
            ti.size = len(data)
            t.addfile(ti, io.BytesIO(data))


if __name__ == "__main__":
    main(*sys.argv[1:4])
