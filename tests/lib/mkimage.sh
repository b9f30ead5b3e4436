#!/bin/sh
# mkimage.sh ROOTFS [PROGRAM]... - a tiny container image for the tests, made from this
# machine's own files, without the network: a few of the host's programs (sh, coreutils,
# grep) and the PROGRAMs given, in ROOTFS/bin, with every shared library they load (ldd) at its
# host path, and the libraries of the interposer and the fake driver (tests/fake) that tesseld
# binds into a container.  ROOTFS is created (root's, 0755); the directories a container needs
# as mount points are made empty.  Exit 1 with a line on stderr when a program is missing.
set -eu
root=$1
shift
mkdir -p "$root"
chmod 755 "$root"
for d in bin etc lib lib64 proc sys dev tmp run usr var/tmp; do mkdir -p "$root/$d"; done
chmod 1777 "$root/tmp" "$root/var/tmp"
copy_libs() { # the libraries file $1 loads, at their host paths
    ldd "$1" 2>/dev/null | grep -o '/[^ ]*' | while read -r lib; do
        [ -e "$root$lib" ] && continue
        mkdir -p "$root$(dirname "$lib")"
        cp -L "$lib" "$root$lib"
    done
}
for p in sh dash cat id env sleep ls stat grep readlink head kill true false; do
    src=""
    for d in /usr/local/bin /usr/bin /bin; do # the program, not a shell's builtin of that name
        [ -x "$d/$p" ] && { src=$d/$p; break; }
    done
    [ -n "$src" ] || { echo "mkimage: no $p on this machine" >&2; exit 1; }
    cp -L "$src" "$root/bin/$p"
    copy_libs "$src"
done
for p in "$@"; do
    [ -x "$p" ] || { echo "mkimage: $p: not an executable" >&2; exit 1; }
    cp -L "$p" "$root/bin/"
    copy_libs "$p"
done
lib=${TESSEL_BUILD:-}/lib/libtessel-cuda.so
[ -e "$lib" ] && copy_libs "$lib"
for f in "${TESSEL_BUILD:-}"/tests/fake/lib*.so*; do [ -e "$f" ] && copy_libs "$f"; done
printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/sh\n' >"$root/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' >"$root/etc/group"
echo "tessel test image" >"$root/etc/tessel-test-image"
