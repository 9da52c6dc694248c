// Fiber stacks and context switches: a hand-written switch on x86-64 Linux, where the
// emulator switches contexts millions of times a second, and ucontext elsewhere (portable,
// but each swapcontext also saves the signal mask with a system call).
#include "context.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace emu {

namespace {

// Below each stack: larger than any frame of our kernels and of the libm functions they call,
// so that an overflowing frame cannot step over the guard into another mapping.
constexpr std::size_t GUARD = 64 * 1024;

// Stacks are mapped at multiples of the page size apart, so all their tops would fall into the
// same cache sets, and switching among a block's fibers would evict one another's frames:
// successive stacks move their tops down by successive multiples of a cache line instead.
constexpr std::size_t LINE = 64;
constexpr std::size_t COLOURS = 256;

[[noreturn]] void fail(const char * what) {
    std::perror(what);
    std::abort();
}

}  // namespace

Stack::Stack(std::size_t size) {
    static std::atomic<std::size_t> made{ 0 };
    colour = made.fetch_add(1, std::memory_order_relaxed) % COLOURS * LINE;
    const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    bytes = (size + colour + page - 1) / page * page;
    mapping = mmap(nullptr, GUARD + bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
    if (mapping == MAP_FAILED) {
        fail("ggml-rs CUDA emulator: mmap of a fiber stack");
    }
    if (mprotect(mapping, GUARD, PROT_NONE) != 0) {
        fail("ggml-rs CUDA emulator: mprotect of a stack guard");
    }
}

Stack::~Stack() {
    munmap(mapping, GUARD + bytes);
}

void * Stack::base() const {
    return static_cast<char *>(mapping) + GUARD;
}

void * Stack::top() const {
    return static_cast<char *>(base()) + bytes - colour;
}

#if GGML_RS_EMU_ASM_SWITCH

// ggml_rs_emu_switch(save, next): pushes the registers the System V ABI has callees preserve
// (rbx, rbp, r12-r15) and the SSE and x87 control words (rounding, flush-to-zero, exception
// masks: callee-saved too, and a kernel may change them), stores the stack pointer in *save,
// takes `next` as the stack pointer and pops the same frame from it. The final `ret` resumes
// where that context called ggml_rs_emu_switch, or enters a new context (see context_start).
// Scratch registers need no saving: the caller of a function expects them clobbered. Loading
// a control word stalls the pipeline and costs more than the rest of the switch, so each is
// loaded only when it differs from the running context's (MXCSR's low six bits are sticky
// status flags, which the ABI does not preserve: they are left out of the comparison).
extern "C" void ggml_rs_emu_switch(void ** save, void * next);
asm(R"(
    .text
    .p2align 4
    .globl ggml_rs_emu_switch
    .hidden ggml_rs_emu_switch
    .type ggml_rs_emu_switch, @function
ggml_rs_emu_switch:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    subq $8, %rsp
    stmxcsr (%rsp)
    fnstcw 4(%rsp)
    movq %rsp, (%rdi)
    movl (%rsp), %eax
    movzwl 4(%rsp), %ecx
    movq %rsi, %rsp
    movl (%rsp), %edx
    xorl %eax, %edx
    testl $0xffc0, %edx
    jz 1f
    ldmxcsr (%rsp)
1:
    cmpw 4(%rsp), %cx
    je 2f
    fldcw 4(%rsp)
2:
    addq $8, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
    .size ggml_rs_emu_switch, .-ggml_rs_emu_switch
)");

namespace {

// The frame ggml_rs_emu_switch pops, lowest address first.
struct Frame {
    std::uint32_t mxcsr;
    std::uint16_t x87_control;
    std::uint16_t pad;
    void * r15, *r14, *r13, *r12, *rbx, *rbp;
    void (*resume)();  // popped by `ret`
    void * caller;     // where `entry` would return to: nowhere
};
static_assert(sizeof(Frame) == 72);

}  // namespace

void context_start(Context & c, const Stack & stack, void (*entry)()) {
    // `entry` starts as if called: its stack pointer is 8 past a multiple of 16 (the ABI's
    // alignment before a call, less the return address). Frame::caller sits at top - 8.
    auto * frame = reinterpret_cast<Frame *>(static_cast<char *>(stack.top()) - sizeof(Frame));
    *frame = Frame{};
    // the new context starts with the control words of the one that creates it
    asm volatile("stmxcsr %0" : "=m"(frame->mxcsr));
    asm volatile("fnstcw %0" : "=m"(frame->x87_control));
    frame->resume = entry;
    frame->caller = nullptr;  // ends a debugger's backtrace
    c.sp = frame;
}

void context_switch(Context & from, Context & to) {
    ggml_rs_emu_switch(&from.sp, to.sp);
}

#else

void context_start(Context & c, const Stack & stack, void (*entry)()) {
    if (getcontext(&c.uc) != 0) {
        fail("ggml-rs CUDA emulator: getcontext");
    }
    c.uc.uc_stack.ss_sp = stack.base();
    c.uc.uc_stack.ss_size = stack.size();
    c.uc.uc_link = nullptr;
    makecontext(&c.uc, entry, 0);
}

void context_switch(Context & from, Context & to) {
    if (swapcontext(&from.uc, &to.uc) != 0) {
        fail("ggml-rs CUDA emulator: swapcontext");
    }
}

#endif

}  // namespace emu
