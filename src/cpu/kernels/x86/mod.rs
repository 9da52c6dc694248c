//! The x86-64 building blocks the kernels share, by instruction set: what does not belong to
//! one format or one op. Everything here needs the processor features its module names;
//! callers check them through [`features`](crate::cpu::features).

pub mod avx512;
pub(crate) mod byte_tiles;
pub mod int8;
pub(crate) mod vbmi_grids;
