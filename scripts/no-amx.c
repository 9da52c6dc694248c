// Preloaded into reference runs (scripts/reference no-amx): denies the AMX tile-data permission,
// so that ggml's CPU backend leaves its AMX buffer type out. On the Intel virtual machines the
// kernel grants the permission but the first tile instruction dies with SIGILL.
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <sys/syscall.h>

#define ARCH_REQ_XCOMP_PERM 0x1023

long syscall(long number, ...) {
    // the x86-64 syscall ABI has at most six arguments; extra ones read are ignored by the kernel
    va_list ap;
    va_start(ap, number);
    long a[6];
    for (int i = 0; i < 6; ++i) {
        a[i] = va_arg(ap, long);
    }
    va_end(ap);
    if (number == SYS_arch_prctl && a[0] == ARCH_REQ_XCOMP_PERM) {
        errno = EPERM;
        return -1;
    }
    static long (*next)(long, ...);
    if (!next) {
        next = (long (*)(long, ...)) dlsym(RTLD_NEXT, "syscall");
    }
    return next(number, a[0], a[1], a[2], a[3], a[4], a[5]);
}
