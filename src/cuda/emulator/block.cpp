// The scheduler of a block: each CUDA thread is a fiber on the host thread that runs the
// block, and runs until it waits at a barrier or leaves the kernel; then the next fiber that
// can go on runs. A kernel without barriers thus runs its threads to completion in turn.
#include "block.hpp"

#include "context.hpp"
#include "tsan.hpp"

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

namespace emu {
thread_local dim3 thread_idx;
thread_local dim3 block_idx;

namespace {

constexpr unsigned WARP = 32;
constexpr unsigned MAX_THREADS = 1024;

// A fiber's stack. Our kernels keep a few hundred bytes on it (the largest local arrays are
// matvec.cu's float v[32] and acc[8], convert.cu's float x[32]; __shared__ arrays are not on
// it) plus the frames of the libm functions they call and of this scheduler: 64 KiB is over
// ten times that. ThreadSanitizer prints its reports on the racing fiber's stack and
// symbolizes there, which takes far more.
#if defined(GGML_RS_EMU_TSAN)
constexpr std::size_t STACK_BYTES = 1024 * 1024;
#else
constexpr std::size_t STACK_BYTES = 64 * 1024;
#endif

// A barrier of the fibers of a block or of a warp. A fiber that leaves the kernel leaves it
// too, so the others do not wait for it, as on a GPU.
struct Barrier {
    unsigned expected = 0;
    unsigned arrived = 0;
    unsigned generation = 0;  // how many times it has let its fibers go
    // Addresses for TSan's release and acquire, one per parity of the generation: the fibers
    // released by generation g acquire what their peers released on the way into g, not what a
    // fiber that already went on released on the way into g + 1 (that order does not exist).
    // Generation g + 2 cannot begin before every fiber has left g, so two addresses suffice.
    char sync[2] = {};

    void reset(unsigned members) {
        expected = members;
        arrived = 0;
        generation = 0;
    }

    // Lets the waiting fibers go when every member still in the block has arrived.
    bool complete() {
        if (arrived == 0 || arrived < expected) {
            return false;
        }
        arrived = 0;
        ++generation;
        return true;
    }
};

// Lane i of an exchange writes slots[bank][i], waits at the warp's barrier, then reads a
// peer's slot. The bank alternates with the barrier's generation, so one barrier an exchange
// is enough: the next exchange writes the other bank, and the one after it, which writes this
// bank again, cannot begin before every lane has reached the next one, i.e. has read this one.
struct Warp {
    Barrier barrier;
    unsigned size = WARP;
    std::uint64_t slots[2][WARP] = {};
};

struct Fiber {
    explicit Fiber(unsigned linear) : linear(linear) {}

    ~Fiber() { tsan::destroy_fiber(tsan); }

    Fiber(const Fiber &) = delete;
    Fiber & operator=(const Fiber &) = delete;

    bool runnable() const { return !done && (waiting == nullptr || waiting->generation != waiting_for); }

    Stack * stack = nullptr;  // from its first run in a block to its end
    Context context;
    void * tsan = tsan::create_fiber();
    unsigned linear;
    dim3 idx;
    const Barrier * waiting = nullptr;  // the barrier it waits at, if any
    unsigned waiting_for = 0;           // that barrier's generation when it arrived
    bool done = false;
};

// The fibers, barriers and scheduler context of one host thread. Fibers and stacks are made
// as a launch first needs them and kept for later blocks and launches.
struct Team {
    Team() : tsan_self(tsan::current_fiber()) {}

    void run(const Launch & l, dim3 index);
    void prepare(dim3 threads);
    void resume(Fiber & f);
    Stack * take_stack(const Fiber & f);
    void give_back(Fiber & f);
    void yield();
    void arrive(Barrier & b);
    void leave(Barrier & b);

    std::vector<std::unique_ptr<Fiber>> fibers;
    std::vector<std::unique_ptr<Stack>> stacks;
    std::vector<Stack *> free_stacks;  // the last given back first: its memory is warm
    std::vector<Warp> warps;
    Barrier block;
    unsigned n = 0;  // threads of a block of the current launch
    dim3 shape{ 0, 0, 0 };
    const Launch * launch = nullptr;
    Fiber * running = nullptr;
    Context scheduler;
    void * tsan_self;
    // TSan: what the host thread did before a block happens before its fibers; what they did
    // happens before what the host thread does after it.
    char block_start = 0;
    char block_end = 0;
};

thread_local Team team;

// Where every fiber starts: it runs the kernel, then leaves the block's barriers and hands
// the host thread back for good (its context is started afresh for the next block).
[[noreturn]] void fiber_main() {
    Team & t = team;
    tsan::acquire(&t.block_start);
    t.launch->kernel(t.launch->args);
    Fiber & f = *t.running;
    f.done = true;
    t.leave(t.block);
    t.leave(t.warps[f.linear / WARP].barrier);
    tsan::release(&t.block_end);
    t.yield();
    std::abort();  // nothing resumes a finished fiber
}

void Team::prepare(dim3 threads) {
    if (threads.x == shape.x && threads.y == shape.y && threads.z == shape.z) {
        return;
    }
    const unsigned long long count = 1ull * threads.x * threads.y * threads.z;
    if (count == 0 || count > MAX_THREADS) {
        std::fprintf(stderr, "ggml-rs CUDA emulator: %llu threads a block (1 to %u)\n", count, MAX_THREADS);
        std::abort();
    }
    shape = threads;
    n = static_cast<unsigned>(count);
    while (fibers.size() < n) {
        fibers.push_back(std::make_unique<Fiber>(static_cast<unsigned>(fibers.size())));
    }
    for (unsigned t = 0; t < n; ++t) {
        fibers[t]->idx = dim3{ t % threads.x, (t / threads.x) % threads.y, t / (threads.x * threads.y) };
    }
    warps.assign((n + WARP - 1) / WARP, Warp{});
    for (unsigned w = 0; w < warps.size(); ++w) {
        warps[w].size = std::min(WARP, n - w * WARP);
    }
}

void Team::run(const Launch & l, dim3 index) {
    launch = &l;
    prepare(l.threads);
    block_idx = index;
    block.reset(n);
    for (Warp & w : warps) {
        w.barrier.reset(w.size);
    }
    for (unsigned t = 0; t < n; ++t) {
        Fiber & f = *fibers[t];
        f.done = false;
        f.waiting = nullptr;
    }
    tsan::release(&block_start);
    unsigned live = n;
    while (live > 0) {
        bool progressed = false;
        for (unsigned t = 0; t < n; ++t) {
            Fiber & f = *fibers[t];
            if (f.runnable()) {
                if (f.stack == nullptr) {
                    f.stack = take_stack(f);
                    context_start(f.context, *f.stack, fiber_main);
                }
                resume(f);
                progressed = true;
                if (f.done) {
                    give_back(f);
                    --live;
                }
            }
        }
        if (!progressed) {
            // only a kernel whose threads wait at different barriers gets here (a hang on a GPU)
            std::fprintf(stderr, "ggml-rs CUDA emulator: the threads of a block wait at different barriers\n");
            std::abort();
        }
    }
    tsan::acquire(&block_end);
}

// A stack for fiber `f` to start on. A fiber that finishes without waiting gives its stack to
// the next, so a kernel without barriers runs all its threads on one warm stack. Not under
// TSan, which would take what one fiber left on a reused stack for memory another fiber
// touches without order: there each fiber keeps a stack of its own.
Stack * Team::take_stack(const Fiber & f) {
#if defined(GGML_RS_EMU_TSAN)
    while (stacks.size() <= f.linear) {
        stacks.push_back(std::make_unique<Stack>(STACK_BYTES));
    }
    return stacks[f.linear].get();
#else
    (void) f;
    if (free_stacks.empty()) {
        stacks.push_back(std::make_unique<Stack>(STACK_BYTES));
        return stacks.back().get();
    }
    Stack * s = free_stacks.back();
    free_stacks.pop_back();
    return s;
#endif
}

void Team::give_back(Fiber & f) {
#if !defined(GGML_RS_EMU_TSAN)
    free_stacks.push_back(f.stack);
#endif
    f.stack = nullptr;
}

// From the scheduler to fiber `f`, until it waits or finishes.
void Team::resume(Fiber & f) {
    running = &f;
    thread_idx = f.idx;
    tsan::switch_to(f.tsan);
    context_switch(scheduler, f.context);
}

// From the running fiber back to the scheduler.
void Team::yield() {
    Fiber & f = *running;
    tsan::switch_to(tsan_self);
    context_switch(f.context, scheduler);
}

// The running fiber at barrier `b`: the last to arrive goes straight on, the others wait.
void Team::arrive(Barrier & b) {
    const unsigned g = b.generation;
    tsan::release(&b.sync[g & 1]);
    ++b.arrived;
    if (!b.complete()) {
        Fiber & f = *running;
        f.waiting = &b;
        f.waiting_for = g;
        yield();
        f.waiting = nullptr;
    }
    tsan::acquire(&b.sync[g & 1]);
}

void Team::leave(Barrier & b) {
    --b.expected;
    b.complete();
}

}  // namespace

void run_block(const Launch & launch, dim3 index) {
    team.run(launch, index);
}

void sync_block() {
    team.arrive(team.block);
}

std::uint64_t exchange_xor(std::uint64_t v, int lane_mask) {
    Team & t = team;
    const unsigned linear = t.running->linear;
    Warp & w = t.warps[linear / WARP];
    const unsigned lane = linear % WARP;
    const unsigned bank = w.barrier.generation & 1;
    w.slots[bank][lane] = v;
    t.arrive(w.barrier);
    const unsigned from = lane ^ static_cast<unsigned>(lane_mask);
    return from < w.size ? w.slots[bank][from] : v;
}

}  // namespace emu
