// MUL_MAT_ID of batches (a mixture-of-experts model reading a prompt). The (slot, token)
// columns are first grouped by the expert they ask for, on the device, so that no host wait
// splits the graph; each expert's weights are then multiplied by its columns a tile at a
// time, every weight decoded once per tile of columns instead of once per column.
// Weights of any type the prelude decodes; activations and result F32.
// shared-memory budget: 12544 bytes
#include "prelude.cuh"

// A tile: TILE_ROWS weight rows of one expert by up to TILE_COLS of its columns, swept along
// k one 32-value group at a time. Each of the TILE_THREADS threads owns 4 x 2 of the results.
#define TILE_ROWS 64
#define TILE_COLS 32
#define TILE_THREADS 256
#define THREAD_ROWS (TILE_ROWS / 16)
#define THREAD_COLS (TILE_COLS / 16)

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
    const i64 expert = t[0];
    const i32 * list = table + 1 + 3 * max_tiles + t[1];
    const int count = t[2];
    const i64 m0 = (i64) blockIdx.x * TILE_ROWS;
    const int tid = threadIdx.x;

    // What this thread loads each step: 8 weight values and 4 activation values, element v
    // of a step's 64 x 32 (or 32 x 32) being position v % 32 of the group in row (or column)
    // v / 32. Rows and columns past the tile's end load zeros.
    const char * rows[TILE_ROWS * 32 / TILE_THREADS];
    for (int i = 0; i < TILE_ROWS * 32 / TILE_THREADS; ++i) {
        const i64 m = m0 + (tid + i * TILE_THREADS) / 32;
        rows[i] = m < sw.ne[1] ? w + m * sw.nb[1] + expert * sw.nb[2] : nullptr;
    }
    const float * cols[TILE_COLS * 32 / TILE_THREADS];
    for (int i = 0; i < TILE_COLS * 32 / TILE_THREADS; ++i) {
        const int c = (tid + i * TILE_THREADS) / 32;
        const i64 column = c < count ? list[c] : -1;
        cols[i] = column < 0 ? nullptr
                             : (const float *) (x + (column % slots % sx.ne[1]) * sx.nb[1] + (column / slots) * sx.nb[2]);
    }

    // Each step's group of weights and activations, k first so that the product reads
    // along a row of each; a column of padding keeps the stores off one bank.
    __shared__ float ws[32][TILE_ROWS + 1];
    __shared__ float xs[32][TILE_COLS + 1];
    // This thread's results: rows tx + 16 i and columns ty + 16 j of the tile, so that the
    // threads of a warp read neighbouring weights.
    const int tx = tid % 16, ty = tid / 16;
    float acc[THREAD_ROWS][THREAD_COLS] = { { 0.0f } };

    // a float row may end within its last group, whose missing values load as zeros
    const i64 groups = (sw.ne[0] + 31) / 32;
    const int j = tid % 32;
    for (i64 g = 0; g < groups; ++g) {
        const bool in_row = 32 * g + j < sw.ne[0];
        for (int i = 0; i < TILE_ROWS * 32 / TILE_THREADS; ++i) {
            ws[j][(tid + i * TILE_THREADS) / 32] = rows[i] && in_row ? row_value(type, rows[i], 32 * g + j) : 0.0f;
        }
        for (int i = 0; i < TILE_COLS * 32 / TILE_THREADS; ++i) {
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
