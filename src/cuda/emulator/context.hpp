// User-space execution contexts for the emulator's fibers: a stack with a guard page, and a
// switch from one context to another that saves only what a function call must preserve.
#pragma once

#include <cstddef>

#if defined(__x86_64__) && defined(__linux__)
#define GGML_RS_EMU_ASM_SWITCH 1
#else
#include <ucontext.h>
#endif

namespace emu {

// A fiber's stack: mmap'd, with an inaccessible guard region below it, so that an overflow
// faults instead of writing over whatever lies beneath. Pages are only backed once touched.
class Stack {
  public:
    explicit Stack(std::size_t bytes);
    ~Stack();
    Stack(const Stack &) = delete;
    Stack & operator=(const Stack &) = delete;

    // The highest address of the usable region (16-byte aligned); the stack grows down from it.
    void * top() const;
    void * base() const;
    std::size_t size() const { return bytes; }

  private:
    void * mapping;
    std::size_t bytes;   // from base() to the end of the mapping
    std::size_t colour;  // top() lies that far below the end, see context.cpp
};

// Where a suspended context resumes.
struct Context {
#if GGML_RS_EMU_ASM_SWITCH
    void * sp = nullptr;  // its saved registers sit at the top of its stack, see context.cpp
#else
    ucontext_t uc;
#endif
};

// Prepares `c` so that switching to it calls `entry` on `stack`; `entry` must never return.
void context_start(Context & c, const Stack & stack, void (*entry)());

// Saves the running context into `from` and resumes `to`; returns when something switches
// back to `from`.
void context_switch(Context & from, Context & to);

}  // namespace emu
