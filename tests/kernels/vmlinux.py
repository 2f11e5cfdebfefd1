#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""vmlinux.py BZIMAGE OUT: the uncompressed kernel inside a bzImage (its xz or zstd payload), which
qemu boots through the ELF's PVH entry. The kernel's own scripts/extract-vmlinux does this but is
not packaged by Debian; the search for the payload's magic is the same idea, in a few lines."""
import lzma
import os
import sys

import zstandard

MAGIC = {b"\xfd7zXZ\x00": "xz", b"\x28\xb5\x2f\xfd": "zstd"}


def payloads(data):
    for magic, kind in MAGIC.items():
        at = data.find(magic)
        while at >= 0:
            yield at, kind
            at = data.find(magic, at + 1)


def unpack(data, at, kind):
    try:
        if kind == "xz":
            return lzma.LZMADecompressor().decompress(data[at:])
        return zstandard.ZstdDecompressor().decompressobj().decompress(data[at:])
    except (lzma.LZMAError, zstandard.ZstdError):
        return b""


def main():
    src, out = sys.argv[1:3]
    with open(src, "rb") as f:
        data = f.read()
    for at, kind in sorted(payloads(data)):
        image = unpack(data, at, kind)
        if image.startswith(b"\x7fELF"):
            with open(out + ".tmp", "wb") as f:
                f.write(image)
            os.replace(out + ".tmp", out)
            return 0
    print(f"vmlinux.py: no xz or zstd payload holding an ELF kernel in {src}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
