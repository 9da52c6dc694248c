#pragma once

// ggml-opt.h - training models with ggml graphs.
//
// The caller builds the forward graph from inputs to outputs; an optimization context adds the
// loss, the backward pass and the optimizer step, and runs them over a dataset in batches.
// ggml_opt_fit does all of it in one call.

#include "ggml.h"
#include "ggml-backend.h"

#include <stdint.h>

#ifdef  __cplusplus
extern "C" {
#endif

    // Opaque types.
    struct ggml_opt_dataset; // data points and labels
    struct ggml_opt_context; // graphs and optimizer state
    struct ggml_opt_result;  // accumulated loss and predictions

    typedef struct ggml_opt_dataset * ggml_opt_dataset_t;
    typedef struct ggml_opt_context * ggml_opt_context_t;
    typedef struct ggml_opt_result  * ggml_opt_result_t;

    // How the outputs become a scalar loss.
    enum ggml_opt_loss_type {
        GGML_OPT_LOSS_TYPE_MEAN,               // mean of the outputs
        GGML_OPT_LOSS_TYPE_SUM,                // sum of the outputs
        GGML_OPT_LOSS_TYPE_CROSS_ENTROPY,      // cross-entropy of softmax(outputs) and the labels
        GGML_OPT_LOSS_TYPE_MEAN_SQUARED_ERROR, // mean of (outputs - labels)^2
    };

    //
    // Datasets: data points and labels stored as two tensors, in shards
    //

    // New dataset of ndata points of ne_datapoint values and ne_label labels, shuffled in shards of
    // ndata_shard points.
    GGML_API ggml_opt_dataset_t ggml_opt_dataset_init(
            enum ggml_type type_data,
            enum ggml_type type_label,
            int64_t ne_datapoint,
            int64_t ne_label,
            int64_t ndata,
            int64_t ndata_shard);

    // Releases a dataset.
    GGML_API void ggml_opt_dataset_free(ggml_opt_dataset_t dataset);

    // Number of data points.
    GGML_API int64_t ggml_opt_dataset_ndata(ggml_opt_dataset_t dataset);

    // Tensor of all data points [ne_datapoint, ndata].
    GGML_API struct ggml_tensor * ggml_opt_dataset_data(ggml_opt_dataset_t dataset);

    // Tensor of all labels [ne_label, ndata].
    GGML_API struct ggml_tensor * ggml_opt_dataset_labels(ggml_opt_dataset_t dataset);

    // Shuffles the first idata points (all if idata < 0) with the context's RNG.
    GGML_API void ggml_opt_dataset_shuffle(
            ggml_opt_context_t opt_ctx,
            ggml_opt_dataset_t dataset,
            int64_t idata);

    // Copies batch ibatch into the tensors data_batch and labels_batch (labels may be NULL).
    GGML_API void ggml_opt_dataset_get_batch(
            ggml_opt_dataset_t dataset,
            struct ggml_tensor * data_batch,
            struct ggml_tensor * labels_batch,
            int64_t ibatch);

    // Copies batch ibatch into host memory.
    GGML_API void ggml_opt_dataset_get_batch_host(
            ggml_opt_dataset_t dataset,
            void * data_batch,
            size_t nb_data_batch,
            void * labels_batch,
            int64_t ibatch);

    // Which graphs an optimization context builds.
    enum ggml_opt_build_type {
        GGML_OPT_BUILD_TYPE_FORWARD = 10, // forward pass only
        GGML_OPT_BUILD_TYPE_GRAD    = 20, // plus the gradients
        GGML_OPT_BUILD_TYPE_OPT     = 30, // plus the optimizer step
    };

    // Optimizers.
    enum ggml_opt_optimizer_type {
        GGML_OPT_OPTIMIZER_TYPE_ADAMW,
        GGML_OPT_OPTIMIZER_TYPE_SGD,
        GGML_OPT_OPTIMIZER_TYPE_COUNT
    };

    // Hyper-parameters of the optimizers, asked for before every step.
    struct ggml_opt_optimizer_params {
        struct {
            float alpha; // learning rate
            float beta1; // decay of the first moment
            float beta2; // decay of the second moment
            float eps;   // added to the denominator for stability
            float wd;    // weight decay (0 disables)
        } adamw;
        struct {
            float alpha; // learning rate
            float wd;    // weight decay (0 disables)
        } sgd;
    };

    // Returns the hyper-parameters to use for the next step.
    typedef struct ggml_opt_optimizer_params (*ggml_opt_get_optimizer_params)(void * userdata);

    //
    // Optimizer parameters
    //

    // Default hyper-parameters (ignores userdata).
    GGML_API struct ggml_opt_optimizer_params ggml_opt_get_default_optimizer_params(void * userdata);

    // Returns *(struct ggml_opt_optimizer_params *) userdata.
    GGML_API struct ggml_opt_optimizer_params ggml_opt_get_constant_optimizer_params(void * userdata);

    // Arguments of ggml_opt_init.
    struct ggml_opt_params {
        ggml_backend_sched_t backend_sched; // backends the graphs run on

        // if all three are set, the graphs are built once here ("static graphs"); otherwise the
        // forward graph is given again before each evaluation (ggml_opt_prepare_alloc)
        struct ggml_context * ctx_compute;
        struct ggml_tensor  * inputs;
        struct ggml_tensor  * outputs;

        enum ggml_opt_loss_type  loss_type;
        enum ggml_opt_build_type build_type;

        int32_t opt_period; // batches whose gradients are accumulated per optimizer step

        ggml_opt_get_optimizer_params get_opt_pars;    // hyper-parameter callback
        void *                        get_opt_pars_ud; // its user data

        enum ggml_opt_optimizer_type optimizer; // AdamW keeps two moment tensors per parameter
    };

    //
    // Optimization contexts
    //

    // Default parameters for the scheduler and loss type.
    GGML_API struct ggml_opt_params ggml_opt_default_params(
            ggml_backend_sched_t backend_sched,
            enum ggml_opt_loss_type loss_type);

    // New optimization context.
    GGML_API ggml_opt_context_t ggml_opt_init(struct ggml_opt_params params);

    // Releases an optimization context.
    GGML_API void ggml_opt_free(ggml_opt_context_t opt_ctx);

    // Zeroes the gradients; also the optimizer state when optimizer is true.
    GGML_API void ggml_opt_reset(ggml_opt_context_t opt_ctx, bool optimizer);

    // True when the graphs were built once at init (ctx_compute, inputs and outputs given).
    GGML_API bool ggml_opt_static_graphs(ggml_opt_context_t opt_ctx);

    // Input tensor of the forward graph.
    GGML_API struct ggml_tensor * ggml_opt_inputs(ggml_opt_context_t opt_ctx);

    // Output tensor of the forward graph.
    GGML_API struct ggml_tensor * ggml_opt_outputs(ggml_opt_context_t opt_ctx);

    // Labels tensor.
    GGML_API struct ggml_tensor * ggml_opt_labels(ggml_opt_context_t opt_ctx);

    // Scalar loss tensor.
    GGML_API struct ggml_tensor * ggml_opt_loss(ggml_opt_context_t opt_ctx);

    // Predictions (argmax of the outputs).
    GGML_API struct ggml_tensor * ggml_opt_pred(ggml_opt_context_t opt_ctx);

    // Number of correct predictions.
    GGML_API struct ggml_tensor * ggml_opt_ncorrect(ggml_opt_context_t opt_ctx);

    // Gradient accumulator of a node.
    GGML_API struct ggml_tensor * ggml_opt_grad_acc(ggml_opt_context_t opt_ctx, struct ggml_tensor * node);

    // Optimizer the context uses.
    GGML_API enum ggml_opt_optimizer_type ggml_opt_context_optimizer_type(ggml_opt_context_t);

    // Name of an optimizer type.
    GGML_API const char * ggml_opt_optimizer_name(enum ggml_opt_optimizer_type);

    //
    // Results: loss and accuracy accumulated over batches
    //

    // New, empty result.
    GGML_API ggml_opt_result_t ggml_opt_result_init(void);

    // Releases a result.
    GGML_API void ggml_opt_result_free(ggml_opt_result_t result);

    // Empties a result.
    GGML_API void ggml_opt_result_reset(ggml_opt_result_t result);

    // Number of data points evaluated.
    GGML_API void ggml_opt_result_ndata(ggml_opt_result_t result, int64_t * ndata);

    // Mean loss and its uncertainty.
    GGML_API void ggml_opt_result_loss(ggml_opt_result_t result, double * loss, double * unc);

    // Copies the predictions out (ndata values).
    GGML_API void ggml_opt_result_pred(ggml_opt_result_t result, int32_t * pred);

    // Accuracy and its uncertainty.
    GGML_API void ggml_opt_result_accuracy(ggml_opt_result_t result, double * accuracy, double * unc);

    //
    // Running
    //

    // Gives the context a new forward graph when graphs are not static; call before ggml_opt_alloc.
    GGML_API void ggml_opt_prepare_alloc(
            ggml_opt_context_t opt_ctx,
            struct ggml_context * ctx_compute,
            struct ggml_cgraph * gf,
            struct ggml_tensor * inputs,
            struct ggml_tensor * outputs);

    // Allocates the next graph (with the backward pass when backward is true).
    GGML_API void ggml_opt_alloc(ggml_opt_context_t opt_ctx, bool backward);

    // Runs the allocated graph and adds its outcome to result (may be NULL).
    GGML_API void ggml_opt_eval(ggml_opt_context_t opt_ctx, ggml_opt_result_t result);

    // Called after each batch of an epoch: train says which part of the data is running, ibatch
    // counts the batches done out of ibatch_max, t_start_us is when the epoch started.
    typedef void (*ggml_opt_epoch_callback)(
            bool train,
            ggml_opt_context_t opt_ctx,
            ggml_opt_dataset_t dataset,
            ggml_opt_result_t result,
            int64_t ibatch,
            int64_t ibatch_max,
            int64_t t_start_us);

    // One epoch: trains on the data before idata_split and evaluates on the rest.
    GGML_API void ggml_opt_epoch(
            ggml_opt_context_t opt_ctx,
            ggml_opt_dataset_t dataset,
            ggml_opt_result_t result_train,
            ggml_opt_result_t result_eval,
            int64_t idata_split,
            ggml_opt_epoch_callback callback_train,
            ggml_opt_epoch_callback callback_eval);

    // Epoch callback that prints a progress bar.
    GGML_API void ggml_opt_epoch_callback_progress_bar(
            bool train,
            ggml_opt_context_t opt_ctx,
            ggml_opt_dataset_t dataset,
            ggml_opt_result_t result,
            int64_t ibatch,
            int64_t ibatch_max,
            int64_t t_start_us);

    // Trains a model end to end for nepoch epochs; val_split is the fraction of data kept for
    // validation.
    GGML_API void ggml_opt_fit(
            ggml_backend_sched_t backend_sched,
            struct ggml_context * ctx_compute,
            struct ggml_tensor * inputs,
            struct ggml_tensor * outputs,
            ggml_opt_dataset_t dataset,
            enum ggml_opt_loss_type loss_type,
            enum ggml_opt_optimizer_type optimizer,
            ggml_opt_get_optimizer_params get_opt_pars,
            int64_t nepoch,
            int64_t nbatch_logical,
            float val_split,
            bool silent);

#ifdef __cplusplus
}
#endif
