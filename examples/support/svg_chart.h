// A small line chart written as one self-contained SVG file: no scripts, no external fonts or
// stylesheets (text uses the generic sans-serif family), so it renders the same in a browser, on
// GitHub and through rsvg-convert. Used by the examples gradflow and plot_loss.
//
//     chart::LineChart c{.title = "Loss", .x = {.label = "step"}, .y = {.label = "loss", .scale = chart::Scale::log}};
//     c.series.push_back({.name = "train", .x = steps, .y = train_loss});
//     c.series.push_back({.name = "validation", .x = steps, .y = val_loss, .dashed = true});
//     chart::write_svg(c, "loss.svg");  // whole or not at all; throws std::runtime_error naming the file
//
// On a log axis, points that are not positive cannot be placed: they are left out and the line
// breaks there. Non-finite values are left out on any axis.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace chart {

enum class Scale { linear, log };

struct Axis {
    std::string label;
    Scale scale = Scale::linear;
    std::optional<double> min = {}, max = {};  // fixed ends; otherwise taken from the data (and rounded outwards)
};

struct Series {
    std::string name;                    // shown in the legend
    std::vector<double> x = {}, y = {};  // same length
    std::string color = "";              // any SVG colour; empty picks the next colour of the palette
    bool dashed = false;
    bool markers = false;  // a dot at every point
};

struct LineChart {
    std::string title;
    Axis x, y;
    std::vector<Series> series = {};
    std::string note = "";  // one line of small print under the plot
    int width = 640, height = 400;
};

// The axis range shown for data in [lo, hi]: on a linear axis widened to whole tick steps, on a log
// axis to whole powers of ten. A degenerate range (lo == hi) is widened around the value.
struct Range {
    double lo = 0, hi = 1;
};
Range nice_range(double lo, double hi, Scale scale);

// Tick positions inside [lo, hi]: on a linear axis about `target` multiples of 1, 2 or 5 x 10^k;
// on a log axis the powers of ten (with 2 and 5 between them when the range spans at most two decades).
std::vector<double> ticks(double lo, double hi, Scale scale, int target = 6);

// A tick's text: plain decimals for everyday magnitudes ("0.25", "1500"), powers of ten as 10⁻⁶ on a
// log axis, otherwise short scientific notation ("2e-07"). `step` is the distance between ticks on a
// linear axis (it fixes the number of decimals); pass 0 for a log axis.
std::string tick_label(double value, double step);

// The whole SVG document. Throws std::invalid_argument when a series' x and y differ in length.
std::string to_svg(const LineChart& chart);
void write_svg(const LineChart& chart, const std::filesystem::path& path);

}  // namespace chart
