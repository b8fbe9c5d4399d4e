#include "svg_chart.h"

#include <nn/files/atomic_file.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include <fmt/format.h>

namespace chart {

namespace {

constexpr const char* kPalette[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e",
                                    "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"};
constexpr double kCharWidth = 6.6;  // rough width of one character of 12 px sans-serif, for layout

// 1, 2 or 5 times a power of ten, the nearest at or above `raw`.
double nice_step(double raw) {
    if (!(raw > 0) || !std::isfinite(raw)) return 1.0;
    const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
    const double f = raw / magnitude;
    return (f <= 1.0 ? 1.0 : f <= 2.0 ? 2.0 : f <= 5.0 ? 5.0 : 10.0) * magnitude;
}

std::string superscript(int n) {
    static constexpr const char* digits[] = {"⁰", "¹", "²", "³", "⁴", "⁵", "⁶", "⁷", "⁸", "⁹"};
    std::string out = n < 0 ? "⁻" : "";
    for (char c : std::to_string(std::abs(n))) out += digits[c - '0'];
    return out;
}

std::string escape(const std::string& text) {
    std::string out;
    for (char c : text) {
        switch (c) {
            case '&':
                out += "&amp;";
                break;
            case '<':
                out += "&lt;";
                break;
            case '>':
                out += "&gt;";
                break;
            case '"':
                out += "&quot;";
                break;
            default:
                out += c;
        }
    }
    return out;
}

bool placeable(double v, Scale scale) { return std::isfinite(v) && (scale == Scale::linear || v > 0); }

// The axis range: fixed ends where given, the data's (rounded outwards) otherwise.
Range axis_range(const Axis& axis, const std::vector<double>& values) {
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    for (double v : values)
        if (placeable(v, axis.scale)) lo = std::min(lo, v), hi = std::max(hi, v);
    if (lo > hi) lo = axis.scale == Scale::log ? 1.0 : 0.0, hi = axis.scale == Scale::log ? 10.0 : 1.0;
    Range r = nice_range(lo, hi, axis.scale);
    if (axis.min) r.lo = *axis.min;
    if (axis.max) r.hi = *axis.max;
    if (!(r.hi > r.lo)) r.hi = r.lo + 1.0;
    return r;
}

// Position in [0, 1] along an axis showing [lo, hi].
double fraction(double v, Range r, Scale scale) {
    if (scale == Scale::log) return (std::log10(v) - std::log10(r.lo)) / (std::log10(r.hi) - std::log10(r.lo));
    return (v - r.lo) / (r.hi - r.lo);
}

}  // namespace

Range nice_range(double lo, double hi, Scale scale) {
    if (lo > hi) std::swap(lo, hi);
    if (scale == Scale::log) {
        if (!(lo > 0))
            throw std::invalid_argument(fmt::format("nice_range: a log axis needs positive values, got {}", lo));
        Range r{std::pow(10.0, std::floor(std::log10(lo))), std::pow(10.0, std::ceil(std::log10(hi)))};
        if (r.hi <= r.lo) r.hi = r.lo * 10.0;
        return r;
    }
    if (lo == hi) {
        const double pad = lo == 0.0 ? 1.0 : std::abs(lo) * 0.1;
        lo -= pad, hi += pad;
    }
    const double step = nice_step((hi - lo) / 5.0);
    return {std::floor(lo / step + 1e-9) * step, std::ceil(hi / step - 1e-9) * step};
}

std::vector<double> ticks(double lo, double hi, Scale scale, int target) {
    std::vector<double> out;
    if (!(hi > lo)) return out;
    if (scale == Scale::log) {
        if (!(lo > 0)) return out;
        const int first = static_cast<int>(std::floor(std::log10(lo) + 1e-9));
        const int last = static_cast<int>(std::ceil(std::log10(hi) - 1e-9));
        const int decades = last - first;
        const int every =
            std::max(1, (decades + target - 1) / std::max(1, target));  // skip decades when there are many
        const bool between = decades <= 2;
        for (int k = first; k <= last; ++k) {
            for (double m : {1.0, 2.0, 5.0}) {
                if (m != 1.0 && !between) continue;
                if (m == 1.0 && (k - first) % every != 0) continue;
                const double v = m * std::pow(10.0, k);
                if (v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9)) out.push_back(v);
            }
        }
        return out;
    }
    const double step = nice_step((hi - lo) / std::max(1, target));
    for (double k = std::ceil(lo / step - 1e-9); k * step <= hi + step * 1e-9; k += 1.0) {
        const double v = k * step;
        out.push_back(v == 0.0 ? 0.0 : v);  // no "-0"
    }
    return out;
}

std::string tick_label(double value, double step) {
    if (value == 0.0) return "0";
    const double a = std::abs(value);
    if (step > 0) {  // linear: as many decimals as the step needs
        if (a >= 1e6 || step < 1e-4) return fmt::format("{:g}", value);
        const int decimals = std::max(0, -static_cast<int>(std::floor(std::log10(step) + 1e-9)));
        return fmt::format("{:.{}f}", value, decimals);
    }
    if (a >= 1e-3 && a < 1e5) return fmt::format("{:g}", value);
    const int exponent = static_cast<int>(std::floor(std::log10(a) + 1e-9));
    const double mantissa = value / std::pow(10.0, exponent);
    if (std::abs(mantissa - 1.0) < 1e-9) return "10" + superscript(exponent);
    return fmt::format("{:g}×10{}", std::round(mantissa * 100) / 100, superscript(exponent));
}

std::string to_svg(const LineChart& c) {
    std::vector<double> xs, ys;
    for (const Series& s : c.series) {
        if (s.x.size() != s.y.size())
            throw std::invalid_argument(
                fmt::format("chart: series '{}' has {} x values but {} y values", s.name, s.x.size(), s.y.size()));
        for (size_t i = 0; i < s.x.size(); ++i)
            if (placeable(s.x[i], c.x.scale) && placeable(s.y[i], c.y.scale))
                xs.push_back(s.x[i]), ys.push_back(s.y[i]);
    }
    const Range rx = axis_range(c.x, xs), ry = axis_range(c.y, ys);

    // Layout: title on top, y labels on the left, the legend in a column on the right.
    size_t longest = 0;
    for (const Series& s : c.series) longest = std::max(longest, s.name.size());
    const double legend_width = c.series.empty() ? 0.0 : 40.0 + kCharWidth * static_cast<double>(longest);
    const double left = 72, top = c.title.empty() ? 20 : 44, right = 16 + legend_width;
    const double bottom = c.note.empty() ? 52 : 70;
    const double W = c.width, H = c.height;
    const double pw = std::max(50.0, W - left - right), ph = std::max(50.0, H - top - bottom);
    const auto px = [&](double v) { return left + fraction(v, rx, c.x.scale) * pw; };
    const auto py = [&](double v) { return top + (1.0 - fraction(v, ry, c.y.scale)) * ph; };

    std::string svg = fmt::format(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
        "font-family=\"sans-serif\" font-size=\"12\">\n"
        "<rect width=\"{0}\" height=\"{1}\" fill=\"white\"/>\n"
        "<defs><clipPath id=\"plot\"><rect x=\"{2:.1f}\" y=\"{3:.1f}\" width=\"{4:.1f}\" "
        "height=\"{5:.1f}\"/></clipPath></defs>\n",
        c.width, c.height, left, top, pw, ph);
    if (!c.title.empty())
        svg += fmt::format(
            "<text x=\"{:.1f}\" y=\"26\" text-anchor=\"middle\" font-size=\"15\" font-weight=\"bold\">{}</text>\n",
            left + pw / 2, escape(c.title));

    // Grid and ticks.
    const auto x_ticks = ticks(rx.lo, rx.hi, c.x.scale), y_ticks = ticks(ry.lo, ry.hi, c.y.scale);
    const double x_step = c.x.scale == Scale::linear && x_ticks.size() > 1 ? x_ticks[1] - x_ticks[0] : 0.0;
    const double y_step = c.y.scale == Scale::linear && y_ticks.size() > 1 ? y_ticks[1] - y_ticks[0] : 0.0;
    svg += "<g stroke=\"#e3e3e3\" stroke-width=\"1\">\n";
    for (double t : x_ticks)
        svg +=
            fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\"/>\n", px(t), top, top + ph);
    for (double t : y_ticks)
        svg += fmt::format("<line x1=\"{1:.1f}\" y1=\"{0:.1f}\" x2=\"{2:.1f}\" y2=\"{0:.1f}\"/>\n", py(t), left,
                           left + pw);
    svg += "</g>\n";
    svg += fmt::format(
        "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"none\" stroke=\"#444\"/>\n", left,
        top, pw, ph);
    svg += "<g fill=\"#333\">\n";
    for (double t : x_ticks)
        svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n", px(t), top + ph + 16,
                           escape(tick_label(t, x_step)));
    for (double t : y_ticks)
        svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n", left - 6, py(t) + 4,
                           escape(tick_label(t, y_step)));
    svg += "</g>\n";
    if (!c.x.label.empty())
        svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n", left + pw / 2,
                           top + ph + 36, escape(c.x.label));
    if (!c.y.label.empty())
        svg += fmt::format("<text transform=\"translate(16 {:.1f}) rotate(-90)\" text-anchor=\"middle\">{}</text>\n",
                           top + ph / 2, escape(c.y.label));
    if (!c.note.empty())
        svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"10.5\" fill=\"#555\">{}</text>\n", left, H - 10,
                           escape(c.note));

    // Series: one path per unbroken run of placeable points, clipped to the plot.
    svg += "<g clip-path=\"url(#plot)\" fill=\"none\" stroke-width=\"2\" stroke-linejoin=\"round\">\n";
    std::vector<std::string> colors;
    size_t next_color = 0;
    for (const Series& s : c.series) {
        const std::string color = s.color.empty() ? kPalette[next_color++ % std::size(kPalette)] : s.color;
        colors.push_back(color);
        const std::string dash = s.dashed ? " stroke-dasharray=\"6 4\"" : "";
        std::string d, dots;
        bool pen_down = false;
        for (size_t i = 0; i < s.x.size(); ++i) {
            if (!placeable(s.x[i], c.x.scale) || !placeable(s.y[i], c.y.scale)) {
                pen_down = false;
                continue;
            }
            d += fmt::format("{}{:.1f} {:.1f}", pen_down ? " L" : (d.empty() ? "M" : " M"), px(s.x[i]), py(s.y[i]));
            pen_down = true;
            if (s.markers) dots += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\"/>", px(s.x[i]), py(s.y[i]));
        }
        svg += fmt::format("<path d=\"{}\" stroke=\"{}\"{}><title>{}</title></path>\n", d, color, dash, escape(s.name));
        if (!dots.empty()) svg += fmt::format("<g fill=\"{}\" stroke=\"none\">{}</g>\n", color, dots);
    }
    svg += "</g>\n";

    // Legend.
    if (!c.series.empty()) {
        const double lx = left + pw + 16;
        svg += "<g>\n";
        for (size_t i = 0; i < c.series.size(); ++i) {
            const double ly = top + 10 + 20.0 * static_cast<double>(i);
            const Series& s = c.series[i];
            svg += fmt::format(
                "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"{}\" stroke-width=\"2\"{}/>",
                lx, ly, lx + 26, ly, colors[i], s.dashed ? " stroke-dasharray=\"6 4\"" : "");
            if (s.markers)
                svg += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"{}\"/>", lx + 13, ly, colors[i]);
            svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\">{}</text>\n", lx + 32, ly + 4, escape(s.name));
        }
        svg += "</g>\n";
    }
    svg += "</svg>\n";
    return svg;
}

void write_svg(const LineChart& c, const std::filesystem::path& path) {
    nn::write_file_atomically(path, to_svg(c), "write_svg");  // never a half-written chart
}

}  // namespace chart
