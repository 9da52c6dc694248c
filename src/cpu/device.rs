//! The built-in "CPU" registry and its one device: system memory, the CPU host buffer type,
//! buffers over caller-owned host memory, and the extra buffer type of repacked weights where
//! this processor runs the repacked product. Its backends are CPU backends
//! (`crate::cpu::backend`); the ops it takes are the kernels' (`crate::cpu::kernels`).

use std::ffi::{CStr, CString, c_void};
use std::ptr::NonNull;
use std::sync::LazyLock;

use crate::backend::adapter::{StaticDevice, StaticReg};
use crate::backend::backend::BackendPtr;
use crate::backend::buffer::{BufferPtr, BufferTypePtr};
use crate::backend::device::DevicePtr;
use crate::backend::host_buffer::{cpu_buffer_from_ptr, cpu_buffer_type};
use crate::backend::interface::{DevCaps, DevProps, DevType};
use crate::backend::reg::RegPtr;
use crate::backend::traits::{Device, Reg};
use crate::core::machine::physical_memory;
use crate::core::op::Op;
use crate::core::tensor::{Tensor, TensorPtr};
use crate::core::types::Type;
use crate::cpu::{backend, kernels, repack};

struct CpuReg;
struct CpuDevice;

static CPU_REG_OBJECT: &dyn Reg = &CpuReg;
static CPU_DEVICE_OBJECT: &dyn Device = &CpuDevice;
static CPU_REG: StaticReg = StaticReg::new(&CPU_REG_OBJECT);
static CPU_DEVICE: StaticDevice = StaticDevice::new(CPU_REG.as_ptr(), &CPU_DEVICE_OBJECT);

/// The CPU registry (`ggml_backend_cpu_reg`).
pub fn cpu_reg() -> RegPtr {
    CPU_REG.handle()
}

/// `ggml_backend_cpu_init`: a new CPU backend on the CPU device, with the default team size.
pub fn init() -> BackendPtr {
    backend::new(CPU_DEVICE.handle())
}

impl Reg for CpuReg {
    fn get_name(&self) -> &CStr {
        c"CPU"
    }

    fn get_device_count(&self) -> usize {
        1
    }

    fn get_device(&self, index: usize) -> DevicePtr {
        crate::ggml_assert!(index == 0, "the CPU registry has one device, not index {}", index);
        CPU_DEVICE.handle()
    }

    /// The CPU registry's extra functions: those of ggml's that this build implements, which
    /// are C functions of `ffi` (a seam of `lib.rs`).
    fn get_proc_address(&self, name: &CStr) -> Option<NonNull<c_void>> {
        crate::ffi::cpu::proc_address(name)
    }
}

/// The first "model name" line of `/proc/cpuinfo`, trimmed; "CPU" when there is none.
fn cpu_model_name(cpuinfo: &str) -> Option<&str> {
    cpuinfo
        .lines()
        .find(|line| line.starts_with("model name"))
        .and_then(|line| line.split_once(':'))
        .map(|(_, value)| value.trim())
}

static DESCRIPTION: LazyLock<CString> = LazyLock::new(|| {
    let cpuinfo = std::fs::read("/proc/cpuinfo").unwrap_or_default();
    let cpuinfo = String::from_utf8_lossy(&cpuinfo);
    let name = cpu_model_name(&cpuinfo).unwrap_or("CPU");
    CString::new(name.replace('\0', "")).unwrap_or_default()
});

/// Whether the CPU device offers the CPU_REPACK buffer type: the processor runs the repacked
/// product of some format.
pub fn repack_offered() -> bool {
    repack::layout::TYPES.iter().any(|&ty| repack::packs(ty))
}

/// The buffer types whose weights the CPU device computes on besides host memory
/// (`ggml_backend_dev_get_extra_bufts`): "CPU_REPACK" where this processor runs the repacked
/// product.
pub fn extra_buffer_types() -> &'static [BufferTypePtr] {
    static LIST: LazyLock<Vec<BufferTypePtr>> =
        LazyLock::new(|| if repack_offered() { vec![repack::buffer_type()] } else { Vec::new() });
    &LIST
}

/// Whether the CPU backend computes `op`, one of whose sources lies in a CPU_REPACK buffer:
/// a MUL_MAT of repacked 2-D weights by F32 activations in host memory; or, when no source is
/// stored packed (the buffer keeps such tensors as written, in host memory), whatever the CPU
/// kernels compute. (llama.cpp puts there every weight it checks with no op.)
pub fn repack_supports_op(op: &Tensor) -> bool {
    // SAFETY: an op's sources are null or live tensors.
    if !op.src.iter().any(|&s| unsafe { s.as_ref() }.is_some_and(repack::is_repacked)) {
        return kernels::supports_op(op);
    }
    // SAFETY: an op's sources are null or live tensors.
    let (Some(src0), Some(src1)) = (unsafe { op.src[0].as_ref() }, unsafe { op.src[1].as_ref() }) else {
        return false;
    };
    // SAFETY: as above; a tensor's buffer is null or a live buffer.
    let host = |t: &Tensor| unsafe { BufferPtr::from_raw(t.buffer.cast()) }.is_none_or(|b| b.is_host());
    // (stored packed only where this processor runs the packed product: `repack::packs`)
    op.op == Op::MUL_MAT
        && repack::is_repacked(src0)
        && src0.ne[2] == 1
        && src0.ne[3] == 1
        && src1.type_ == Type::F32
        && host(src1)
        && op.type_ == Type::F32
        && op.nb[0] == 4
}

impl Device for CpuDevice {
    fn get_name(&self) -> &CStr {
        c"CPU"
    }

    fn get_description(&self) -> &CStr {
        &DESCRIPTION
    }

    /// ggml counts all physical memory as free, "free" being ill-defined for system RAM.
    fn get_memory(&self) -> (usize, usize) {
        let total = physical_memory();
        (total, total)
    }

    fn get_type(&self) -> DevType {
        DevType::CPU
    }

    fn get_props(&self) -> DevProps {
        let caps = DevCaps {
            async_: false,
            host_buffer: false,
            buffer_from_host_ptr: true,
            events: false,
            mmap_support: true,
        };
        DevProps::describe(self, caps)
    }

    fn init_backend(&self, this: DevicePtr, _params: Option<&CStr>) -> Option<BackendPtr> {
        Some(backend::new(this))
    }

    fn get_buffer_type(&self, _this: DevicePtr) -> Option<BufferTypePtr> {
        Some(cpu_buffer_type())
    }

    unsafe fn buffer_from_host_ptr(&self, ptr: *mut c_void, size: usize, _max_tensor_size: usize) -> Option<BufferPtr> {
        Some(cpu_buffer_from_ptr(ptr, size))
    }

    fn supports_op(&self, op: TensorPtr) -> bool {
        // an op on weights in an extra buffer type is that type's to accept
        // SAFETY: an op's sources are null or live tensors.
        if op.src.iter().any(|&s| unsafe { s.as_ref() }.is_some_and(repack::in_repack_buffer)) {
            repack_supports_op(&op)
        } else {
            kernels::supports_op(&op)
        }
    }

    fn supports_buft(&self, buft: BufferTypePtr) -> bool {
        buft.is_host() || buft == repack::buffer_type()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::interface::GGML_BACKEND_API_VERSION;
    use crate::core::context::{Context, InitParams};

    fn no_alloc_ctx() -> Box<Context> {
        Context::new(InitParams { mem_size: 1 << 20, mem_buffer: std::ptr::null_mut(), no_alloc: true })
    }

    #[test]
    fn model_name_is_trimmed_first_entry() {
        let info = "processor\t: 0\nmodel name\t:  Fancy CPU 9000  \nmodel name\t: other\n";
        assert_eq!(cpu_model_name(info), Some("Fancy CPU 9000"));
        assert_eq!(cpu_model_name("processor : 0\n"), None);
    }

    #[test]
    fn cpu_registry_has_one_cpu_device() {
        let reg = cpu_reg();
        assert_eq!(reg.name_lossy(), "CPU");
        assert_eq!(reg.api_version(), GGML_BACKEND_API_VERSION);
        assert_eq!(reg.dev_count(), 1);
        let dev = reg.dev_get(0);
        assert_eq!(dev.name_lossy(), "CPU");
        assert_eq!(dev.dev_type(), DevType::CPU);
        assert_eq!(dev.reg(), reg.as_ptr());
        let props = dev.props();
        assert_eq!(props.type_, DevType::CPU);
        assert!(props.caps.buffer_from_host_ptr && props.caps.mmap_support);
        assert!(!props.caps.async_ && !props.caps.events && !props.caps.host_buffer);
        assert!(props.device_id.is_null());
        assert!(props.memory_total > 0 && props.memory_free == props.memory_total);
        assert!(dev.host_buffer_type().is_none());
        assert!(dev.supports_buft(cpu_buffer_type()));
        dev.init_backend(None).expect("CPU backend").free();
        assert!(!reg.proc_address(c"ggml_backend_cpu_set_use_ref").is_null());
        assert!(!reg.proc_address(c"ggml_backend_dev_get_extra_bufts").is_null());
        assert!(reg.proc_address(c"ggml_backend_no_such_function").is_null());
    }

    #[test]
    fn the_extra_buffer_types_are_the_repacked_one_where_it_runs() {
        let extra = extra_buffer_types();
        if repack_offered() {
            assert_eq!(extra, [repack::buffer_type()]);
        } else {
            assert!(extra.is_empty());
        }
        assert!(CPU_DEVICE.handle().supports_buft(repack::buffer_type()));
    }

    #[test]
    fn the_device_takes_products_of_repacked_weights_only() {
        let mut c = no_alloc_ctx();
        let w = c.new_tensor(Type::Q4_0, &[64, 32, 1, 1]);
        let x = c.new_tensor(Type::F32, &[64, 5, 1, 1]);
        let y = crate::core::ops::matmul::mul_mat(&mut c, w, x);
        let odd = c.new_tensor(Type::Q4_0, &[64, 24, 1, 1]);
        let y_odd = crate::core::ops::matmul::mul_mat(&mut c, odd, x);
        let placeholder = repack::buffer_type().alloc_buffer(0).expect("a placeholder buffer");
        for t in [w, odd] {
            t.get_mut().buffer = placeholder.as_ptr().cast();
        }
        assert_eq!(repack_supports_op(&y), repack_offered());
        // 24 rows are not whole groups: stored as written, computed as plain weights
        assert!(repack_supports_op(&y_odd));
        let scaled = crate::core::ops::elementwise::scale(&mut c, w, 2.0);
        assert!(!repack_supports_op(&scaled), "a packed tensor serves MUL_MAT only");
        // a tensor the layout does not take is plain data: any op of the CPU kernels
        let norm = c.new_tensor(Type::F32, &[64, 1, 1, 1]);
        norm.get_mut().buffer = placeholder.as_ptr().cast();
        let scaled_norm = crate::core::ops::elementwise::scale(&mut c, norm, 2.0);
        assert!(repack_supports_op(&scaled_norm));
        norm.get_mut().buffer = std::ptr::null_mut();
        for t in [w, odd] {
            t.get_mut().buffer = std::ptr::null_mut();
        }
        placeholder.free();
    }
}
