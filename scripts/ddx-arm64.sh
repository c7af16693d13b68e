#!/bin/sh
# Runs the arm64 ddx (build-arm64/ddx, or $DDX_ARM64) under qemu-user, for
# the CLI tests on an x86 machine: tests/cli/test_*.sh scripts/ddx-arm64.sh
# (make test-arm64). exec, so signals reach qemu, which passes them on.
#
# No -L /usr/aarch64-linux-gnu: the loader and libc must come from one glibc
# build. The multiarch libraries ddx needs (libjansson4:arm64, libuv1:arm64,
# libpcre2-8-0:arm64) pull in libc6:arm64, whose loader is
# /lib/ld-linux-aarch64.so.1 and whose libc.so.6 the host's ld.so.cache
# lists; with -L /usr/aarch64-linux-gnu qemu takes the loader of
# libc6-arm64-cross instead, a different glibc build whose struct rtld_global
# differs from that libc.so.6's (both "2.36"), and fork() in the child loops
# forever in reclaim_stacks() over a corrupt thread list (ddx run hung there,
# docs/performance.md). Without -L, qemu runs the binary as an arm64 Debian
# would: the system's loader, libc and libraries (qemu-aarch64-static is
# static: LD_LIBRARY_PATH, e.g. a VS Code bundle's lib/, reaches the guest).
here=$(cd "$(dirname "$0")" && pwd)
[ -e /lib/ld-linux-aarch64.so.1 ] || {
  echo "ddx-arm64.sh: no /lib/ld-linux-aarch64.so.1 (libc6:arm64): make deps-arm64" >&2
  exit 127
}
exec qemu-aarch64-static "${DDX_ARM64:-$here/../build-arm64/ddx}" "$@"
