// SPDX-License-Identifier: Apache-2.0
// Metrics in the Prometheus text format for node_exporter's textfile collector: read the
// previous file (so counters keep counting across cron runs), write the new one atomically.
//
// Thread-safety: the functions touch only the files they are given; one writer per file.
#pragma once

#include <map>
#include <string>

namespace dblock::cli {

// One metric family: its help text, type ("counter" or "gauge") and its series, each keyed by
// its label set as written inside the braces ("" for none, `table="locks"`).
struct MetricFamily {
  std::string help;
  std::string type;
  std::map<std::string, double> series;
};
using Metrics = std::map<std::string, MetricFamily>;  // by metric name

// `value` as a label value may be written between double quotes: backslash, double quote and
// line feed escaped.
std::string escape_label_value(const std::string& value);

// Now, in seconds since the Unix epoch (a timestamp gauge's value).
double unix_seconds();

// The sample values in a metrics file, keyed by "name" or "name{labels}". Missing or
// unreadable file: empty. Lines that do not parse are skipped.
std::map<std::string, double> read_metric_samples(const std::string& path);

// Writes `metrics` to `path` atomically: a temporary file in the same directory, flushed to
// disk, then renamed over `path`, so a collector never reads half a file. Throws
// dblock::Error(kOther) naming the file when it cannot.
void write_metrics_file(const std::string& path, const Metrics& metrics);

}  // namespace dblock::cli
