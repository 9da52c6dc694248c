//! C entry points of the op constructors, one file per family, named as in `core::ops`; each
//! converts its arguments and calls the constructor there.

// The export macros come first: `macro_rules!` is visible only in the modules declared after it.

/// Exports constructors of the shape `(ctx, a)`.
macro_rules! export_one_operand {
    ($($c_name:ident => $rust:path;)*) => {
        $(
            #[unsafe(no_mangle)]
            pub extern "C" fn $c_name(ctx: *mut Context, a: *mut Tensor) -> *mut Tensor {
                // SAFETY: the C caller's contract: handles passed to the API are live.
                unsafe { $rust(arg!(ctx), arg!(a)).as_ptr() }
            }
        )*
    };
}

/// Exports constructors of the shape `(ctx, a, b)`.
macro_rules! export_two_operands {
    ($($c_name:ident => $rust:path;)*) => {
        $(
            #[unsafe(no_mangle)]
            pub extern "C" fn $c_name(ctx: *mut Context, a: *mut Tensor, b: *mut Tensor) -> *mut Tensor {
                // SAFETY: the C caller's contract: handles passed to the API are live.
                unsafe { $rust(arg!(ctx), arg!(a), arg!(b)).as_ptr() }
            }
        )*
    };
}

/// Exports constructors of the shape `(ctx, a, float)`.
macro_rules! export_with_f32 {
    ($($c_name:ident => $rust:path;)*) => {
        $(
            #[unsafe(no_mangle)]
            pub extern "C" fn $c_name(ctx: *mut Context, a: *mut Tensor, x: f32) -> *mut Tensor {
                // SAFETY: the C caller's contract: handles passed to the API are live.
                unsafe { $rust(arg!(ctx), arg!(a), x).as_ptr() }
            }
        )*
    };
}

mod attention;
mod conv;
mod custom;
mod deepseek;
mod elementwise;
mod glu;
mod loss;
mod matmul;
mod norm;
mod pool;
mod reduce;
mod rope;
mod rows;
mod sequence;
mod shape;
mod softmax;
mod solve;
mod sort;
mod ssm;
mod unary;
mod window;
