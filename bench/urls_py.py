"""urls_py.py - the anchor of bench_urls.sh: img2dataset's downloader and
resizer reproduced in one Python process (img2dataset itself is not
installable here).  As its worker does, a thread pool fetches the URLs
(urllib.request.urlopen, THREADS at once: a connection per request, and
over https a default SSL context per request, as img2dataset's
download_image makes them) and the main thread hashes each body (sha256,
its compute_hash default), decodes it with OpenCV on one thread (its
resizer sets cv2.setNumThreads(1)), resizes it (INTER_AREA, keep_ratio to
SIZE; SIZE 0: decode only, as its resize_mode no still decodes) and
re-encodes it at quality 95, then writes it with its .json into one tar,
as a shard would be.
Usage: urls_py.py LIST OUT.tar SIZE THREADS
Run with Debian's /usr/bin/python3 (python3-opencv).
"""
import hashlib
import io
import json
import sys
import tarfile
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import cv2
import numpy as np


def fetch(arg):
    i, url = arg
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return i, url, r.read(), None
    except Exception as e:  # noqa: BLE001 - a failed row, as img2dataset counts it
        return i, url, None, str(e)


def keep_ratio(w, h, s):
    f = s / min(w, h)
    return max(1, round(w * f)), max(1, round(h * f))


def main():
    cv2.setNumThreads(1)
    lst, out, size, threads = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    urls = list(enumerate(line.strip() for line in open(lst) if line.strip()))
    ok = 0
    with tarfile.open(out, "w", format=tarfile.USTAR_FORMAT) as t, ThreadPoolExecutor(threads) as pool:
        for i, url, data, err in pool.map(fetch, urls):
            if data is None:
                continue
            digest = hashlib.sha256(data).hexdigest()
            img = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)
            if img is None:
                continue
            h, w = img.shape[:2]
            if size:
                img = cv2.resize(img, keep_ratio(w, h, size), interpolation=cv2.INTER_AREA)
                data = cv2.imencode(".jpg", img, [cv2.IMWRITE_JPEG_QUALITY, 95])[1].tobytes()
            meta = json.dumps({"url": url, "width": img.shape[1], "height": img.shape[0],
                               "original_width": w, "original_height": h, "sha256": digest}).encode()
            for ext, b in (("jpg", data), ("json", meta)):
                ti = tarfile.TarInfo(f"{i:09d}.{ext}")
                ti.size = len(b)
                t.addfile(ti, io.BytesIO(b))
            ok += 1
    print(ok)


main()
