#include "nn/interpret/probes.h"

#include <autograd/check.h>
#include <autograd/ops.h>

#include <cmath>
#include <memory>

#include <fmt/format.h>

#include "nn/interpret/cache.h"

// Shape legend: L blocks, T time, C the stream's width, H head width, V vocab.
namespace nn {

using namespace autograd;

namespace {

Transformer& transformer_of(LanguageModel& model, const char* what) {
    auto* t = dynamic_cast<Transformer*>(&model);
    check(t != nullptr,
          "{}: the model is not an nn::Transformer, whose residual stream it reads piece by piece (the gpt, gpt2, "
          "llama and attn_only kinds are; a kind of your own can be, nn/transformer.h)",
          what);
    return *t;
}

void check_vocabulary(const LanguageModel& model, std::span<const int64_t> ids, const char* what) {
    for (size_t i = 0; i < ids.size(); ++i)
        check(ids[i] >= 0 && ids[i] < model.vocab_size(), "{}: id {} at position {} is outside the vocabulary of {}",
              what, ids[i], i, model.vocab_size());
}

void check_sequence(const LanguageModel& model, std::span<const int64_t> ids, const char* what) {
    check(!ids.empty(), "{}: no ids", what);
    check(!model.caching(), "{}: the model is decoding with a cache (use_cache(nullptr) first)", what);
    check(static_cast<int64_t>(ids.size()) <= model.block_size(), "{}: {} ids are more than the model's block of {}",
          what, ids.size(), model.block_size());
    check_vocabulary(model, ids, what);
}

void check_metric(const LanguageModel& model, const LogitDiff& metric, const char* what) {
    check(metric.answer >= 0 && metric.answer < model.vocab_size(),
          "{}: the answer token {} is outside the vocabulary of {}", what, metric.answer, model.vocab_size());
    check(!metric.wrong || (*metric.wrong >= 0 && *metric.wrong < model.vocab_size()),
          "{}: the wrong token {} is outside the vocabulary of {}", what, metric.wrong.value_or(-1),
          model.vocab_size());
}

bool has_hook_point(const Module& model, const std::string& name) {
    for (const std::string& point : model.hook_point_names())
        if (point == name) return true;
    return false;
}

// The hook point of `site` in block `block` ("3", or "*": every block's), TransformerLens's names.
std::string site_point(PatchSite site, const std::string& block) {
    if (site == PatchSite::head) return fmt::format("blocks.{}.attn.hook_z", block);
    return fmt::format("blocks.{}.hook_{}", block, patch_site_name(site));
}
std::string site_point(PatchSite site, int64_t block) { return site_point(site, std::to_string(block)); }

// Blocks of a model: a Transformer says; any other model, by its hook points blocks.0 .. blocks.L-1.
int64_t block_count(LanguageModel& model, Transformer* transformer, PatchSite site, const char* what) {
    check(has_hook_point(model, site_point(site, 0)), "{}: the model has no hook point '{}'{} to patch at", what,
          site_point(site, 0),
          site == PatchSite::mlp_out ? " (a model without MLPs, as attn_only's, has no MLP output)" : "");
    if (transformer) return transformer->n_blocks();
    int64_t L = 1;
    while (has_hook_point(model, site_point(site, L))) ++L;
    return L;
}

// logits (1, T', V) -> logit(answer) - logit(wrong) at the last row, as a (1) tensor in the graph
Tensor logit_diff(const Tensor& logits, const LogitDiff& metric) {
    const int64_t T = logits.size(1), V = logits.size(2);
    const Tensor last = reshape(slice(logits, 1, T - 1, T), {V});  // (V)
    const Tensor answer = slice(last, 0, metric.answer, metric.answer + 1);
    return metric.wrong ? answer - slice(last, 0, *metric.wrong, *metric.wrong + 1) : answer;
}

// The metric read from a Transformer's stream at the last position (1, 1, C): the final norm, then the
// two directions of the unembedding alone (the whole unembedding is V of them: GPT-2's 154 MB read per
// run for two numbers). In the graph through the stream; the directions are constants.
Tensor stream_logit_diff(Transformer& model, const Tensor& last, const LogitDiff& metric) {
    const int64_t C = last.size(2);
    Tensor direction;
    float bias = 0;
    {
        NoGradGuard constants;
        direction = model.unembedding_direction(metric.answer).detach();
        bias = model.unembedding_bias(metric.answer);
        if (metric.wrong) {
            direction = direction - model.unembedding_direction(*metric.wrong).detach();
            bias -= model.unembedding_bias(*metric.wrong);
        }
    }
    return sum(reshape(model.normalize_stream(last), {C}) * direction) + scalar(bias);
}

// One run: `ids` (B, T) from the embeddings, or the stream (B, T, C) into block `from`; what it gives is
// the metric (`metric`: the last position alone is read out) or the logits (B, T, V) of every position.
// A model that is not a Transformer runs whole (its logits, then the metric of them). `streams`, when
// given, keeps the stream into each block.
Tensor run_from(LanguageModel& model, Transformer* transformer, std::span<const int64_t> ids, int64_t B, int64_t T,
                int64_t from, Tensor x, const LogitDiff* metric, std::vector<Tensor>* streams = nullptr) {
    if (!transformer) {
        const Tensor logits = model(ids, B, T);
        return metric ? logit_diff(logits, *metric) : logits;
    }
    if (!x.defined()) x = transformer->embed_stream(ids, B, T);
    const int64_t L = transformer->n_blocks();
    for (int64_t l = from; l < L; ++l) {
        if (streams) streams->push_back(x);
        x = transformer->run_block(l, x, metric && l == L - 1);  // the metric reads the last position alone
    }
    if (!metric) return transformer->unembed_stream(transformer->normalize_stream(x));
    return stream_logit_diff(*transformer, x, *metric);
}

// Where the part `unit` of a hook value lies: position `unit` of a (B, T', C) value (T' is T, or 1 for a
// point after the last block's attention in a run that reads out the last position: it holds position
// T - 1 alone, and the others are not there), or head `unit` at every position of a (B, T, n_head, H)
// one. `rows` runs of `inner` floats, `stride` apart, from `offset`; none when absent.
struct Part {
    int64_t rows = 0, inner = 0, stride = 0, offset = 0;
};
Part part_of(const Shape& s, int64_t unit, bool head, int64_t T) {
    if (head) return {.rows = s[0] * s[1], .inner = s[3], .stride = s[2] * s[3], .offset = unit * s[3]};
    const int64_t row = unit - (T - s[1]);
    if (row < 0) return {};
    return {.rows = s[0], .inner = s[2], .stride = s[1] * s[2], .offset = row * s[2]};
}

// A copy of `value` with its part `unit` (of a prompt of T positions) set from `source` (or to `fill`
// when source is undefined).
Tensor replaced(const Tensor& value, int64_t unit, bool head, int64_t T, const Tensor& source,
                std::span<const float> fill = {}) {
    Tensor out = value.clone();
    const Part part = part_of(value.shape(), unit, head, T);
    const std::span<float> to = out.data();
    const std::span<const float> from = source.defined() ? source.data() : std::span<const float>();
    for (int64_t r = 0; r < part.rows; ++r)
        for (int64_t i = 0; i < part.inner; ++i) {
            const auto at = static_cast<size_t>(r * part.stride + part.offset + i);
            to[at] = from.empty() ? fill[static_cast<size_t>(i)] : from[at];
        }
    return out;
}

// The sum over the part `unit` (as `replaced`) of (a - b) * g
double part_dot(const Tensor& a, const Tensor& b, const Tensor& g, int64_t unit, bool head, int64_t T) {
    const Part part = part_of(a.shape(), unit, head, T);
    const auto av = a.data(), bv = b.data(), gv = g.data();
    double sum = 0;
    for (int64_t r = 0; r < part.rows; ++r)
        for (int64_t i = 0; i < part.inner; ++i) {
            const auto at = static_cast<size_t>(r * part.stride + part.offset + i);
            sum += (double(av[at]) - double(bv[at])) * double(gv[at]);
        }
    return sum;
}

// The mean of -log p(target) over the rows of logits (R, V) whose target is not -1 (ignored), and how many.
std::pair<double, int64_t> target_loss(const Tensor& logits, std::span<const int64_t> targets) {
    const int64_t V = logits.size(-1);
    const Tensor logp = log_softmax(logits, -1);
    const std::span<const float> v = logp.data();
    double sum = 0;
    int64_t n = 0;
    for (size_t r = 0; r < targets.size(); ++r)
        if (targets[r] >= 0) sum -= v[r * size_t(V) + size_t(targets[r])], ++n;
    return {n > 0 ? sum / double(n) : 0.0, n};
}

}  // namespace

const char* patch_site_name(PatchSite site) {
    switch (site) {
        case PatchSite::resid_pre:
            return "resid_pre";
        case PatchSite::attn_out:
            return "attn_out";
        case PatchSite::mlp_out:
            return "mlp_out";
        case PatchSite::head:
            return "head";
    }
    return "?";
}

// --- the logit lens ------------------------------------------------------------------------------------

LogitLens logit_lens(LanguageModel& model, std::span<const int64_t> ids) {
    Transformer& transformer = transformer_of(model, "logit_lens");
    check_sequence(model, ids, "logit_lens");
    NoGradGuard no_grad;
    const auto T = static_cast<int64_t>(ids.size());
    LogitLens lens;
    Tensor x = transformer.embed_stream(ids, 1, T);  // (1, T, C)
    for (int64_t l = 0; l <= transformer.n_blocks(); ++l) {
        if (l > 0) x = transformer.run_block(l - 1, x, false);
        const Tensor logp = log_softmax(transformer.unembed_stream(transformer.normalize_stream(x)), -1);  // (1, T, V)
        const int64_t V = logp.size(2);
        const std::span<const float> v = logp.data();
        std::vector<double> next;
        std::vector<int64_t> top;
        for (int64_t p = 0; p < T; ++p) {
            const std::span<const float> row = v.subspan(static_cast<size_t>(p * V), static_cast<size_t>(V));
            if (p + 1 < T) next.push_back(row[static_cast<size_t>(ids[static_cast<size_t>(p + 1)])]);
            int64_t best = 0;
            for (int64_t k = 1; k < V; ++k)
                if (row[static_cast<size_t>(k)] > row[static_cast<size_t>(best)]) best = k;
            top.push_back(best);
        }
        lens.logprob_next.push_back(std::move(next));
        lens.top.push_back(std::move(top));
    }
    return lens;
}

// --- direct logit attribution --------------------------------------------------------------------------

LogitAttribution direct_logit_attribution(LanguageModel& model, std::span<const int64_t> ids, const LogitDiff& metric) {
    Transformer& transformer = transformer_of(model, "direct_logit_attribution");
    check_sequence(model, ids, "direct_logit_attribution");
    check_metric(model, metric, "direct_logit_attribution");
    NoGradGuard no_grad;
    const int64_t L = transformer.n_blocks(), T = static_cast<int64_t>(ids.size()), last = T - 1;
    std::string names = "blocks.*.attn.hook_z";
    if (transformer.has_mlp()) names += ",blocks.*.hook_mlp_out";
    const ActivationCache cache = [&] {
        ActivationCache c;
        const ScopedHook hooked{
            add_hooks(model, names, [&c](Tensor& v, const std::string& n) { c.set(n, v.clone()); })};
        Tensor x = transformer.embed_stream(ids, 1, T);
        c.set("embed", x);
        for (int64_t l = 0; l < L; ++l) x = transformer.run_block(l, x, false);
        c.set("stream", x);
        c.set("logits", transformer.unembed_stream(transformer.normalize_stream(x)));
        return c;
    }();
    const Tensor& stream = cache["stream"];
    const int64_t C = stream.size(2);
    const auto row = [&](const Tensor& t) {  // (1, T, C) -> position last's (C)
        return std::vector<double>(t.data().begin() + last * C, t.data().begin() + (last + 1) * C);
    };

    // The final norm with the whole stream's scale frozen, then the dot with the answer's direction
    // minus the wrong one's.
    const StreamNorm norm = transformer.stream_norm();
    const std::vector<double> total = row(stream);
    double scale = 1;
    if (norm.kind != StreamNorm::Kind::none) {
        double mean = 0, square = 0;
        for (const double v : total) mean += v / double(C);
        for (const double v : total) square += (norm.kind == StreamNorm::Kind::layer ? (v - mean) * (v - mean) : v * v);
        scale = std::sqrt(square / double(C) + double(norm.eps));
    }
    std::vector<double> unembedding(static_cast<size_t>(C));  // the answer's direction minus the wrong one's
    {
        const Tensor a = transformer.unembedding_direction(metric.answer);
        for (int64_t i = 0; i < C; ++i) unembedding[size_t(i)] = a.data()[size_t(i)];
        if (metric.wrong) {
            const Tensor w = transformer.unembedding_direction(*metric.wrong);
            for (int64_t i = 0; i < C; ++i) unembedding[size_t(i)] -= w.data()[size_t(i)];
        }
    }
    std::vector<double> direction = unembedding;  // through the norm's gain
    if (norm.kind != StreamNorm::Kind::none)
        for (int64_t i = 0; i < C; ++i) direction[size_t(i)] *= norm.gain.data()[size_t(i)];
    const auto attribute = [&](const std::vector<double>& part) {  // (C) -> its share of the logit difference
        double mean = 0, dot = 0;
        if (norm.kind == StreamNorm::Kind::layer)
            for (const double v : part) mean += v / double(C);
        for (int64_t i = 0; i < C; ++i) dot += (part[size_t(i)] - mean) * direction[size_t(i)];
        return dot / scale;
    };

    LogitAttribution out;
    out.embed = attribute(row(cache["embed"]));
    for (int64_t l = 0; l < L; ++l) {
        const Linear& projection = transformer.heads_projection(l);        // (n_head H, C)
        const Tensor& z = cache[fmt::format("blocks.{}.attn.hook_z", l)];  // (1, T, n_head, H)
        const int64_t n_head = z.size(2), H = z.size(3);
        check(projection.weight.size(0) == n_head * H && projection.weight.size(1) == C,
              "direct_logit_attribution: block {}'s output projection is {}, not ({}, {}) for its {} heads of {}", l,
              shape_str(projection.weight.shape()), n_head * H, C, n_head, H);
        const std::span<const float> zv = z.data(), w = projection.weight.data();
        std::vector<double> row_heads;
        for (int64_t h = 0; h < n_head; ++h) {
            std::vector<double> part(static_cast<size_t>(C), 0.0);
            for (int64_t k = 0; k < H; ++k) {
                const double zk = zv[static_cast<size_t>((last * n_head + h) * H + k)];
                const std::span<const float> wrow =
                    w.subspan(static_cast<size_t>((h * H + k) * C), static_cast<size_t>(C));
                for (int64_t c = 0; c < C; ++c) part[size_t(c)] += zk * double(wrow[size_t(c)]);
            }
            row_heads.push_back(attribute(part));
        }
        out.heads.push_back(std::move(row_heads));
        if (projection.bias.defined())
            out.bias += attribute(std::vector<double>(projection.bias.data().begin(), projection.bias.data().end()));
        if (transformer.has_mlp()) out.mlps.push_back(attribute(row(cache[fmt::format("blocks.{}.hook_mlp_out", l)])));
    }
    // what is not a part of the stream: the norm's bias and the unembedding's
    if (norm.kind == StreamNorm::Kind::layer && norm.bias.defined())
        for (int64_t i = 0; i < C; ++i) out.bias += double(norm.bias.data()[size_t(i)]) * unembedding[size_t(i)];
    out.bias += transformer.unembedding_bias(metric.answer) -
                (metric.wrong ? transformer.unembedding_bias(*metric.wrong) : 0.0f);
    out.logit_diff = logit_diff(cache["logits"], metric).item();
    return out;
}

// --- patching ------------------------------------------------------------------------------------------

Patching patch(LanguageModel& model, std::span<const int64_t> clean, std::span<const int64_t> corrupt,
               const LogitDiff& metric, PatchSite site, PatchMethod method) {
    check(clean.size() == corrupt.size(),
          "patch: the clean prompt has {} ids and the corrupt one {}: patching needs "
          "the same positions in both",
          clean.size(), corrupt.size());
    check_sequence(model, clean, "patch");
    check_sequence(model, corrupt, "patch");
    check_metric(model, metric, "patch");
    auto* transformer = dynamic_cast<Transformer*>(&model);
    const int64_t L = block_count(model, transformer, site, "patch"), T = static_cast<int64_t>(clean.size());
    const bool head = site == PatchSite::head;
    const std::string glob = site_point(site, "*");

    // The clean run's values at the site (no graph), and its metric.
    Patching out;
    ActivationCache clean_values;
    {
        NoGradGuard no_grad;
        const ScopedHook hooked{
            add_hooks(model, glob, [&](Tensor& v, const std::string& n) { clean_values.set(n, v.clone()); })};
        out.clean = run_from(model, transformer, clean, 1, T, 0, {}, &metric).item();
    }
    const auto units = [&](int64_t l) {  // positions, or heads
        return head ? clean_values[site_point(site, l)].size(2) : T;
    };

    if (method == PatchMethod::attribution) {
        const GradientCache corrupt_run = run_with_gradients(
            model, glob, [&] { return run_from(model, transformer, corrupt, 1, T, 0, {}, &metric); });
        out.corrupt = corrupt_run.metric;
        for (int64_t l = 0; l < L; ++l) {
            const std::string point = site_point(site, l);
            std::vector<double> effects;
            for (int64_t u = 0; u < units(l); ++u)
                effects.push_back(out.corrupt + part_dot(clean_values[point], corrupt_run.values[point],
                                                         corrupt_run.gradients[point], u, head, T));
            out.effects.push_back(std::move(effects));
        }
        return out;
    }

    // Activation patching: the corrupt run, then one run per site with that part of it taken from the
    // clean run; on a Transformer each restarts at the patched block from the corrupt stream before it.
    NoGradGuard no_grad;
    std::vector<Tensor> streams;  // the corrupt stream into each block
    out.corrupt = run_from(model, transformer, corrupt, 1, T, 0, {}, &metric, &streams).item();
    for (int64_t l = 0; l < L; ++l) {
        const std::string point = site_point(site, l);
        const Tensor& source = clean_values[point];
        std::vector<double> effects;
        for (int64_t u = 0; u < units(l); ++u) {
            const ScopedHook hooked{
                model.add_hook(point, [&](Tensor& v, const std::string&) { v = replaced(v, u, head, T, source); })};
            effects.push_back(
                run_from(model, transformer, corrupt, 1, T, l, transformer ? streams[size_t(l)] : Tensor(), &metric)
                    .item());
        }
        out.effects.push_back(std::move(effects));
    }
    return out;
}

// --- head ablation -------------------------------------------------------------------------------------

HeadAblation ablate_heads(LanguageModel& model, std::span<const int64_t> inputs, std::span<const int64_t> targets,
                          int64_t windows, int64_t B, int64_t T, AblationMode mode) {
    check(windows > 0 && B > 0 && T > 0, "ablate_heads: {} windows of ({}, {}) measure nothing", windows, B, T);
    check(static_cast<int64_t>(inputs.size()) == windows * B * T && inputs.size() == targets.size(),
          "ablate_heads: {} inputs and {} targets are not {} windows of ({}, {})", inputs.size(), targets.size(),
          windows, B, T);
    check(T <= model.block_size(), "ablate_heads: windows of {} are longer than the model's block of {}", T,
          model.block_size());
    int64_t counted = 0;
    for (const int64_t t : targets) {
        check(t >= -1 && t < model.vocab_size(),
              "ablate_heads: target {} is outside the vocabulary of {} (-1: ignored)", t, model.vocab_size());
        counted += t >= 0;
    }
    check(counted > 0, "ablate_heads: every target is ignored (-1)");
    check_vocabulary(model, inputs, "ablate_heads");
    auto* transformer = dynamic_cast<Transformer*>(&model);
    const int64_t L = block_count(model, transformer, PatchSite::head, "ablate_heads");
    NoGradGuard no_grad;
    HeadAblation out;
    for (int64_t w = 0; w < windows; ++w) {
        const auto ids = inputs.subspan(static_cast<size_t>(w * B * T), static_cast<size_t>(B * T));
        const auto next = targets.subspan(static_cast<size_t>(w * B * T), static_cast<size_t>(B * T));
        ActivationCache z;            // every block's hook_z of the window: each head's mean, and how many heads
        std::vector<Tensor> streams;  // the stream into each block
        Tensor logits;
        {
            const ScopedHook hooked{add_hooks(model, "blocks.*.attn.hook_z",
                                              [&z](Tensor& v, const std::string& n) { z.set(n, v.clone()); })};
            logits = run_from(model, transformer, ids, B, T, 0, {}, nullptr, &streams);
        }
        // each window weighs as many targets as it counts: the mean over every target counted
        const auto [loss, n] = target_loss(logits, next);
        const double weight = double(n) / double(counted);
        out.loss += loss * weight;
        if (out.heads.empty()) out.heads.assign(static_cast<size_t>(L), {});
        for (int64_t l = 0; l < L; ++l) {
            const std::string point = site_point(PatchSite::head, l);
            const Tensor& values = z[point];  // (B, T, n_head, H)
            const int64_t n_head = values.size(2), H = values.size(3);
            out.heads[size_t(l)].resize(static_cast<size_t>(n_head), 0.0);
            for (int64_t h = 0; h < n_head; ++h) {
                std::vector<float> fill(static_cast<size_t>(H), 0.0f);  // zero, or the head's mean over B x T
                if (mode == AblationMode::mean) {
                    std::vector<double> sum(static_cast<size_t>(H), 0.0);
                    const std::span<const float> v = values.data();
                    for (int64_t r = 0; r < B * T; ++r)
                        for (int64_t k = 0; k < H; ++k)
                            sum[size_t(k)] += v[static_cast<size_t>((r * n_head + h) * H + k)];
                    for (int64_t k = 0; k < H; ++k)
                        fill[size_t(k)] = static_cast<float>(sum[size_t(k)] / double(B * T));
                }
                const ScopedHook hooked{model.add_hook(
                    point, [&](Tensor& v, const std::string&) { v = replaced(v, h, true, T, {}, fill); })};
                const Tensor ablated =
                    run_from(model, transformer, ids, B, T, l, transformer ? streams[size_t(l)] : Tensor(), nullptr);
                out.heads[size_t(l)][size_t(h)] += target_loss(ablated, next).first * weight;
            }
        }
    }
    return out;
}

}  // namespace nn
