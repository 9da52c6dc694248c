# Sourced by scripts/cuda-emulator-check and scripts/cuda-gpu-check: the ops src/cuda/ops
# computes, as the reference's test-backend-ops names them.
cuda_ops=(GET_ROWS SET_ROWS CPY DUP CONT ADD SUB MUL DIV SCALE CLAMP LEAKY_RELU SQR SQRT LOG SIN COS
  NORM RMS_NORM L2_NORM ROPE ARGSORT SUM_ROWS MEAN REPEAT CONCAT SILU GELU SWIGLU GEGLU
  SOFT_MAX MUL_MAT MUL_MAT_ID FLASH_ATTN_EXT)
