#!/usr/bin/env python3
# bios-embed.py DISK.raw CORE.img BOOT.img LBA: what grub-bios-setup does for a GPT disk whose BIOS boot
# partition starts at LBA. grub-bios-setup cannot see partitions of a loop device here (no partition
# scanning in the container), so the build writes boot.img (MBR) and core.img itself.
import struct, sys
disk, core, boot, lba = sys.argv[1], open(sys.argv[2], 'rb').read(), open(sys.argv[3], 'rb').read(), int(sys.argv[4])
core = bytearray(core + b'\0' * (-len(core) % 512)); n = len(core) // 512
struct.pack_into('<QH', core, 512 - 12, lba + 1, n - 1)          # diskboot blocklist: rest of core.img
with open(disk, 'r+b') as f:
    mbr = bytearray(f.read(512))
    b = bytearray(boot)
    struct.pack_into('<Q', b, 0x5c, lba)                          # kernel sector
    b[0x64] = 0xff                                                # boot drive: from BIOS
    b[0x66:0x68] = b'\x90\x90'                                    # no drive check (hard disk)
    mbr[0:0x1b8] = b[0:0x1b8]                                     # keep the protective MBR's partition table
    f.seek(0); f.write(mbr); f.seek(lba * 512); f.write(core)
print(f"core.img {n} sectors at LBA {lba}")
