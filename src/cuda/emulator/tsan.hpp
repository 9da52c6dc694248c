// What ThreadSanitizer must be told about the emulator's fibers, and nothing without it.
//
// The kernel sources are compiled with -fsanitize=thread, the emulator's own code is not (it
// is built with GGML_RS_EMU_TSAN instead, see build.rs): its bookkeeping (barrier counters,
// warp slots) is touched by every fiber of a block with no happens-before between them that
// TSan could see, so instrumenting it would report races that cannot happen (one host thread
// runs them all). Only the kernels' own accesses are checked, against the order the
// annotations below describe: a CUDA thread is a TSan fiber, and switching between fibers
// implies no order (no-sync), so two CUDA threads of a block are as unordered to TSan as on a
// GPU until a barrier orders them.
#pragma once

#if defined(GGML_RS_EMU_TSAN)
#include <sanitizer/tsan_interface.h>
#endif

namespace emu::tsan {

#if defined(GGML_RS_EMU_TSAN)

inline void * create_fiber() {
    return __tsan_create_fiber(0);
}

inline void destroy_fiber(void * fiber) {
    __tsan_destroy_fiber(fiber);
}

inline void * current_fiber() {
    return __tsan_get_current_fiber();
}

// Called right before the context switch to the fiber, with no implied order.
inline void switch_to(void * fiber) {
    __tsan_switch_to_fiber(fiber, __tsan_switch_to_fiber_no_sync);
}

// What the running fiber did so far happens before whatever follows an acquire of `sync`.
inline void release(void * sync) {
    __tsan_release(sync);
}

inline void acquire(void * sync) {
    __tsan_acquire(sync);
}

#else

inline void * create_fiber() {
    return nullptr;
}

inline void destroy_fiber(void *) {}

inline void * current_fiber() {
    return nullptr;
}

inline void switch_to(void *) {}

inline void release(void *) {}

inline void acquire(void *) {}

#endif

}  // namespace emu::tsan
