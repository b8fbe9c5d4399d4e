// What a training run is asked to do: the model, the optimizer and schedule, and how the run watches
// itself. The settings table (nn/train/settings.h) describes every field; the trainer (trainer.h) runs it.
#pragma once

#include <cstdint>

#include <autograd/precision.h>

#include "nn/model_registry.h"

namespace nn {

// How a run watches itself: what train does between steps and at the end. None of it changes the
// weights; it is stored in the checkpoint ("run.*" metadata) so that a resumed run keeps it, and a
// resume may change any of it (Trainer::set_run). Checkpoints written before these keys existed
// resume with these defaults.
struct RunSettings {
    int64_t eval_every = 500;  // evaluate (and save) every N steps
    int64_t eval_iters = 200;  // batches per evaluation
    int64_t log_every = 0;     // log the step's batch loss every N steps (train --csv, --report); 0 = auto:
                               // every min(eval_every, steps) / 20 steps, at least 1
    int64_t grad_report = 0;   // print the gradient-flow report every N steps; 0 = never
    int64_t sample = 200;      // characters sampled at the end
    float temperature = 1.0f;  // of that sample
    int64_t top_k = 0;         // of that sample; 0 = all characters

    bool operator==(const RunSettings&) const = default;
};

// Every field but `model` is a row of nn::train_settings() (nn/train/settings.h): its meaning, limits and
// checkpoint key are there, its default only here.
struct TrainConfig {
    ModelConfig model;
    int64_t steps = 2000;       // total optimizer steps (the schedule decays over these)
    int64_t batch = 32;         // B
    float lr = 1e-3f;           // peak learning rate (AdamW)
    float min_lr = -1.0f;       // end of the cosine decay; negative means lr / 10
    int64_t warmup = 0;         // linear warmup steps
    float weight_decay = 0.1f;  // decoupled, on Linear weights only
    float beta1 = 0.9f, beta2 = 0.99f;
    float grad_clip = 1.0f;  // global-norm clipping; 0 turns it off
    uint64_t seed = 1337;    // model initialization, batches, dropout
    // The products with weights in bfloat16 (autograd::Precision::bf16: inputs rounded, float32 sums),
    // else float32. A two-word setting of the table, as the model's --gelu tanh|exact: "train.bf16", 0 or 1.
    bool bf16 = false;
    RunSettings run = {};  // changes nothing the run computes; a resume may change it

    autograd::Precision precision() const { return bf16 ? autograd::Precision::bf16 : autograd::Precision::float32; }
    bool operator==(const TrainConfig&) const = default;
};

}  // namespace nn
