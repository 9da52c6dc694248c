// The CUDA built-ins our kernel sources use, for compiling them as host C++ (g++, C++20).
//
// Every CUDA thread of a block is a fiber on the host thread that runs the block (block.cpp);
// __syncthreads is a barrier of the block's fibers, a warp's shuffles exchange values through
// per-warp slots at a barrier of the warp. Blocks run in parallel on a pool of host threads
// (launch.cpp), so __shared__ storage is per host thread, as threadIdx and blockIdx (the
// scheduler sets threadIdx for the fiber it resumes). Device memory is host memory. Threads
// that leave the kernel stop counting at the barriers, as on a GPU.
#pragma once

#include <math.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

struct dim3 {
    unsigned x = 1, y = 1, z = 1;
};

namespace emu {
extern thread_local dim3 thread_idx;  // of the fiber that runs on this host thread
extern thread_local dim3 block_idx;
extern dim3 block_dim;
extern dim3 grid_dim;

void sync_block();
// Lane i receives the value of lane i ^ lane_mask of its warp (its own past the warp's end).
std::uint64_t exchange_xor(std::uint64_t v, int lane_mask);

// Calls kernel `f` with the arguments CUDA's launch API passes: a pointer to each value.
template <typename... A, std::size_t... I>
void invoke_with(void (*f)(A...), void ** args, std::index_sequence<I...>) {
    f(*static_cast<std::remove_cvref_t<A> *>(args[I])...);
}

template <typename... A>
void invoke(void (*f)(A...), void ** args) {
    invoke_with(f, args, std::index_sequence_for<A...>{});
}
}  // namespace emu

#define __global__
#define __device__ static
#define __forceinline__ inline
#define __shared__ static thread_local
#define __launch_bounds__(...)

#define threadIdx emu::thread_idx
#define blockIdx emu::block_idx
#define blockDim emu::block_dim
#define gridDim emu::grid_dim

inline void __syncthreads() {
    emu::sync_block();
}

inline float __shfl_xor_sync(unsigned, float v, int lane_mask) {
    return std::bit_cast<float>(static_cast<std::uint32_t>(emu::exchange_xor(std::bit_cast<std::uint32_t>(v), lane_mask)));
}

inline int __shfl_xor_sync(unsigned, int v, int lane_mask) {
    return static_cast<int>(emu::exchange_xor(static_cast<std::uint32_t>(v), lane_mask));
}

inline float __uint_as_float(unsigned u) {
    return std::bit_cast<float>(u);
}

inline unsigned __float_as_uint(float f) {
    return std::bit_cast<unsigned>(f);
}

inline float __int_as_float(int i) {
    return std::bit_cast<float>(i);
}

inline float rsqrtf(float x) {
    return 1.0f / sqrtf(x);
}

using std::max;
using std::min;
