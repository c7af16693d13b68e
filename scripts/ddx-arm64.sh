#!/bin/sh
# Runs the arm64 ddx (build-arm64/ddx, or $DDX_ARM64) under qemu-user, for
# the CLI tests on an x86 machine: tests/cli/test_*.sh scripts/ddx-arm64.sh
# (make test-arm64). exec, so signals reach qemu, which passes them on.
here=$(cd "$(dirname "$0")" && pwd)
exec qemu-aarch64-static -L /usr/aarch64-linux-gnu "${DDX_ARM64:-$here/../build-arm64/ddx}" "$@"
