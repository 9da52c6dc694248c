// Runs one kernel launch of the emulated device: a host thread per CUDA thread of a block,
// the blocks of the grid one after another, one launch at a time in the process.
#include "cuda.hpp"

#include <barrier>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace emu {
thread_local dim3 thread_idx;
thread_local dim3 block_idx;
dim3 block_dim;
dim3 grid_dim;

namespace {

constexpr unsigned WARP = 32;

struct Warp {
    std::unique_ptr<std::barrier<>> sync;
    std::uint64_t slots[WARP] = {};
    unsigned size = WARP;
};

// The barriers of the block that runs: made anew for every block, since a thread that has
// left the kernel drops out of them for the rest of that block.
struct Block {
    unsigned n_threads = 0;
    std::unique_ptr<std::barrier<>> sync;
    std::vector<Warp> warps;

    void reset() {
        sync = std::make_unique<std::barrier<>>(n_threads);
        for (Warp & w : warps) {
            w.sync = std::make_unique<std::barrier<>>(w.size);
        }
    }
};

Block block;
thread_local unsigned linear_thread;

}  // namespace

void sync_block() {
    block.sync->arrive_and_wait();
}

std::uint64_t exchange_xor(std::uint64_t v, int lane_mask) {
    Warp & w = block.warps[linear_thread / WARP];
    const unsigned lane = linear_thread % WARP;
    const unsigned from = lane ^ static_cast<unsigned>(lane_mask);
    w.slots[lane] = v;
    w.sync->arrive_and_wait();
    const std::uint64_t r = from < w.size ? w.slots[from] : v;
    w.sync->arrive_and_wait();  // nobody writes the slots again before all have read
    return r;
}
}  // namespace emu

// Launches `kernel` (a trampoline taking CUDA's argument array) on `grid` x `threads`.
extern "C" void ggml_rs_emu_launch(void (*kernel)(void **), const unsigned grid[3], const unsigned threads[3], void ** args) {
    static std::mutex one_launch_at_a_time;
    std::lock_guard<std::mutex> lock(one_launch_at_a_time);

    emu::block_dim = dim3{ threads[0], threads[1], threads[2] };
    emu::grid_dim = dim3{ grid[0], grid[1], grid[2] };
    const unsigned n = threads[0] * threads[1] * threads[2];
    emu::block.n_threads = n;
    emu::block.warps = std::vector<emu::Warp>((n + emu::WARP - 1) / emu::WARP);
    for (unsigned w = 0; w < emu::block.warps.size(); ++w) {
        emu::block.warps[w].size = std::min(emu::WARP, n - w * emu::WARP);
    }
    emu::block.reset();
    auto next_block = []() noexcept { emu::block.reset(); };
    std::barrier end_of_block(n, next_block);

    std::vector<std::jthread> team;
    team.reserve(n);
    for (unsigned t = 0; t < n; ++t) {
        team.emplace_back([&, t] {
            emu::linear_thread = t;
            emu::thread_idx = dim3{ t % threads[0], (t / threads[0]) % threads[1], t / (threads[0] * threads[1]) };
            emu::Warp & warp = emu::block.warps[t / emu::WARP];
            for (unsigned z = 0; z < grid[2]; ++z) {
                for (unsigned y = 0; y < grid[1]; ++y) {
                    for (unsigned x = 0; x < grid[0]; ++x) {
                        emu::block_idx = dim3{ x, y, z };
                        kernel(args);
                        emu::block.sync->arrive_and_drop();
                        warp.sync->arrive_and_drop();
                        end_of_block.arrive_and_wait();
                    }
                }
            }
        });
    }
}
