// rpb/cli/svg.h: the small toolkit rpb's plots are drawn with (results.svg, `rpb inspect --svg`): an SVG
// document builder with escaped text, axes that map values to pixels (linear or log), tick values that read
// well (1-2-5 on log axes, never 7.72 or 9.27), their labels, and a colour palette.
#pragma once

#include <cstddef>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace rpb::svg {

/// `text` with &, <, >, " and ' as XML entities (so any label, a scheme's or a task's name, is safe in SVG).
std::string escape(std::string_view text);

/// The i-th colour of a 10-colour palette (Tableau 10), cycling.
const char* color(std::size_t i);

/// A colour on a diverging blue-white-red scale for t in [-1, 1] (clamped): "#rrggbb".
std::string diverging(double t);

/// The shortest label of a tick value, of at most `significant` digits: 8, 10, 0.5, 1.5, 200, 1e+06, -0.25.
std::string tick_label(double v, int significant = 6);

/// Tick values of an axis over [lo, hi].
struct Ticks {
  std::vector<double> major;  // labelled
  std::vector<double> minor;  // unlabelled marks between them (log axes over several decades)
};

/// Ticks of a log axis over [lo, hi] (0 < lo < hi): the 1-2-5 series (2..300 gives 2, 5, 10, 20, 50, 100, 200)
/// when it gives three ticks or more; over a narrow range every integer multiple of a power of ten
/// (7.7..11.1 gives 8, 9, 10); over more than 6 decades powers of ten, with 2..9 x 10^k as minor ticks; and
/// linear ticks when even a narrow range holds fewer than two.
Ticks log_ticks(double lo, double hi);

/// 3 to 8 ticks of a linear axis over [lo, hi] (lo < hi) at a step of 1, 2 or 5 x 10^k.
std::vector<double> linear_ticks(double lo, double hi);

/// Maps values in [lo, hi] to pixels [p0, p1] (p1 < p0 for a y axis), linearly or in log10.
struct Axis {
  double lo, hi, p0, p1;
  bool log = false;
  double operator()(double v) const;
};

/// An SVG document of `width` x `height` pixels on a white background; elements are appended in order.
class Document {
 public:
  Document(double width, double height);
  /// A line; `style` holds extra attributes (`stroke-dasharray="4 3"`).
  void line(double x1, double y1, double x2, double y2, const std::string& stroke, double width = 1,
            const std::string& style = "");
  void rect(double x, double y, double w, double h, const std::string& fill, const std::string& style = "");
  void circle(double cx, double cy, double r, const std::string& fill, const std::string& stroke = "none");
  /// An open polyline through the points (a path), or a closed filled polygon.
  void polyline(const std::vector<double>& xs, const std::vector<double>& ys, const std::string& stroke, double width);
  void polygon(const std::vector<double>& xs, const std::vector<double>& ys, const std::string& fill,
               double opacity);
  /// `text`, escaped; `anchor` start, middle or end; `rotate` degrees about (x, y).
  void text(double x, double y, std::string_view text, const std::string& anchor = "start", double size = 12,
            double rotate = 0);
  /// A vertical axis at pixel x with the given ticks (labels left of it) and grid lines to x + grid_width.
  void y_axis(const Axis& a, double x, const Ticks& ticks, double grid_width, const std::string& label);
  /// The document, closed.
  std::string str() const;

 private:
  std::ostringstream out_;
};

}  // namespace rpb::svg
