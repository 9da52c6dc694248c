//! The emulated CUDA device: the kernel sources compiled as host C++ with the built-ins of
//! `cuda.hpp` (build.rs), launched by `launch.cpp` with a fiber per CUDA thread. Device
//! memory is host memory, so a kernel's pointer arguments are host addresses.

use std::ffi::c_void;

pub mod gpu;

/// A kernel as the emulator calls it: with CUDA's array of pointers to the arguments.
type Trampoline = unsafe extern "C" fn(args: *mut *mut c_void);

/// A kernel of the emulated device, from build.rs's table.
pub struct EmulatedKernel {
    pub name: &'static str,
    run: Trampoline,
    /// The most threads a block may have: the kernel's `__launch_bounds__`, or the most a GPU
    /// launches whatever registers the kernel uses.
    pub max_threads: u32,
}

include!(concat!(env!("OUT_DIR"), "/emulated_kernels.rs"));

unsafe extern "C" {
    fn ggml_rs_emu_launch(kernel: Trampoline, grid: *const u32, threads: *const u32, args: *mut *mut c_void);
}

/// Whether a kernel of that name exists.
pub fn has_kernel(name: &str) -> bool {
    KERNELS.iter().any(|k| k.name == name)
}

/// Runs kernel `name` on `grid` blocks of `threads` threads and returns when it has finished;
/// false when there is no such kernel.
///
/// # Safety
/// `args` holds, in order, a pointer to a value of each of the kernel's parameter types, and
/// every address among those values is valid for what the kernel does with it.
pub unsafe fn launch(name: &str, grid: [u32; 3], threads: [u32; 3], args: &mut [*mut c_void]) -> bool {
    let Some(kernel) = KERNELS.iter().find(|k| k.name == name) else { return false };
    // SAFETY: the trampoline reads the arguments the caller vouched for; grid and threads are
    // three numbers each.
    unsafe { ggml_rs_emu_launch(kernel.run, grid.as_ptr(), threads.as_ptr(), args.as_mut_ptr()) };
    true
}

#[cfg(test)]
mod tests;
