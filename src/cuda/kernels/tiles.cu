// Products a tile at a time: TILE_ROWS weight rows by up to TILE_COLS activation columns, every
// weight decoded once per tile instead of once per column, for MUL_MAT_ID of batches (a
// mixture-of-experts model reading a prompt) and for MUL_MAT of batches where there is no
// cuBLAS. For MUL_MAT_ID the (slot, token) columns are first grouped by the expert they ask
// for, on the device, so that no host wait splits the graph. Weights of any type the prelude
// decodes; activations and result F32.
// shared-memory budget: 12544 bytes
#include "prelude.cuh"

// A tile: TILE_ROWS weight rows by up to TILE_COLS columns, swept along k one 32-value group
// at a time. Each of the TILE_THREADS threads owns 4 x 2 of the results.
#define TILE_ROWS 64
#define TILE_COLS 32
#define TILE_THREADS 256
#define THREAD_ROWS (TILE_ROWS / 16)
#define THREAD_COLS (TILE_COLS / 16)
// What each thread loads a step: element v of the step's TILE_ROWS x 32 weights (TILE_COLS x
// 32 activations) is position v % 32 of the group in row (column) v / 32.
#define ROW_LOADS (TILE_ROWS * 32 / TILE_THREADS)
#define COL_LOADS (TILE_COLS * 32 / TILE_THREADS)

// The tile of weight rows m0.. of the matrix at `w` (sw.ne[1] rows sw.nb[1] bytes apart, rows
// packed, whole blocks of a block type) by the columns this thread loads, `cols[i]` for column
// (threadIdx.x + i * TILE_THREADS) / 32 of the tile, null past its last. Leaves in `acc` the
// results of rows tx + 16 r and columns ty + 16 c of the tile, tx = threadIdx.x % 16 and
// ty = threadIdx.x / 16, so that the threads of a warp read neighbouring weights. Every
// thread of the block calls it.
__device__ __forceinline__ void tile_product(const shape & sw, const char * w, int type, i64 m0,
                                             const float * const cols[COL_LOADS],
                                             float acc[THREAD_ROWS][THREAD_COLS]) {
    const int tid = threadIdx.x;
    const char * rows[ROW_LOADS];
    for (int i = 0; i < ROW_LOADS; ++i) {
        const i64 m = m0 + (tid + i * TILE_THREADS) / 32;
        rows[i] = m < sw.ne[1] ? w + m * sw.nb[1] : nullptr;
    }
    // Each step's group of weights and activations, k first so that the product reads along
    // a row of each; a column of padding keeps the stores off one bank.
    __shared__ float ws[32][TILE_ROWS + 1];
    __shared__ float xs[32][TILE_COLS + 1];
    const int tx = tid % 16, ty = tid / 16;
    for (int r = 0; r < THREAD_ROWS; ++r) {
        for (int c = 0; c < THREAD_COLS; ++c) {
            acc[r][c] = 0.0f;
        }
    }
    // a float row may end within its last group, whose missing values load as zeros
    const i64 groups = (sw.ne[0] + 31) / 32;
    const int j = tid % 32;
    for (i64 g = 0; g < groups; ++g) {
        const bool in_row = 32 * g + j < sw.ne[0];
        for (int i = 0; i < ROW_LOADS; ++i) {
            ws[j][(tid + i * TILE_THREADS) / 32] = rows[i] && in_row ? row_value(type, rows[i], 32 * g + j) : 0.0f;
        }
        for (int i = 0; i < COL_LOADS; ++i) {
            xs[j][(tid + i * TILE_THREADS) / 32] = cols[i] && in_row ? cols[i][32 * g + j] : 0.0f;
        }
        __syncthreads();
        for (int k = 0; k < 32; ++k) {
            float a[THREAD_ROWS], b[THREAD_COLS];
            for (int r = 0; r < THREAD_ROWS; ++r) {
                a[r] = ws[k][tx + 16 * r];
            }
            for (int c = 0; c < THREAD_COLS; ++c) {
                b[c] = xs[k][ty + 16 * c];
            }
            for (int r = 0; r < THREAD_ROWS; ++r) {
                for (int c = 0; c < THREAD_COLS; ++c) {
                    acc[r][c] += a[r] * b[c];
                }
            }
        }
        __syncthreads();
    }
}

// ---- MUL_MAT -------------------------------------------------------------------------------

// dst[m, n, i12, i13] = sum_k w[k, m, i12 / r2, i13 / r3] * x[k, n, i12, i13]. Grid: x = weight
// rows / TILE_ROWS, y = columns / TILE_COLS, z = x.ne[2] * x.ne[3]; TILE_THREADS threads. The
// columns of `x` are packed F32.
extern "C" __global__ void mul_mat_tiles(shape sw, const char * w, int type, shape sx, const char * x, shape sd, char * d) {
    const i64 m0 = (i64) blockIdx.x * TILE_ROWS;
    const i64 n0 = (i64) blockIdx.y * TILE_COLS;
    const i64 i12 = blockIdx.z % sx.ne[2];
    const i64 i13 = blockIdx.z / sx.ne[2];
    const char * matrix = w + (i12 / (sx.ne[2] / sw.ne[2])) * sw.nb[2] + (i13 / (sx.ne[3] / sw.ne[3])) * sw.nb[3];
    const float * cols[COL_LOADS];
    for (int i = 0; i < COL_LOADS; ++i) {
        const i64 n = n0 + (threadIdx.x + i * TILE_THREADS) / 32;
        cols[i] = n < sx.ne[1] ? (const float *) (x + n * sx.nb[1] + i12 * sx.nb[2] + i13 * sx.nb[3]) : nullptr;
    }
    float acc[THREAD_ROWS][THREAD_COLS];
    tile_product(sw, matrix, type, m0, cols, acc);

    const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
    for (int c = 0; c < THREAD_COLS; ++c) {
        const i64 n = n0 + ty + 16 * c;
        for (int r = 0; r < THREAD_ROWS; ++r) {
            const i64 m = m0 + tx + 16 * r;
            if (m < sw.ne[1] && n < sx.ne[1]) {
                *(float *) (d + shape_offset(sd, m, n, i12, i13)) = acc[r][c];
            }
        }
    }
}

// ---- MUL_MAT_ID ----------------------------------------------------------------------------

// The table group_by_expert writes for mul_mat_id_tiles, in i32 (the host sizes it):
//   [0]                          the number of tiles
//   [1 + 3t], [2 + 3t], [3 + 3t] tile t: its expert, its first entry in the column list, its
//                                number of columns
//   then, from 1 + 3 * max_tiles, the column list: each column as slot + slots * token, the
//   columns of each expert together, experts in order
//   then a start in the column list for each expert

// The expert column `c` (slot c % slots of token c / slots) asks for.
__device__ __forceinline__ i64 expert_of(const shape & si, const char * ids, i64 c) {
    return *(const i32 *) (ids + (c % si.ne[0]) * si.nb[0] + (c / si.ne[0]) * si.nb[1]);
}

// One block. Each thread counts, then lists, the columns of its experts; thread 0 turns the
// counts into starts and tiles between the two. Scanning every column per expert keeps the
// order of each expert's columns that of the ids, with no atomics. Columns asking for no
// expert of `experts` are in no tile.
extern "C" __global__ void group_by_expert(shape si, const char * ids, int experts, int max_tiles, i32 * table) {
    const i64 columns = si.ne[0] * si.ne[1];
    i32 * tiles = table + 1;
    i32 * list = tiles + 3 * max_tiles;
    i32 * starts = list + columns;
    for (int e = threadIdx.x; e < experts; e += blockDim.x) {
        i32 count = 0;
        for (i64 c = 0; c < columns; ++c) {
            count += expert_of(si, ids, c) == e;
        }
        starts[e] = count;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        i32 start = 0, n = 0;
        for (int e = 0; e < experts; ++e) {
            const i32 count = starts[e];
            starts[e] = start;
            for (i32 first = 0; first < count; first += TILE_COLS, ++n) {
                tiles[3 * n] = e;
                tiles[3 * n + 1] = start + first;
                tiles[3 * n + 2] = min(TILE_COLS, count - first);
            }
            start += count;
        }
        table[0] = n;
    }
    __syncthreads();
    for (int e = threadIdx.x; e < experts; e += blockDim.x) {
        i32 at = starts[e];
        for (i64 c = 0; c < columns; ++c) {
            if (expert_of(si, ids, c) == e) {
                list[at++] = (i32) c;
            }
        }
    }
}

// dst[m, slot, token] = sum_k w[k, m, expert] * x[k, slot % x.ne[1], token] for the columns
// of each tile of the table. Grid: x = weight rows / TILE_ROWS, y = the table's max_tiles
// (blocks past its tile count leave at once); TILE_THREADS threads. Weight rows are packed,
// whole blocks of a block type; the columns of `x` are packed F32.
extern "C" __global__ void mul_mat_id_tiles(shape sw, const char * w, int type, shape sx, const char * x, int slots,
                                            const i32 * table, int max_tiles, shape sd, char * d) {
    const int tile = blockIdx.y;
    if (tile >= table[0]) {
        return;  // the whole block leaves together
    }
    const i32 * t = table + 1 + 3 * tile;
    const char * matrix = w + (i64) t[0] * sw.nb[2];
    const i32 * list = table + 1 + 3 * max_tiles + t[1];
    const int count = t[2];
    const i64 m0 = (i64) blockIdx.x * TILE_ROWS;
    const float * cols[COL_LOADS];
    for (int i = 0; i < COL_LOADS; ++i) {
        const int c = (threadIdx.x + i * TILE_THREADS) / 32;
        const i64 column = c < count ? list[c] : -1;
        cols[i] = column < 0 ? nullptr
                             : (const float *) (x + (column % slots % sx.ne[1]) * sx.nb[1] + (column / slots) * sx.nb[2]);
    }
    float acc[THREAD_ROWS][THREAD_COLS];
    tile_product(sw, matrix, type, m0, cols, acc);

    const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
    for (int c = 0; c < THREAD_COLS; ++c) {
        const int n = ty + 16 * c;
        if (n >= count) {
            continue;
        }
        const i64 column = list[n];
        for (int r = 0; r < THREAD_ROWS; ++r) {
            const i64 m = m0 + tx + 16 * r;
            if (m < sw.ne[1]) {
                *(float *) (d + shape_offset(sd, m, column % slots, column / slots, 0)) = acc[r][c];
            }
        }
    }
}
