// rpb/cli/svg.cpp: SVG primitives and tick values (see svg.h).
#include "cli/svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iomanip>

namespace rpb::svg {

std::string escape(std::string_view text) {
  std::string out;
  for (const char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        // XML 1.0 allows no control characters but tab and newline.
        if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n') out += '?';
        else out += c;
    }
  }
  return out;
}

const char* color(std::size_t i) {
  static const char* palette[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                  "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
  return palette[i % 10];
}

std::string diverging(double t) {
  t = std::clamp(std::isfinite(t) ? t : 0.0, -1.0, 1.0);
  // white at 0, #2166ac at -1, #b2182b at +1
  const int end[2][3] = {{0x21, 0x66, 0xac}, {0xb2, 0x18, 0x2b}};
  const int* e = end[t > 0 ? 1 : 0];
  const double a = std::abs(t);
  char buf[8];
  std::snprintf(buf, sizeof buf, "#%02x%02x%02x", static_cast<int>(std::lround(255 + (e[0] - 255) * a)),
                static_cast<int>(std::lround(255 + (e[1] - 255) * a)), static_cast<int>(std::lround(255 + (e[2] - 255) * a)));
  return buf;
}

std::string tick_label(double v, int significant) {
  if (std::abs(v) < 1e-12) return "0";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*g", significant, v);
  return buf;
}

namespace {

// Every m x 10^k (m from `mantissas`) within [lo, hi], ascending.
std::vector<double> series(double lo, double hi, const std::vector<int>& mantissas) {
  std::vector<double> out;
  const int k0 = static_cast<int>(std::floor(std::log10(lo))) - 1, k1 = static_cast<int>(std::ceil(std::log10(hi)));
  for (int k = k0; k <= k1; ++k)
    for (const int m : mantissas) {
      // m x 10^k formed from a decimal string reads as its shortest label (0.3, not 0.30000000000000004).
      const double t = std::stod(std::to_string(m) + "e" + std::to_string(k));
      if (t >= lo * (1 - 1e-9) && t <= hi * (1 + 1e-9)) out.push_back(t);
    }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

Ticks log_ticks(double lo, double hi) {
  Ticks t;
  if (!(lo > 0) || !(hi > lo) || !std::isfinite(hi)) return t;
  if (std::log10(hi / lo) > 6) {
    t.major = series(lo, hi, {1});
    t.minor = series(lo, hi, {2, 3, 4, 5, 6, 7, 8, 9});
    return t;
  }
  t.major = series(lo, hi, {1, 2, 5});
  if (t.major.size() >= 3) return t;
  t.major = series(lo, hi, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  if (t.major.size() >= 2) return t;
  t.major = linear_ticks(lo, hi);
  return t;
}

std::vector<double> linear_ticks(double lo, double hi) {
  std::vector<double> out;
  if (!(hi > lo) || !std::isfinite(lo) || !std::isfinite(hi)) return out;
  const double magnitude = std::pow(10.0, std::floor(std::log10((hi - lo) / 5)));
  double step = magnitude;
  for (const double m : {1.0, 2.0, 5.0, 10.0}) {
    step = m * magnitude;
    if ((hi - lo) / step <= 7) break;
  }
  for (double v = std::ceil(lo / step - 1e-9) * step; v <= hi + step * 1e-9; v += step)
    out.push_back(std::abs(v) < step * 1e-9 ? 0.0 : std::stod(tick_label(v)));
  return out;
}

double Axis::operator()(double v) const {
  const double a = log ? std::log10(lo) : lo, b = log ? std::log10(hi) : hi, x = log ? std::log10(v) : v;
  if (!(b > a)) return (p0 + p1) / 2;
  return p0 + (x - a) / (b - a) * (p1 - p0);
}

Document::Document(double width, double height) {
  out_ << std::fixed << std::setprecision(1) << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width
       << "\" height=\"" << height << "\" viewBox=\"0 0 " << width << " " << height
       << "\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
}

void Document::line(double x1, double y1, double x2, double y2, const std::string& stroke, double width,
                    const std::string& style) {
  out_ << "<line x1=\"" << x1 << "\" y1=\"" << y1 << "\" x2=\"" << x2 << "\" y2=\"" << y2 << "\" stroke=\"" << stroke
       << "\" stroke-width=\"" << width << "\"" << (style.empty() ? "" : " " + style) << "/>\n";
}

void Document::rect(double x, double y, double w, double h, const std::string& fill, const std::string& style) {
  out_ << "<rect x=\"" << x << "\" y=\"" << y << "\" width=\"" << w << "\" height=\"" << h << "\" fill=\"" << fill
       << "\"" << (style.empty() ? "" : " " + style) << "/>\n";
}

void Document::circle(double cx, double cy, double r, const std::string& fill, const std::string& stroke) {
  out_ << "<circle cx=\"" << cx << "\" cy=\"" << cy << "\" r=\"" << r << "\" fill=\"" << fill << "\" stroke=\""
       << stroke << "\" stroke-width=\"1.5\"/>\n";
}

void Document::polyline(const std::vector<double>& xs, const std::vector<double>& ys, const std::string& stroke,
                        double width) {
  if (xs.size() < 2) return;
  out_ << "<path d=\"";
  for (std::size_t i = 0; i < xs.size(); ++i) out_ << (i ? " L" : "M") << xs[i] << " " << ys[i];
  out_ << "\" fill=\"none\" stroke=\"" << stroke << "\" stroke-width=\"" << width << "\"/>\n";
}

void Document::polygon(const std::vector<double>& xs, const std::vector<double>& ys, const std::string& fill,
                       double opacity) {
  if (xs.size() < 3) return;
  out_ << "<polygon points=\"";
  for (std::size_t i = 0; i < xs.size(); ++i) out_ << (i ? " " : "") << xs[i] << "," << ys[i];
  out_ << "\" fill=\"" << fill << "\" fill-opacity=\"" << std::setprecision(2) << opacity << std::setprecision(1)
       << "\" stroke=\"none\"/>\n";
}

void Document::text(double x, double y, std::string_view text, const std::string& anchor, double size, double rotate) {
  out_ << "<text x=\"" << x << "\" y=\"" << y << "\" text-anchor=\"" << anchor << "\"";
  if (size != 12) out_ << " font-size=\"" << size << "\"";
  if (rotate != 0) out_ << " transform=\"rotate(" << rotate << " " << x << " " << y << ")\"";
  out_ << ">" << escape(text) << "</text>\n";
}

void Document::y_axis(const Axis& a, double x, const Ticks& ticks, double grid_width, const std::string& label) {
  for (const double v : ticks.minor) {
    line(x, a(v), x + grid_width, a(v), "#f2f2f2");
    line(x - 3, a(v), x, a(v), "#333");
  }
  for (const double v : ticks.major) {
    line(x, a(v), x + grid_width, a(v), "#dddddd");
    line(x - 5, a(v), x, a(v), "#333");
    text(x - 8, a(v) + 4, tick_label(v), "end");
  }
  text(x - 48, (a.p0 + a.p1) / 2, label, "middle", 13, -90);
}

std::string Document::str() const { return out_.str() + "</svg>\n"; }

}  // namespace rpb::svg
