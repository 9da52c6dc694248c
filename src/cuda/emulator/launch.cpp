// Runs one kernel launch of the emulated device: the blocks of the grid spread over a pool of
// host threads (the launching thread among them), each block on one host thread with its CUDA
// threads as fibers (block.cpp). One launch at a time in the process: the emulated device's
// streams are synchronous, and a launch's block and grid sizes are process-wide.
#include "block.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

namespace emu {
dim3 block_dim;
dim3 grid_dim;

namespace {

// Every fiber of a block of 1024 threads costs a stack mapping and its guard, two of the
// kernel's 65530 memory mappings a process (vm.max_map_count): 32 host threads take 65536.
constexpr unsigned MAX_HOST_THREADS = 32;

// GGML_RS_EMU_THREADS, or one host thread a CPU.
unsigned host_threads() {
    unsigned n = std::thread::hardware_concurrency();
    if (const char * env = std::getenv("GGML_RS_EMU_THREADS")) {
        n = static_cast<unsigned>(std::strtoul(env, nullptr, 10));
    }
    return std::clamp(n, 1u, MAX_HOST_THREADS);
}

// Takes the launch's blocks one by one, in CUDA's order (x fastest), until none is left.
void run_blocks(const Launch & l, std::atomic<unsigned> & next) {
    const unsigned n = l.grid.x * l.grid.y * l.grid.z;
    for (unsigned i = next.fetch_add(1, std::memory_order_relaxed); i < n; i = next.fetch_add(1, std::memory_order_relaxed)) {
        run_block(l, dim3{ i % l.grid.x, (i / l.grid.x) % l.grid.y, i / (l.grid.x * l.grid.y) });
    }
}

// The host threads besides the launching one, waiting for launches with more than one block.
class Pool {
  public:
    explicit Pool(unsigned helpers) {
        for (unsigned i = 0; i < helpers; ++i) {
            threads.emplace_back([this] { serve(); });
        }
    }

    ~Pool() {
        {
            std::lock_guard<std::mutex> lock(mutex);
            stop = true;
        }
        wake.notify_all();
        for (std::thread & t : threads) {
            t.join();
        }
    }

    Pool(const Pool &) = delete;
    Pool & operator=(const Pool &) = delete;

    // Runs every block of `l` and returns when all have finished.
    void run(const Launch & l) {
        std::atomic<unsigned> next{ 0 };
        const unsigned blocks = l.grid.x * l.grid.y * l.grid.z;
        const unsigned helpers = std::min<unsigned>(static_cast<unsigned>(threads.size()), blocks - 1);
        if (helpers > 0) {
            std::lock_guard<std::mutex> lock(mutex);
            job = &l;
            job_next = &next;
            tickets = helpers;
            busy = helpers;
            ++generation;
        }
        if (helpers > 0) {
            wake.notify_all();
        }
        run_blocks(l, next);
        if (helpers > 0) {
            std::unique_lock<std::mutex> lock(mutex);
            idle.wait(lock, [this] { return busy == 0; });
        }
    }

  private:
    void serve() {
        unsigned seen = 0;
        std::unique_lock<std::mutex> lock(mutex);
        for (;;) {
            wake.wait(lock, [&] { return stop || generation != seen; });
            if (stop) {
                return;
            }
            seen = generation;
            if (tickets == 0) {
                continue;  // enough helpers took this launch
            }
            --tickets;
            const Launch & l = *job;
            std::atomic<unsigned> & next = *job_next;
            lock.unlock();
            run_blocks(l, next);
            lock.lock();
            if (--busy == 0) {
                idle.notify_one();
            }
        }
    }

    std::mutex mutex;
    std::condition_variable wake;
    std::condition_variable idle;
    const Launch * job = nullptr;
    std::atomic<unsigned> * job_next = nullptr;
    unsigned generation = 0;
    unsigned tickets = 0;  // helpers still wanted for this launch
    unsigned busy = 0;     // helpers that took this launch and have not finished
    bool stop = false;
    std::vector<std::thread> threads;
};

}  // namespace
}  // namespace emu

// Launches `kernel` (a trampoline taking CUDA's argument array) on `grid` x `threads`.
extern "C" void ggml_rs_emu_launch(void (*kernel)(void **), const unsigned grid[3], const unsigned threads[3], void ** args) {
    static std::mutex one_launch_at_a_time;
    static emu::Pool pool(emu::host_threads() - 1);
    std::lock_guard<std::mutex> lock(one_launch_at_a_time);

    const emu::Launch launch{ kernel, args, dim3{ grid[0], grid[1], grid[2] }, dim3{ threads[0], threads[1], threads[2] } };
    if (launch.grid.x * launch.grid.y * launch.grid.z == 0) {
        return;
    }
    emu::block_dim = launch.threads;
    emu::grid_dim = launch.grid;
    pool.run(launch);
}
