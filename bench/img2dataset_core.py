"""img2dataset_core.py - the anchors of bench_images_photos.sh: what one
img2dataset worker does per image, in one process.

  img2dataset_core.py opencv SRC_DIR OUT.tar SIZE   OpenCV decode, cv2.resize
                                                    INTER_AREA to keep_ratio, cv2.imencode
                                                    quality 95 (img2dataset's core)
  img2dataset_core.py pil SRC_DIR OUT.tar SIZE      Pillow with draft() (DCT scaling
                                                    on decode), then resize and save q95
  img2dataset_core.py pil-full SRC_DIR OUT.tar SIZE Pillow decoding every pixel (EXIF
                                                    transposed), BOX resize, save q95
Other members are copied; the output is one tar, as a shard would be.
Run with Debian's /usr/bin/python3 (python3-opencv, python3-pil).
"""
import io
import os
import sys
import tarfile


def members(src):
    names = []
    for d, _, files in os.walk(src):
        for f in files:
            names.append(os.path.relpath(os.path.join(d, f), src))
    return sorted(names)


def keep_ratio(w, h, s):
    f = s / min(w, h)
    return max(1, round(w * f)), max(1, round(h * f))


def run(kind, src, out, size):
    size = int(size)
    if kind == "opencv":
        import cv2
        import numpy as np
    else:
        from PIL import Image, ImageOps
    with tarfile.open(out, "w", format=tarfile.USTAR_FORMAT) as t:
        for name in members(src):
            data = open(os.path.join(src, name), "rb").read()
            if name.endswith(".jpg"):
                if kind == "opencv":
                    img = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)
                    h, w = img.shape[:2]
                    img = cv2.resize(img, keep_ratio(w, h, size), interpolation=cv2.INTER_AREA)
                    data = cv2.imencode(".jpg", img, [cv2.IMWRITE_JPEG_QUALITY, 95])[1].tobytes()
                else:
                    im = Image.open(io.BytesIO(data))
                    if kind == "pil-full":
                        im = ImageOps.exif_transpose(im)
                    w, h = im.size
                    if kind == "pil":
                        im.draft("RGB", keep_ratio(w, h, size))
                    im = im.convert("RGB").resize(keep_ratio(w, h, size), Image.Resampling.BOX)
                    b = io.BytesIO()
                    im.save(b, "JPEG", quality=95)
                    data = b.getvalue()
            ti = tarfile.TarInfo(name)
            ti.size = len(data)
            t.addfile(ti, io.BytesIO(data))


if __name__ == "__main__":
    run(*sys.argv[1:5])
