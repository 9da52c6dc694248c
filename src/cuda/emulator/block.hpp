// One thread block of a launch, run on one host thread: its CUDA threads are fibers that
// switch only at __syncthreads and warp exchanges.
#pragma once

#include "cuda.hpp"

namespace emu {

// What every block of a launch shares.
struct Launch {
    void (*kernel)(void **);
    void ** args;
    dim3 grid;
    dim3 threads;
};

// Runs block `index` of `launch` on the calling host thread, with that thread's fibers and
// __shared__ storage. The block's threads number at most 1024 (CUDA's limit).
void run_block(const Launch & launch, dim3 index);

}  // namespace emu
