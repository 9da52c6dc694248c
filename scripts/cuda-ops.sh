# Sourced by scripts/cuda-emulator-check and scripts/cuda-gpu-check: the ops src/cuda/ops
# computes, as the reference's test-backend-ops names them, and for the two whose every case
# takes too long, the cases to run.
cuda_ops=(GET_ROWS SET_ROWS CPY DUP CONT ADD SUB MUL DIV SCALE CLAMP LEAKY_RELU SQR SQRT LOG SIN COS
  NORM RMS_NORM L2_NORM ROPE ARGSORT SUM_ROWS MEAN REPEAT CONCAT SILU GELU SWIGLU GEGLU
  SOFT_MAX MUL_MAT MUL_MAT_ID FLASH_ATTN_EXT)

# op -> a pattern over its cases ('' for every case). Every case of each op runs in seconds on
# the emulator (MUL_MAT's 702 in about 140 s) except two: MUL_MAT_ID, whose 943 cases take 7
# minutes (most of it quantizing their large weights on the host), and FLASH_ATTN_EXT. Their
# patterns take every weight type through the vector products (1 and 4 tokens) and the tiles
# of the batched path (32 tokens).
declare -A op_pattern=(
  [MUL_MAT_ID]='n_mats=4,n_used=2,b=0,m=512,n=(1|4|32),k=256'
  [FLASH_ATTN_EXT]='hsk=(64|128),hsv=(64|128),nh=4,nr23=\[1,1\],kv=512,nb=(1|3),mask=1,sinks=(0|1),max_bias=0\.000000,logit_softcap=0\.000000,prec=f32,type_K=f16,type_V=f16,permute=\[0,1,2,3\]'
)
