//! The one list of block formats, from which every per-type dispatch over them is generated.
//!
//! A format is its [`BlockFormat`](super::BlockFormat) implementation in its own file (what
//! sets it apart from the others, such as its quantizer for `ggml_quantize_chunk` or where
//! its scales lie for validation, is said there, in the trait's constants and methods) and one
//! line below. Code that has to pick a format's code by [`Type`]
//! matches through [`with_weight_format!`] or [`with_block_format!`], whose arms are generated
//! from the list, so adding a line is all it takes for every such match to know the format.
//!
//! The list has two parts. The weight formats are those tensors are stored in: each has a
//! dequantizer, a quantizer for `ggml_quantize_chunk` and (in the CPU backend, which must
//! implement `VecDot` for each) a dot product with its activation format. The activation
//! formats only hold converted activations for those dot products, and ggml gives them no
//! dequantizer; Q8_0 is both, and listed as a weight.

/// Calls `$callback! { $payload weights { T => Block, … } activations { T => Block, … } }`
/// with every block format once: its `Type` constant and its block.
macro_rules! block_formats {
    ($($callback:ident)::+ ! { $($payload:tt)* }) => {
        $($callback)::+! {
            $($payload)*
            weights {
                Q4_0 => $crate::quants::q4::BlockQ4_0,
                Q4_1 => $crate::quants::q4::BlockQ4_1,
                Q5_0 => $crate::quants::q5::BlockQ5_0,
                Q5_1 => $crate::quants::q5::BlockQ5_1,
                Q8_0 => $crate::quants::q8::BlockQ8_0,
                Q2_K => $crate::quants::k_quants::BlockQ2K,
                Q3_K => $crate::quants::k_quants::BlockQ3K,
                Q4_K => $crate::quants::k_quants::BlockQ4K,
                Q5_K => $crate::quants::k_quants::BlockQ5K,
                Q6_K => $crate::quants::k_quants::BlockQ6K,
                IQ2_XXS => $crate::quants::iq2::BlockIq2Xxs,
                IQ2_XS => $crate::quants::iq2::BlockIq2Xs,
                IQ3_XXS => $crate::quants::iq3::BlockIq3Xxs,
                IQ1_S => $crate::quants::iq1::BlockIq1S,
                IQ4_NL => $crate::quants::iq4::BlockIq4Nl,
                IQ3_S => $crate::quants::iq3::BlockIq3S,
                IQ2_S => $crate::quants::iq2::BlockIq2S,
                IQ4_XS => $crate::quants::iq4::BlockIq4Xs,
                IQ1_M => $crate::quants::iq1::BlockIq1M,
                TQ1_0 => $crate::quants::ternary::BlockTq1_0,
                TQ2_0 => $crate::quants::ternary::BlockTq2_0,
                MXFP4 => $crate::quants::fp4::BlockMxfp4,
                NVFP4 => $crate::quants::fp4::BlockNvfp4,
                Q1_0 => $crate::quants::low_bit::BlockQ1_0,
                Q2_0 => $crate::quants::low_bit::BlockQ2_0,
            }
            activations {
                Q8_1 => $crate::quants::q8::BlockQ8_1,
                Q8_K => $crate::quants::k_quants::BlockQ8K,
            }
        }
    };
}

/// `match $ty { Type::W => $f::<W's block>($args), …, _ => $otherwise }` over the weight
/// formats: `$f` is a generic function (or a path to one) of the block.
macro_rules! with_weight_format {
    ($ty:expr, $f:ident($($arg:expr),* $(,)?), _ => $otherwise:expr $(,)?) => {
        $crate::quants::formats::block_formats!(
            $crate::quants::formats::format_arms! { weights; $ty; $f; ($($arg),*); $otherwise; }
        )
    };
}

/// [`with_weight_format!`] over every block format, the activation formats too.
macro_rules! with_block_format {
    ($ty:expr, $f:ident($($arg:expr),* $(,)?), _ => $otherwise:expr $(,)?) => {
        $crate::quants::formats::block_formats!(
            $crate::quants::formats::format_arms! { all; $ty; $f; ($($arg),*); $otherwise; }
        )
    };
}

/// The match of [`with_weight_format!`] (`weights`) and [`with_block_format!`] (`all`), from
/// the list.
macro_rules! format_arms {
    (
        weights; $ty:expr; $f:ident; $args:tt; $otherwise:expr;
        weights { $($w:ident => $wb:ty,)* }
        activations { $($activations:tt)* }
    ) => {
        match $ty {
            $($crate::core::types::Type::$w => $f::<$wb> $args,)*
            _ => $otherwise,
        }
    };
    (
        all; $ty:expr; $f:ident; $args:tt; $otherwise:expr;
        weights { $($w:ident => $wb:ty,)* }
        activations { $($a:ident => $ab:ty,)* }
    ) => {
        match $ty {
            $($crate::core::types::Type::$w => $f::<$wb> $args,)*
            $($crate::core::types::Type::$a => $f::<$ab> $args,)*
            _ => $otherwise,
        }
    };
}

pub(crate) use {block_formats, format_arms, with_block_format, with_weight_format};

use crate::core::types::Type;

/// Whether `ty` is one of the weight formats of the list.
pub fn is_weight_format(ty: Type) -> bool {
    macro_rules! any_weight {
        (weights { $($w:ident => $wb:ty,)* } activations { $($activations:tt)* }) => {
            matches!(ty, $(Type::$w)|*)
        };
    }
    block_formats!(any_weight! {})
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quants::BlockFormat;

    /// The list as (type, block type, values per block, block bytes, whether a weight format).
    fn listed() -> Vec<(Type, Type, usize, usize, bool)> {
        macro_rules! entries {
            (weights { $($w:ident => $wb:ty,)* } activations { $($a:ident => $ab:ty,)* }) => {
                vec![
                    $((Type::$w, <$wb as BlockFormat>::TYPE, <$wb as BlockFormat>::QK, size_of::<$wb>(), true),)*
                    $((Type::$a, <$ab as BlockFormat>::TYPE, <$ab as BlockFormat>::QK, size_of::<$ab>(), false),)*
                ]
            };
        }
        block_formats!(entries! {})
    }

    #[test]
    fn every_quantized_type_is_listed_once_with_its_block() {
        let list = listed();
        for t in (0..Type::COUNT).map(Type).filter(|t| t.is_quantized()) {
            let lines = list.iter().filter(|e| e.0 == t).count();
            assert_eq!(lines, 1, "{} is in the list of block formats {} times", t.name(), lines);
        }
        for &(ty, block_type, qk, size, _) in &list {
            assert!(ty.is_quantized(), "{} is not a block format", ty.name());
            assert_eq!(block_type, ty, "the block listed for {} is {}'s", ty.name(), block_type.name());
            assert_eq!((qk as i64, size), (ty.blck_size(), ty.type_size()), "{}", ty.name());
        }
    }

    #[test]
    fn the_dispatch_follows_the_list() {
        fn type_of<B: BlockFormat>() -> Type {
            B::TYPE
        }
        for (ty, _, _, _, weight) in listed() {
            assert_eq!(with_block_format!(ty, type_of(), _ => Type::F32), ty);
            let expected = if weight { ty } else { Type::F32 };
            assert_eq!(with_weight_format!(ty, type_of(), _ => Type::F32), expected);
            assert_eq!(is_weight_format(ty), weight);
        }
        assert!(!is_weight_format(Type::F16) && !is_weight_format(Type(4)));
    }
}
