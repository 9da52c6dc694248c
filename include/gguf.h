#pragma once

// gguf.h - reading and writing GGUF files.
//
// A GGUF file is, in order:
//   - a header: the magic "GGUF", the format version (uint32), the number of tensors and the
//     number of key/value pairs (both 64-bit);
//   - the key/value pairs: a string key, a value type (enum gguf_type) and the value; arrays
//     store their element type and length first;
//   - one record per tensor: name, number of dimensions, sizes, type and the offset of its data
//     within the data section;
//   - padding up to the alignment (GGUF_DEFAULT_ALIGNMENT unless the key "general.alignment"
//     says otherwise), then the data section with every tensor's data, each aligned.
// Strings are stored as a uint64 length followed by the bytes, without a terminating NUL.
// All numbers are little-endian.
//
// Reading checks every length and offset against the size of the input before using it; a
// malformed file makes the gguf_init_* functions return NULL.

#include "ggml.h"

#include <stdbool.h>
#include <stdint.h>

#define GGUF_MAGIC   "GGUF" // first four bytes of every file
#define GGUF_VERSION 3      // version written by this library

#define GGUF_KEY_GENERAL_ALIGNMENT "general.alignment" // key overriding the data alignment (uint32)

#define GGUF_DEFAULT_ALIGNMENT 32

#ifdef  __cplusplus
extern "C" {
#endif

    // Types of values (the numbers are stored in files).
    enum gguf_type {
        GGUF_TYPE_UINT8   = 0,
        GGUF_TYPE_INT8    = 1,
        GGUF_TYPE_UINT16  = 2,
        GGUF_TYPE_INT16   = 3,
        GGUF_TYPE_UINT32  = 4,
        GGUF_TYPE_INT32   = 5,
        GGUF_TYPE_FLOAT32 = 6,
        GGUF_TYPE_BOOL    = 7,  // one byte, 0 or 1
        GGUF_TYPE_STRING  = 8,
        GGUF_TYPE_ARRAY   = 9,  // element type, count, elements
        GGUF_TYPE_UINT64  = 10,
        GGUF_TYPE_INT64   = 11,
        GGUF_TYPE_FLOAT64 = 12,
        GGUF_TYPE_COUNT,        // number of types, not a type
    };

    // Opaque: the metadata of one file (or of one being built).
    struct gguf_context;

    // How to read a file.
    struct gguf_init_params {
        bool no_alloc; // true: create the tensors in *ctx without reading their data

        // if not NULL: *ctx receives a new ggml context holding one tensor per tensor of the file
        // (and, unless no_alloc, their data); the caller frees it with ggml_free
        struct ggml_context ** ctx;
    };

    // Reads len bytes at offset into output; returns the number of bytes read (less means
    // end of input or error).
    typedef size_t (*gguf_reader_callback_t)(void * userdata, void * output, uint64_t offset, size_t len);

    //
    // Opening and creating
    //

    // New empty GGUF context (for writing).
    GGML_API struct gguf_context * gguf_init_empty(void);

    // Reads GGUF metadata from an open file (and tensor data into *params.ctx unless no_alloc).
    // NULL on any error.
    GGML_API struct gguf_context * gguf_init_from_file_ptr(FILE * file, struct gguf_init_params params);

    // Reads a GGUF file by path. NULL on any error.
    GGML_API struct gguf_context * gguf_init_from_file(const char * fname, struct gguf_init_params params);

    // Reads GGUF from size bytes of memory. NULL on any error.
    GGML_API struct gguf_context * gguf_init_from_buffer(
            const void * data,
            size_t size,
            struct gguf_init_params params);

    // Reads GGUF through a reader callback, max_chunk_read bytes at a time, refusing more than
    // max_expected_size. NULL on any error.
    GGML_API struct gguf_context * gguf_init_from_callback(
            gguf_reader_callback_t callback,
            void * userdata,
            size_t max_chunk_read,
            uint64_t max_expected_size,
            struct gguf_init_params params);

    // Releases a GGUF context.
    GGML_API void gguf_free(struct gguf_context * ctx);

    // Name of a value type ("u8", "str", "arr", ...).
    GGML_API const char * gguf_type_name(enum gguf_type type);

    // Format version of the file.
    GGML_API uint32_t gguf_get_version(const struct gguf_context * ctx);

    // Alignment of the tensor data section.
    GGML_API size_t gguf_get_alignment(const struct gguf_context * ctx);

    // Byte offset of the tensor data section in the file.
    GGML_API size_t gguf_get_data_offset(const struct gguf_context * ctx);

    //
    // Key/value metadata
    //

    // Number of key/value pairs.
    GGML_API int64_t gguf_get_n_kv(const struct gguf_context * ctx);

    // Index of key, or -1.
    GGML_API int64_t gguf_find_key(const struct gguf_context * ctx, const char * key);

    // Name of key key_id.
    GGML_API const char * gguf_get_key(const struct gguf_context * ctx, int64_t key_id);

    // Value type of key key_id.
    GGML_API enum gguf_type gguf_get_kv_type(const struct gguf_context * ctx, int64_t key_id);

    // Element type of the array value of key key_id.
    GGML_API enum gguf_type gguf_get_arr_type(const struct gguf_context * ctx, int64_t key_id);

    // Value of key key_id, which must hold a uint8.
    GGML_API uint8_t gguf_get_val_u8(const struct gguf_context * ctx, int64_t key_id);

    // Value of key key_id, which must hold an int8.
    GGML_API int8_t gguf_get_val_i8(const struct gguf_context * ctx, int64_t key_id);

    // Value of key key_id, which must hold a uint16.
    GGML_API uint16_t gguf_get_val_u16(const struct gguf_context * ctx, int64_t key_id);

    // Value of key key_id, which must hold an int16.
    GGML_API int16_t gguf_get_val_i16(const struct gguf_context * ctx, int64_t key_id);

    // Value of key key_id, which must hold a uint32.
    GGML_API uint32_t gguf_get_val_u32(const struct gguf_context * ctx, int64_t key_id);

    // Value of key key_id, which must hold an int32.
    GGML_API int32_t gguf_get_val_i32(const struct gguf_context * ctx, int64_t key_id);

    // Value of key key_id, which must hold a float32.
    GGML_API float gguf_get_val_f32(const struct gguf_context * ctx, int64_t key_id);

    // Value of key key_id, which must hold a uint64.
    GGML_API uint64_t gguf_get_val_u64(const struct gguf_context * ctx, int64_t key_id);

    // Value of key key_id, which must hold an int64.
    GGML_API int64_t gguf_get_val_i64(const struct gguf_context * ctx, int64_t key_id);

    // Value of key key_id, which must hold a float64.
    GGML_API double gguf_get_val_f64(const struct gguf_context * ctx, int64_t key_id);

    // Value of key key_id, which must hold a bool.
    GGML_API bool gguf_get_val_bool(const struct gguf_context * ctx, int64_t key_id);

    // Value of key key_id, which must hold a string (owned by the context).
    GGML_API const char * gguf_get_val_str(const struct gguf_context * ctx, int64_t key_id);

    // Raw pointer to the value of a non-array, non-string key.
    GGML_API const void * gguf_get_val_data(const struct gguf_context * ctx, int64_t key_id);

    // Number of elements of the array value of key key_id.
    GGML_API size_t gguf_get_arr_n(const struct gguf_context * ctx, int64_t key_id);

    // Raw pointer to the elements of a non-string array.
    GGML_API const void * gguf_get_arr_data(const struct gguf_context * ctx, int64_t key_id);

    // Element i of a string array.
    GGML_API const char * gguf_get_arr_str(const struct gguf_context * ctx, int64_t key_id, size_t i);

    //
    // Tensor information
    //

    // Number of tensors described.
    GGML_API int64_t gguf_get_n_tensors(const struct gguf_context * ctx);

    // Index of the tensor with this name, or -1.
    GGML_API int64_t gguf_find_tensor(const struct gguf_context * ctx, const char * name);

    // Offset of the tensor's data within the data section.
    GGML_API size_t gguf_get_tensor_offset(const struct gguf_context * ctx, int64_t tensor_id);

    // Name of tensor tensor_id.
    GGML_API const char * gguf_get_tensor_name(const struct gguf_context * ctx, int64_t tensor_id);

    // Shape (GGML_MAX_DIMS sizes) of tensor tensor_id.
    GGML_API const int64_t * gguf_get_tensor_ne(const struct gguf_context * ctx, int64_t tensor_id);

    // Type of tensor tensor_id.
    GGML_API enum ggml_type gguf_get_tensor_type(const struct gguf_context * ctx, int64_t tensor_id);

    // Size in bytes of tensor tensor_id's data.
    GGML_API size_t gguf_get_tensor_size(const struct gguf_context * ctx, int64_t tensor_id);

    //
    // Editing
    //

    // Removes key; returns its former index, or -1 if absent.
    GGML_API int64_t gguf_remove_key(struct gguf_context * ctx, const char * key);

    // Sets key to a uint8 value (replacing any earlier value).
    GGML_API void gguf_set_val_u8(struct gguf_context * ctx, const char * key, uint8_t val);

    // Sets key to an int8 value.
    GGML_API void gguf_set_val_i8(struct gguf_context * ctx, const char * key, int8_t val);

    // Sets key to a uint16 value.
    GGML_API void gguf_set_val_u16(struct gguf_context * ctx, const char * key, uint16_t val);

    // Sets key to an int16 value.
    GGML_API void gguf_set_val_i16(struct gguf_context * ctx, const char * key, int16_t val);

    // Sets key to a uint32 value.
    GGML_API void gguf_set_val_u32(struct gguf_context * ctx, const char * key, uint32_t val);

    // Sets key to an int32 value.
    GGML_API void gguf_set_val_i32(struct gguf_context * ctx, const char * key, int32_t val);

    // Sets key to a float32 value.
    GGML_API void gguf_set_val_f32(struct gguf_context * ctx, const char * key, float val);

    // Sets key to a uint64 value.
    GGML_API void gguf_set_val_u64(struct gguf_context * ctx, const char * key, uint64_t val);

    // Sets key to an int64 value.
    GGML_API void gguf_set_val_i64(struct gguf_context * ctx, const char * key, int64_t val);

    // Sets key to a float64 value.
    GGML_API void gguf_set_val_f64(struct gguf_context * ctx, const char * key, double val);

    // Sets key to a bool value.
    GGML_API void gguf_set_val_bool(struct gguf_context * ctx, const char * key, bool val);

    // Sets key to a copy of a string.
    GGML_API void gguf_set_val_str(struct gguf_context * ctx, const char * key, const char * val);

    // Sets key to an array of n elements of the given type, copied from data.
    GGML_API void gguf_set_arr_data(
            struct gguf_context * ctx,
            const char * key,
            enum gguf_type type,
            const void * data,
            size_t n);

    // Sets key to an array of n strings (copied).
    GGML_API void gguf_set_arr_str(
            struct gguf_context * ctx,
            const char * key,
            const char ** data,
            size_t n);

    // Copies every key/value pair of src into ctx.
    GGML_API void gguf_set_kv(struct gguf_context * ctx, const struct gguf_context * src);

    // Adds a tensor's name, type and shape (and a reference to its data).
    GGML_API void gguf_add_tensor(struct gguf_context * ctx, const struct ggml_tensor * tensor);

    // Changes a tensor's type, recomputing the offsets of the tensors after it.
    GGML_API void gguf_set_tensor_type(struct gguf_context * ctx, const char * name, enum ggml_type type);

    // Points a tensor's data at a new buffer (not copied).
    GGML_API void gguf_set_tensor_data(struct gguf_context * ctx, const char * name, const void * data);

    //
    // Writing
    //

    // Writes the context (metadata only if only_meta) to an open file; false on error.
    GGML_API bool gguf_write_to_file_ptr(const struct gguf_context * ctx, FILE * file, bool only_meta);

    // Writes the context to a file by path; false on error.
    GGML_API bool gguf_write_to_file(const struct gguf_context * ctx, const char * fname, bool only_meta);

    // Bytes of the metadata part (header, key/values, tensor infos, padding).
    GGML_API size_t gguf_get_meta_size(const struct gguf_context * ctx);

    // Writes the metadata part into data (gguf_get_meta_size bytes).
    GGML_API void gguf_get_meta_data(const struct gguf_context * ctx, void * data);

#ifdef __cplusplus
}
#endif
