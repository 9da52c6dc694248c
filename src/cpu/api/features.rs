//! What the processor offers: the `ggml_cpu_has_*` / `ggml_cpu_get_*` queries.

use crate::backend::interface::BackendFeature;
use crate::cpu::features;
use std::ffi::c_int;
use std::sync::OnceLock;

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

struct FeatureList(Vec<BackendFeature>);

// SAFETY: built once, never written again; the strings are static.
unsafe impl Sync for FeatureList {}
// SAFETY: as above.
unsafe impl Send for FeatureList {}

/// The features `ggml_backend_get_features` lists for the CPU, as ggml names them, ending
/// with a null entry.
pub fn backend_features() -> &'static [BackendFeature] {
    static FEATURES: OnceLock<FeatureList> = OnceLock::new();
    &FEATURES
        .get_or_init(|| {
            super::cpu_init();
            let flags: [(&'static str, CpuFeature); 28] = [
                ("SSE3", CpuFeature::Sse3),
                ("SSSE3", CpuFeature::Ssse3),
                ("AVX", CpuFeature::Avx),
                ("AVX_VNNI", CpuFeature::AvxVnni),
                ("AVX2", CpuFeature::Avx2),
                ("F16C", CpuFeature::F16c),
                ("FMA", CpuFeature::Fma),
                ("BMI2", CpuFeature::Bmi2),
                ("AVX512", CpuFeature::Avx512),
                ("AVX512_VBMI", CpuFeature::Avx512Vbmi),
                ("AVX512_VNNI", CpuFeature::Avx512Vnni),
                ("AVX512_BF16", CpuFeature::Avx512Bf16),
                ("AMX_INT8", CpuFeature::AmxInt8),
                ("NEON", CpuFeature::Neon),
                ("ARM_FMA", CpuFeature::ArmFma),
                ("FP16_VA", CpuFeature::Fp16Va),
                ("MATMUL_INT8", CpuFeature::MatmulInt8),
                ("SVE", CpuFeature::Sve),
                ("DOTPROD", CpuFeature::Dotprod),
                ("SVE_CNT", CpuFeature::SveCnt),
                ("SME", CpuFeature::Sme),
                ("SME2", CpuFeature::Sme2),
                ("RISCV_V", CpuFeature::RiscvV),
                ("RVV_VLEN", CpuFeature::RvvVlen),
                ("VSX", CpuFeature::Vsx),
                ("VXE", CpuFeature::Vxe),
                ("WASM_SIMD", CpuFeature::WasmSimd),
                ("LLAMAFILE", CpuFeature::Llamafile),
            ];
            let sized = [CpuFeature::SveCnt, CpuFeature::RvvVlen];
            let mut list: Vec<BackendFeature> = flags
                .iter()
                .filter_map(|&(name, f)| {
                    let value = cpu_has(f);
                    (value > 0).then(|| {
                        let value: &'static str = if sized.contains(&f) { value.to_string().leak() } else { "1" };
                        BackendFeature {
                            name: crate::core::c_str::static_c_str(name),
                            value: crate::core::c_str::static_c_str(value),
                        }
                    })
                })
                .collect();
            list.push(BackendFeature { name: std::ptr::null(), value: std::ptr::null() });
            FeatureList(list)
        })
        .0
}
