//! Element types: the `ggml_type` enumeration and the per-type facts (name, block size, bytes
//! per block) that every layer sizes its memory with.
//!
//! C passes enums as plain integers and may pass any value, so a type is a transparent `i32`
//! newtype rather than a Rust enum: an out-of-range value is representable and is rejected by
//! [`Type::traits`] with a clear message instead of being undefined behaviour.

/// `enum ggml_type`.
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Type(pub i32);

impl Type {
    pub const F32: Type = Type(0);
    pub const F16: Type = Type(1);
    pub const Q4_0: Type = Type(2);
    pub const Q4_1: Type = Type(3);
    pub const Q5_0: Type = Type(6);
    pub const Q5_1: Type = Type(7);
    pub const Q8_0: Type = Type(8);
    pub const Q8_1: Type = Type(9);
    pub const Q2_K: Type = Type(10);
    pub const Q3_K: Type = Type(11);
    pub const Q4_K: Type = Type(12);
    pub const Q5_K: Type = Type(13);
    pub const Q6_K: Type = Type(14);
    pub const Q8_K: Type = Type(15);
    pub const IQ2_XXS: Type = Type(16);
    pub const IQ2_XS: Type = Type(17);
    pub const IQ3_XXS: Type = Type(18);
    pub const IQ1_S: Type = Type(19);
    pub const IQ4_NL: Type = Type(20);
    pub const IQ3_S: Type = Type(21);
    pub const IQ2_S: Type = Type(22);
    pub const IQ4_XS: Type = Type(23);
    pub const I8: Type = Type(24);
    pub const I16: Type = Type(25);
    pub const I32: Type = Type(26);
    pub const I64: Type = Type(27);
    pub const F64: Type = Type(28);
    pub const IQ1_M: Type = Type(29);
    pub const BF16: Type = Type(30);
    pub const TQ1_0: Type = Type(34);
    pub const TQ2_0: Type = Type(35);
    pub const MXFP4: Type = Type(39);
    pub const NVFP4: Type = Type(40);
    pub const Q1_0: Type = Type(41);
    pub const Q2_0: Type = Type(42);
    pub const COUNT: i32 = 43;

    /// True for the values that name a type (retired slots 4, 5, 31-33, 36-38 included: the
    /// reference keeps them in its table with block size 0).
    pub fn is_valid(self) -> bool {
        (0..Self::COUNT).contains(&self.0)
    }

    /// The facts about this type; aborts on a value outside the enumeration.
    pub fn traits(self) -> &'static TypeInfo {
        crate::ggml_assert!(self.is_valid(), "invalid ggml_type {}", self.0);
        &TYPE_INFO[self.0 as usize]
    }

    pub fn name(self) -> &'static str {
        if self.is_valid() { TYPE_INFO[self.0 as usize].name } else { "NONE" }
    }

    pub fn blck_size(self) -> i64 {
        self.traits().blck_size
    }

    pub fn type_size(self) -> usize {
        self.traits().type_size
    }

    pub fn is_quantized(self) -> bool {
        self.traits().is_quantized
    }

    /// Bytes taken by `ne` elements laid out in a row of this type.
    pub fn row_size(self, ne: i64) -> usize {
        let info = self.traits();
        crate::ggml_assert!(
            info.blck_size > 0 && ne % info.blck_size == 0,
            "row of {} elements is not a whole number of {} blocks",
            ne,
            info.name
        );
        info.type_size * (ne / info.blck_size) as usize
    }
}

/// Name and size facts of one type: the `type_name`, `blck_size`, `type_size` and
/// `is_quantized` fields of `struct ggml_type_traits`.
pub struct TypeInfo {
    pub name: &'static str,
    pub blck_size: i64,
    pub type_size: usize,
    pub is_quantized: bool,
}

const fn plain(name: &'static str, type_size: usize) -> TypeInfo {
    TypeInfo { name, blck_size: 1, type_size, is_quantized: false }
}

const fn quant(name: &'static str, blck_size: i64, type_size: usize) -> TypeInfo {
    TypeInfo { name, blck_size, type_size, is_quantized: true }
}

const fn retired(name: &'static str) -> TypeInfo {
    TypeInfo { name, blck_size: 0, type_size: 0, is_quantized: false }
}

const QK_K: i64 = 256;

/// Indexed by the enum value. Block byte sizes follow the block layouts of ggml 0.25.1.
static TYPE_INFO: [TypeInfo; Type::COUNT as usize] = [
    plain("f32", 4),                                                       // 0
    plain("f16", 2),                                                       // 1
    quant("q4_0", 32, 18),                                                 // 2
    quant("q4_1", 32, 20),                                                 // 3
    retired("DEPRECATED"),                                                 // 4: Q4_2
    retired("DEPRECATED"),                                                 // 5: Q4_3
    quant("q5_0", 32, 22),                                                 // 6
    quant("q5_1", 32, 24),                                                 // 7
    quant("q8_0", 32, 34),                                                 // 8
    quant("q8_1", 32, 36),                                                 // 9
    quant("q2_K", QK_K, 84),                                               // 10
    quant("q3_K", QK_K, 110),                                              // 11
    quant("q4_K", QK_K, 144),                                              // 12
    quant("q5_K", QK_K, 176),                                              // 13
    quant("q6_K", QK_K, 210),                                              // 14
    quant("q8_K", QK_K, 292),                                              // 15
    quant("iq2_xxs", QK_K, 66),                                            // 16
    quant("iq2_xs", QK_K, 74),                                             // 17
    quant("iq3_xxs", QK_K, 98),                                            // 18
    quant("iq1_s", QK_K, 50),                                              // 19
    quant("iq4_nl", 32, 18),                                               // 20
    quant("iq3_s", QK_K, 110),                                             // 21
    quant("iq2_s", QK_K, 82),                                              // 22
    quant("iq4_xs", QK_K, 136),                                            // 23
    plain("i8", 1),                                                        // 24
    plain("i16", 2),                                                       // 25
    plain("i32", 4),                                                       // 26
    plain("i64", 8),                                                       // 27
    plain("f64", 8),                                                       // 28
    quant("iq1_m", QK_K, 56),                                              // 29
    plain("bf16", 2),                                                      // 30
    retired("TYPE_Q4_0_4_4 REMOVED, use Q4_0 with runtime repacking"),     // 31
    retired("TYPE_Q4_0_4_8 REMOVED, use Q4_0 with runtime repacking"),     // 32
    retired("TYPE_Q4_0_8_8 REMOVED, use Q4_0 with runtime repacking"),     // 33
    quant("tq1_0", QK_K, 54),                                              // 34
    quant("tq2_0", QK_K, 66),                                              // 35
    retired("TYPE_IQ4_NL_4_4 REMOVED, use IQ4_NL with runtime repacking"), // 36
    retired("TYPE_IQ4_NL_4_8 REMOVED, use IQ4_NL with runtime repacking"), // 37
    retired("TYPE_IQ4_NL_8_8 REMOVED, use IQ4_NL with runtime repacking"), // 38
    quant("mxfp4", 32, 17),                                                // 39
    quant("nvfp4", 64, 36),                                                // 40
    quant("q1_0", 128, 18),                                                // 41
    quant("q2_0", 64, 18),                                                 // 42
];

/// `enum ggml_ftype`: the "mostly" type of a model file, mapped to its tensor type.
pub fn ftype_to_type(ftype: i32) -> Type {
    match ftype {
        0 => Type::F32,
        1 => Type::F16,
        2 => Type::Q4_0,
        3 => Type::Q4_1,
        7 => Type::Q8_0,
        8 => Type::Q5_0,
        9 => Type::Q5_1,
        10 => Type::Q2_K,
        11 => Type::Q3_K,
        12 => Type::Q4_K,
        13 => Type::Q5_K,
        14 => Type::Q6_K,
        15 => Type::IQ2_XXS,
        16 => Type::IQ2_XS,
        17 => Type::IQ3_XXS,
        18 => Type::IQ1_S,
        19 => Type::IQ4_NL,
        20 => Type::IQ3_S,
        21 => Type::IQ2_S,
        22 => Type::IQ4_XS,
        23 => Type::IQ1_M,
        24 => Type::BF16,
        25 => Type::MXFP4,
        26 => Type::NVFP4,
        27 => Type::Q1_0,
        28 => Type::Q2_0,
        // GGML_FTYPE_UNKNOWN, GGML_FTYPE_MOSTLY_Q4_1_SOME_F16 and retired values
        _ => Type(Type::COUNT),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_sizes_follow_blocks() {
        assert_eq!(Type::F32.row_size(10), 40);
        assert_eq!(Type::Q4_0.row_size(64), 36);
        assert_eq!(Type::Q6_K.row_size(512), 420);
        assert_eq!(Type::BF16.name(), "bf16");
        assert_eq!(Type(99).name(), "NONE");
    }

    #[test]
    fn ftype_maps_to_types() {
        assert_eq!(ftype_to_type(24), Type::BF16);
        assert_eq!(ftype_to_type(4), Type(Type::COUNT));
        assert_eq!(ftype_to_type(-1), Type(Type::COUNT));
    }
}
