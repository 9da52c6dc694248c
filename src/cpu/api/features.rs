//! What the processor offers: the `ggml_cpu_has_*` / `ggml_cpu_get_*` queries.

use crate::cpu::kernels::features;
use std::ffi::c_int;

/// One `ggml_cpu_has_*` / `ggml_cpu_get_*` query.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum CpuFeature {
    Sse3,
    Ssse3,
    Avx,
    AvxVnni,
    Avx2,
    Bmi2,
    F16c,
    Fma,
    Avx512,
    Avx512Vbmi,
    Avx512Vnni,
    Avx512Bf16,
    AmxInt8,
    Neon,
    ArmFma,
    Fp16Va,
    Dotprod,
    MatmulInt8,
    Sve,
    /// The SVE vector length in bytes.
    SveCnt,
    Sme,
    Sme2,
    RiscvV,
    /// The RISC-V vector length in bytes.
    RvvVlen,
    Vsx,
    Vxe,
    WasmSimd,
    Llamafile,
}

#[cfg(target_arch = "aarch64")]
fn arm_feature(f: CpuFeature) -> c_int {
    use std::arch::is_aarch64_feature_detected as has;
    let on = match f {
        CpuFeature::Neon | CpuFeature::ArmFma => has!("neon"),
        CpuFeature::Fp16Va => has!("fp16"),
        CpuFeature::Dotprod => has!("dotprod"),
        CpuFeature::MatmulInt8 => has!("i8mm"),
        CpuFeature::Sve => has!("sve"),
        CpuFeature::Sme => has!("sme"),
        _ => false,
    };
    c_int::from(on)
}

#[cfg(not(target_arch = "aarch64"))]
fn arm_feature(_f: CpuFeature) -> c_int {
    0
}

/// The answer to one `ggml_cpu_has_*` query: 1 or 0 (a size in bytes for the two lengths).
/// x86 and ARM answers come from the processor itself, as the kernels pick their paths; this
/// build has no AMX, SVE, SME, RISC-V, POWER, s390x, WebAssembly or llamafile code paths.
pub fn cpu_has(f: CpuFeature) -> c_int {
    let x = features::features();
    let on = match f {
        CpuFeature::Sse3 => x.sse3,
        CpuFeature::Ssse3 => x.ssse3,
        CpuFeature::Avx => x.avx,
        CpuFeature::AvxVnni => x.avx_vnni,
        CpuFeature::Avx2 => x.avx2,
        CpuFeature::Bmi2 => x.bmi2,
        CpuFeature::F16c => x.f16c,
        CpuFeature::Fma => x.fma,
        CpuFeature::Avx512 => x.avx512f,
        CpuFeature::Avx512Vbmi => x.avx512vbmi,
        CpuFeature::Avx512Vnni => x.avx512vnni,
        CpuFeature::Avx512Bf16 => x.avx512bf16,
        CpuFeature::Neon
        | CpuFeature::ArmFma
        | CpuFeature::Fp16Va
        | CpuFeature::Dotprod
        | CpuFeature::MatmulInt8
        | CpuFeature::Sve
        | CpuFeature::Sme => return arm_feature(f),
        CpuFeature::AmxInt8
        | CpuFeature::SveCnt
        | CpuFeature::Sme2
        | CpuFeature::RiscvV
        | CpuFeature::RvvVlen
        | CpuFeature::Vsx
        | CpuFeature::Vxe
        | CpuFeature::WasmSimd
        | CpuFeature::Llamafile => false,
    };
    c_int::from(on)
}
