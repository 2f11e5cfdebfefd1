#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""initramfs.py MODULES_DIR INIT OUT: the guest's initramfs (gzip'ed newc cpio): busybox-static, the
init script INIT, and the kernel's own modules that mounting this machine's root over virtio-9p
needs (virtio_pci, 9pnet_virtio, 9p), overlay for the tests' overlay mounts, and what modules.dep says
they need, in load order (none where the kernel has them built in). Compressed modules (.ko.xz, .ko.zst) go in uncompressed:
busybox's insmod reads plain ELF. MODULES_DIR may be empty ("") for a kernel with all built in."""
import gzip
import lzma
import os
import shutil
import subprocess
import sys
import tempfile

import zstandard

# overlay: the tests mount overlays as containers do (tests/e2e/test_overlay_mounts.py), and this
# machine's root has no /lib/modules for modprobe to find it at
WANTED = ["virtio_pci", "9pnet_virtio", "9p", "overlay"]
BUSYBOX = "/bin/busybox"


def name_of(path):
    base = os.path.basename(path)
    return base.split(".ko")[0].replace("-", "_")


def read_deps(moddir):
    deps, paths = {}, {}
    with open(os.path.join(moddir, "modules.dep")) as f:
        for line in f:
            mod, _, rest = line.partition(":")
            paths[name_of(mod)] = mod
            deps[name_of(mod)] = [name_of(d) for d in rest.split()]
    return deps, paths


def load_order(moddir):
    if not moddir:
        return []
    deps, paths = read_deps(moddir)
    order, seen = [], set()

    def visit(name):
        if name in seen or name not in paths:  # built in (modules.builtin) or absent
            return
        seen.add(name)
        for d in deps[name]:
            visit(d)
        order.append(paths[name])

    for w in WANTED:
        visit(w)
    return order


def plain(src):
    with open(src, "rb") as f:
        data = f.read()
    if src.endswith(".xz"):
        return lzma.decompress(data)
    if src.endswith(".zst"):
        return zstandard.ZstdDecompressor().decompressobj().decompress(data)
    return data


def main():
    moddir, init, out = sys.argv[1:4]
    have = subprocess.run(["dpkg-query", "-W", "-f=${db:Status-Status}", "busybox-static"], capture_output=True,
                          text=True).stdout
    if have != "installed" or not os.path.exists(BUSYBOX):
        print("initramfs.py: busybox-static is not installed (make deps)", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as tree:
        for d in ("bin", "dev", "proc", "sys", "newroot", "modules"):
            os.mkdir(os.path.join(tree, d))
        shutil.copy(BUSYBOX, os.path.join(tree, "bin", "busybox"))
        os.symlink("busybox", os.path.join(tree, "bin", "sh"))
        shutil.copy(init, os.path.join(tree, "init"))
        os.chmod(os.path.join(tree, "init"), 0o755)
        names = []
        for mod in load_order(moddir):
            name = name_of(mod) + ".ko"
            with open(os.path.join(tree, "modules", name), "wb") as f:
                f.write(plain(os.path.join(moddir, mod)))
            names.append(name)
        with open(os.path.join(tree, "modules", "order"), "w") as f:
            f.write("".join(n + "\n" for n in names))
        files = subprocess.run(["find", "."], cwd=tree, capture_output=True, text=True, check=True).stdout
        cpio = subprocess.run([BUSYBOX, "cpio", "-o", "-H", "newc"], cwd=tree, input=files.encode(),
                              capture_output=True, check=True).stdout
    with gzip.open(out + ".tmp", "wb") as f:
        f.write(cpio)
    os.replace(out + ".tmp", out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
