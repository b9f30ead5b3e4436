# bench/lib/journalfs.sh - sourced by a bash benchmark: an ext4 file system with a journal,
# made on a loop device for the benchmark's data directories, for BENCH_FS=journal.
#
# Why: a job's start and end create and free files, and ext4 *without* a journal (this
# project's development VM's root file system: `dumpe2fs -h` lists no has_journal) skips every
# inode freed in the last 30 s when it allocates one (find_inode_bit -> recently_deleted),
# a cost that grows with the rate of creations and with how long the machine has run.  ext4
# as Debian's installer makes it has a journal, and then that scan does not happen at all.
# BENCH_FS=journal puts both builds' data directories on such a file system, so that a run
# measures what a lab's machine does; BENCH_FS=host (the default) keeps them in $TMPDIR.
#
#   . bench/lib/journalfs.sh
#   JFS=$(journalfs_mount "$T") || exit 1      # T: a directory of the benchmark's own
#   ... data directories under $JFS ...
#   journalfs_umount "$T"                      # in the benchmark's cleanup
#
# Needs root, mkfs.ext4 (e2fsprogs) and a free loop device.  The image is a sparse file of
# BENCH_FS_SIZE (default 4G) in T; nothing is left behind.

# journalfs_mount T: make T/fs.img, an ext4 with a journal, mount it on T/fs; prints T/fs.
journalfs_mount() {
    local t=$1
    if [ "$(id -u)" != 0 ]; then
        echo "journalfs: BENCH_FS=journal needs root (a loop mount)" >&2
        return 1
    fi
    command -v mkfs.ext4 >/dev/null || {
        echo "journalfs: mkfs.ext4 is missing (apt-get install e2fsprogs)" >&2
        return 1
    }
    truncate -s "${BENCH_FS_SIZE:-4G}" "$t/fs.img" &&
        mkfs.ext4 -q -F -O has_journal "$t/fs.img" &&
        mkdir -p "$t/fs" &&
        mount -o loop "$t/fs.img" "$t/fs" || {
        echo "journalfs: cannot make or mount an ext4 image in $t" >&2
        return 1
    }
    dumpe2fs -h "$t/fs.img" 2>/dev/null | grep -q has_journal || {
        echo "journalfs: $t/fs.img has no journal" >&2
        umount "$t/fs"
        return 1
    }
    echo "$t/fs"
}

# journalfs_umount T: unmount T/fs if mounted (lazily if still busy) and remove the image.
journalfs_umount() {
    local t=$1
    if mountpoint -q "$t/fs" 2>/dev/null; then
        umount "$t/fs" 2>/dev/null || umount -l "$t/fs"
    fi
    rm -f "$t/fs.img"
}

# benchfs_select T: the data directory BENCH_FS asks for (host, the default: T; journal: an
# ext4 with a journal mounted on T/fs) in BENCH_DATA, its description in BENCH_FS_NAME (for
# the output's header).  1 with a message for another value or a mount that fails.  The
# benchmark's cleanup calls journalfs_umount T either way (nothing to do for host).
benchfs_select() {
    BENCH_DATA=$1
    BENCH_FS_NAME="host ($(df --output=fstype "$1" | tail -1))"
    case "${BENCH_FS:-host}" in
    host) ;;
    journal)
        BENCH_DATA=$(journalfs_mount "$1") || return 1
        BENCH_FS_NAME="journal (ext4 with a journal on a loop device)"
        ;;
    *)
        echo "${0##*/}: BENCH_FS must be host or journal" >&2
        return 1
        ;;
    esac
}
