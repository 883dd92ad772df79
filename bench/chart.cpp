// SPDX-License-Identifier: Apache-2.0
// The SVG chart, written directly (no plotting dependency): six panels, each a line per
// database and mode, on a log2 x axis.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

#include "report.hpp"

namespace dblock::bench {

namespace {

struct Series {
  std::string name;
  std::vector<std::pair<double, double>> points;  // x, y
};

const char* const kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                               "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"};

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '<') {
      out += "&lt;";
    } else if (c == '&') {
      out += "&amp;";
    } else {
      out += c;
    }
  }
  return out;
}

std::string number(double v) {
  char buf[32];
  if (v >= 10000) {
    std::snprintf(buf, sizeof buf, "%.0fk", v / 1000);
  } else if (v >= 100) {
    std::snprintf(buf, sizeof buf, "%.0f", v);
  } else {
    std::snprintf(buf, sizeof buf, "%.3g", v);
  }
  return buf;
}

void panel(std::ostringstream& svg, double left, double top, const std::string& title,
           const std::string& xlabel, const std::vector<Series>& series) {
  const double w = 440, h = 260, pl = 60, pb = 40, pt = 30;
  double xmin = 1e300, xmax = 0, ymax = 0;
  for (const auto& s : series) {
    for (auto [x, y] : s.points) {
      xmin = std::min(xmin, x);
      xmax = std::max(xmax, x);
      ymax = std::max(ymax, y);
    }
  }
  svg << "<g transform=\"translate(" << left << "," << top << ")\">\n";
  svg << "<text x=\"" << w / 2 << "\" y=\"18\" text-anchor=\"middle\" font-weight=\"bold\">"
      << escape(title) << "</text>\n";
  const double x0 = pl, x1 = w - 10, y0 = h - pb, y1 = pt;
  svg << "<line x1=\"" << x0 << "\" y1=\"" << y0 << "\" x2=\"" << x1 << "\" y2=\"" << y0
      << "\" stroke=\"black\"/><line x1=\"" << x0 << "\" y1=\"" << y0 << "\" x2=\"" << x0
      << "\" y2=\"" << y1 << "\" stroke=\"black\"/>\n";
  svg << "<text x=\"" << (x0 + x1) / 2 << "\" y=\"" << h - 5 << "\" text-anchor=\"middle\">"
      << escape(xlabel) << "</text>\n";
  if (series.empty() || xmax <= 0) {
    svg << "<text x=\"" << w / 2 << "\" y=\"" << h / 2
        << "\" text-anchor=\"middle\">not measured</text></g>\n";
    return;
  }
  ymax = ymax > 0 ? ymax * 1.1 : 1;
  const double lx0 = std::log2(xmin), lx1 = std::max(std::log2(xmax), lx0 + 1);
  auto px = [&](double x) { return x0 + (std::log2(x) - lx0) / (lx1 - lx0) * (x1 - x0 - 10); };
  auto py = [&](double y) { return y0 - y / ymax * (y0 - y1); };
  for (double x = std::exp2(std::floor(lx0)); x <= xmax * 1.001; x *= 2) {
    if (x < xmin * 0.999) continue;
    svg << "<text x=\"" << px(x) << "\" y=\"" << y0 + 15 << "\" text-anchor=\"middle\">"
        << number(x) << "</text>\n";
  }
  for (int i = 0; i <= 4; ++i) {
    double y = ymax * i / 4;
    svg << "<text x=\"" << x0 - 5 << "\" y=\"" << py(y) + 4 << "\" text-anchor=\"end\">"
        << number(y) << "</text><line x1=\"" << x0 << "\" y1=\"" << py(y) << "\" x2=\"" << x1
        << "\" y2=\"" << py(y) << "\" stroke=\"#ddd\"/>\n";
  }
  int color = 0;
  for (const auto& s : series) {
    const char* c = kColors[color++ % std::size(kColors)];
    svg << "<polyline fill=\"none\" stroke=\"" << c << "\" stroke-width=\"2\" points=\"";
    for (auto [x, y] : s.points) svg << px(x) << "," << py(y) << " ";
    svg << "\"/>\n";
    for (auto [x, y] : s.points) {
      svg << "<circle cx=\"" << px(x) << "\" cy=\"" << py(y) << "\" r=\"3\" fill=\"" << c
          << "\"/>\n";
    }
    double ly = y1 + 14.0 * color;
    svg << "<text x=\"" << x0 + 8 << "\" y=\"" << ly << "\" fill=\"" << c << "\">" << escape(s.name)
        << "</text>\n";
  }
  svg << "</g>\n";
}

double at(const nlohmann::json& j, const std::string& a, const std::string& b) {
  if (!j.contains(a) || !j[a].contains(b) || !j[a][b].is_number()) return 0;
  return j[a][b].get<double>();
}

}  // namespace

std::string render_chart(const nlohmann::json& document) {
  std::vector<Series> throughput, latency, hot_rate, handoff, strategy_rate, strategy_ratio;
  for (const auto& [db, section] : document["databases"].items()) {
    for (const char* strategy : {"row_lock", "optimistic"}) {
      if (!section.contains(strategy)) continue;
      const std::string name = db + " " + (std::string(strategy) == "row_lock" ? "row" : "opt");
      Series ratio{name + " dblock/raw", {}};
      for (const char* side : {"raw", "dblock"}) {
        Series t{name + " " + side, {}};
        for (const auto& p : section[strategy]["uncontended"]["points"]) {
          t.points.emplace_back(p["connections"].get<double>(), at(p, side, "ops_per_s"));
        }
        strategy_rate.push_back(t);
      }
      for (const auto& p : section[strategy]["uncontended"]["points"]) {
        ratio.points.emplace_back(p["connections"].get<double>(),
                                  p["ratio_dblock_vs_raw"].get<double>());
      }
      strategy_ratio.push_back(ratio);
    }
    if (section.contains("uncontended")) {
      for (const char* side : {"raw", "dblock"}) {
        Series t{db + " " + side, {}}, l{db + " " + side + " p50", {}};
        for (const auto& p : section["uncontended"]["points"]) {
          double x = p["connections"].get<double>();
          t.points.emplace_back(x, at(p, side, "ops_per_s"));
          l.points.emplace_back(x, at(p, side, "p50_ms"));
        }
        throughput.push_back(t);
        latency.push_back(l);
      }
    }
    // The row lock's hot key (one client count) joins the unique-key curves as one more mode.
    for (const auto* hot :
         {section.contains("hot_key") ? &section["hot_key"] : nullptr,
          section.contains("row_lock") ? &section["row_lock"]["hot_key"] : nullptr}) {
      if (hot == nullptr) continue;
      std::map<std::string, std::pair<Series, Series>> modes;
      for (const auto& p : (*hot)["points"]) {
        std::string mode = p["mode"].get<std::string>();
        auto& [r, h] = modes[mode];
        r.name = db + " " + mode;
        h.name = db + " " + mode;
        double x = p["clients"].get<double>();
        r.points.emplace_back(x, p["acquisitions_per_s"].get<double>());
        h.points.emplace_back(x, at(p, "handoff", "p50_ms"));
      }
      for (auto& [mode, pair] : modes) {
        hot_rate.push_back(pair.first);
        handoff.push_back(pair.second);
      }
    }
  }
  std::ostringstream svg;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"900\" height=\"840\" "
         "font-family=\"sans-serif\" font-size=\"11\">\n"
         "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  panel(svg, 0, 0, "Uncontended acquire+release: pairs/s", "connections", throughput);
  panel(svg, 450, 0, "Uncontended acquire+release: p50 latency (ms)", "connections", latency);
  panel(svg, 0, 280, "Hot key: acquisitions/s", "clients", hot_rate);
  panel(svg, 450, 280, "Hot key: handoff p50 (ms)", "clients", handoff);
  panel(svg, 0, 560, "Row lock / optimistic uncontended: pairs/s", "connections", strategy_rate);
  panel(svg, 450, 560, "Row lock / optimistic: dblock/raw throughput", "connections",
        strategy_ratio);
  svg << "</svg>\n";
  return svg.str();
}

}  // namespace dblock::bench
