# Cross build for linux-arm64 (GH200/Grace) with Debian's cross toolchain and
# multiarch dev packages (make build-arm64; packages in the Makefile's
# DEB_PKGS_ARM64):
#   cmake -S . -B build-arm64 -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)

# Libraries and headers come from the multiarch paths of the host (/usr/lib/
# aarch64-linux-gnu, /usr/include), which the Debian cross gcc searches; only
# pkg-config must be kept off the host's own .pc files.
set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_PATH} "")

# The tests run the arm64 programs under qemu-user (ctest uses this for
# add_test commands that name a target). No -L /usr/aarch64-linux-gnu: that
# takes the loader of libc6-arm64-cross while libc.so.6 and the libraries come
# from the multiarch libc6:arm64 (the host's ld.so.cache lists them), two
# glibc builds whose struct rtld_global differs; fork() and pthread_create()
# then walk a corrupt thread list and spin (scripts/ddx-arm64.sh,
# docs/performance.md). Without -L the guest gets /lib/ld-linux-aarch64.so.1
# and the libc of the same libc6:arm64, as on an arm64 Debian.
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64-static)
