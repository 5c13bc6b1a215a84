#!/usr/bin/env python3
"""Shrinks a CUDA shared library for one GPU architecture: each fatbin of .nv_fatbin keeps only its
cubins for ARCH, moved up behind its header, whose size is cut to match, and the bytes freed are
zeroed. A fatbin keeps its address (the runtime finds each through a pointer in .nvFatBinSegment),
so the file's layout, symbols and relocations are unchanged; the result is what nvcc writes for one
architecture, with zeros between fatbins, which compress to nothing. With --empty-section NAME every
fatbin of that section is left with no entry at all.

Used by scripts/device-prepare.sh on NCCL: PyPI's libnccl.so.2 holds cubins for sm_75 to sm_120 (252
MB, 200 MB by xz), too much for the device call's 64 MiB; its sm_90 code alone is 21 MB by xz.
__nv_relfatbin holds the relocatable objects nvlink linked .nv_fatbin from; emptying it rests on the
reading, not yet checked on a GPU, that the CUDA runtime links from them only for an architecture
the linked image lacks (kept, NCCL's sm_90 copies there would make it 38 MB).

Layout (as the toolkit's fatbinary writes it, read from the files): a fatbin is a 16-byte header
(magic 0xBA55ED50, u16 version, u16 header size, u64 size of the entries), then entries, each a
header (u16 kind: 1 PTX, 2 cubin; u16 version; u32 header size; u64 payload size; ...; u32 arch at
byte 28) and its payload. A section holds fatbins 8-byte aligned, with padding between them.

usage: fatbin-keep-arch.py IN OUT ARCH [--empty-section NAME]
"""
import struct
import sys

FATBIN_MAGIC = 0xBA55ED50


def sections(elf):
    if elf[:4] != b"\x7fELF" or elf[4] != 2:
        sys.exit("fatbin-keep-arch: not a 64-bit ELF file")
    shoff, = struct.unpack_from("<Q", elf, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", elf, 0x3A)
    heads = [struct.unpack_from("<IIQQQQ", elf, shoff + i * shentsize) for i in range(shnum)]
    names_at = heads[shstrndx][4]
    out = {}
    for name_at, _, _, _, offset, size in heads:
        end = elf.index(b"\0", names_at + name_at)
        out[elf[names_at + name_at:end].decode()] = (offset, size)
    return out


def fatbins(elf, offset, size):
    """(start, header size, entries) of each fatbin in a section; entries as (kind, arch, start, end)."""
    p, end = offset, offset + size
    while p + 16 <= end:
        magic, _, header, body = struct.unpack_from("<IHHQ", elf, p)
        if magic != FATBIN_MAGIC:
            p += 8  # padding between fatbins
            continue
        found, q = [], p + header
        while q < p + header + body:
            kind, _, entry_header, payload = struct.unpack_from("<HHIQ", elf, q)
            arch, = struct.unpack_from("<I", elf, q + 28)
            found.append((kind, arch, q, q + entry_header + payload))
            q += entry_header + payload
        if q != p + header + body:
            sys.exit(f"fatbin-keep-arch: the fatbin at {p:#x} does not end where its header says")
        yield p, header, found
        p = q


def keep(elf, start, header, entries, wanted):
    """Moves the wanted entries up behind the fatbin's header, sets its size, zeroes the rest."""
    kept = b"".join(bytes(elf[a:b]) for kind, arch, a, b in entries if wanted(kind, arch))
    end = entries[-1][3] if entries else start + header
    elf[start + header:end] = kept + bytes(end - start - header - len(kept))
    struct.pack_into("<Q", elf, start + 8, len(kept))
    return len(kept), end - start - header - len(kept)


def main():
    args = sys.argv[1:]
    empty = []
    while "--empty-section" in args:
        i = args.index("--empty-section")
        empty.append(args[i + 1])
        del args[i:i + 2]
    if len(args) != 3:
        sys.exit(__doc__.strip().splitlines()[-1])
    src, dst, arch = args[0], args[1], int(args[2])
    elf = bytearray(open(src, "rb").read())
    found = sections(elf)
    kept = freed = 0
    for name in [".nv_fatbin"] + empty:
        if name not in found:
            sys.exit(f"fatbin-keep-arch: {src} has no {name} section")
        for start, header, entries in list(fatbins(elf, *found[name])):
            k, f = keep(elf, start, header, entries, lambda kind, a: name == ".nv_fatbin" and kind == 2 and a == arch)
            kept, freed = kept + k, freed + f
    if kept == 0:
        sys.exit(f"fatbin-keep-arch: {src} has no sm_{arch} cubin in .nv_fatbin")
    open(dst, "wb").write(elf)
    print(f"fatbin-keep-arch: kept {kept} bytes of sm_{arch} cubins, zeroed {freed} bytes")


if __name__ == "__main__":
    main()
