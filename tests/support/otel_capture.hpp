// SPDX-License-Identifier: Apache-2.0
// What an OpenTelemetryObserver produced, read back through opentelemetry-cpp's SDK as a
// backend would get it: an SDK tracer provider that exports each finished span to memory, and an
// SDK meter provider with a reader that collects the metrics when asked (cumulative). For the
// unit and integration tests of the opentelemetry component.
//
//   OtelCapture otel;
//   auto observer = std::make_shared<dblock::OpenTelemetryObserver>(otel.tracers(), otel.meters());
//   ... events ...
//   auto spans = otel.spans("dblock.hold");            // finished spans of that name
//   auto m = otel.metrics();                           // one collection
//   m.value("dblock.acquisitions", {{"dblock.lock.strategy", "unique_key"}, ...});
//
// Not thread-safe itself: read it from the test's thread.
#pragma once

#include <gtest/gtest.h>
#include <opentelemetry/exporters/memory/in_memory_span_data.h>
#include <opentelemetry/exporters/memory/in_memory_span_exporter_factory.h>
#include <opentelemetry/sdk/metrics/meter_provider.h>
#include <opentelemetry/sdk/metrics/metric_reader.h>
#include <opentelemetry/sdk/trace/simple_processor_factory.h>
#include <opentelemetry/sdk/trace/span_data.h>
#include <opentelemetry/sdk/trace/tracer_provider.h>
#include <opentelemetry/sdk/trace/tracer_provider_factory.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace dblock::testing {

namespace otel_sdk = opentelemetry::sdk;
using OtelAttributes = std::map<std::string, std::string>;

// An attribute of a span or an event, as text ("" when absent), or as a number (nullopt when
// absent or not a whole number).
inline std::string text_of(
    const std::unordered_map<std::string, otel_sdk::common::OwnedAttributeValue>& attributes,
    const std::string& name) {
  auto it = attributes.find(name);
  if (it == attributes.end()) return "";
  if (const auto* s = opentelemetry::nostd::get_if<std::string>(&it->second)) return *s;
  if (const auto* b = opentelemetry::nostd::get_if<bool>(&it->second)) return *b ? "true" : "false";
  if (const auto* i = opentelemetry::nostd::get_if<std::int32_t>(&it->second)) {
    return std::to_string(*i);
  }
  if (const auto* i = opentelemetry::nostd::get_if<std::int64_t>(&it->second)) {
    return std::to_string(*i);
  }
  return "(another type)";
}

// One collection of the metrics.
class OtelMetrics {
 public:
  struct Point {
    double value = 0;         // a counter's or up-down counter's sum
    std::uint64_t count = 0;  // a histogram's count
    double sum = 0;           // a histogram's sum
    bool histogram = false;
  };
  // The point of `name` whose attributes are exactly `attributes`, failing the test when there is
  // none.
  Point operator()(const std::string& name, const OtelAttributes& attributes) const {
    auto it = points_.find({name, attributes});
    EXPECT_NE(it, points_.end()) << "no point " << name << describe(attributes) << " in\n"
                                 << text();
    return it == points_.end() ? Point{} : it->second;
  }
  bool has(const std::string& name, const OtelAttributes& attributes) const {
    return points_.count({name, attributes}) == 1;
  }
  double value(const std::string& name, const OtelAttributes& attributes) const {
    return (*this)(name, attributes).value;
  }
  // Each metric's name, unit and kind as the SDK has them.
  std::map<std::string, std::string> units;
  std::string text() const {
    std::string out;
    for (const auto& [k, p] : points_) {
      out += k.first + describe(k.second) + " " +
             (p.histogram ? "count " + std::to_string(p.count) + " sum " + std::to_string(p.sum)
                          : std::to_string(p.value)) +
             "\n";
    }
    return out;
  }
  void add(const std::string& name, OtelAttributes attributes, Point p) {
    auto [it, made] = points_.emplace(std::make_pair(name, std::move(attributes)), p);
    EXPECT_TRUE(made) << "two points " << name << describe(it->first.second);
  }
  static std::string describe(const OtelAttributes& attributes) {
    std::string out = "{";
    for (const auto& [k, v] : attributes) out += k + "=" + v + ",";
    return out + "}";
  }

 private:
  std::map<std::pair<std::string, OtelAttributes>, Point> points_;
};

class OtelCapture {
 public:
  OtelCapture() {
    auto exporter =
        opentelemetry::exporter::memory::InMemorySpanExporterFactory::Create(spans_, 10000);
    tracers_ = otel_sdk::trace::TracerProviderFactory::Create(
        otel_sdk::trace::SimpleSpanProcessorFactory::Create(std::move(exporter)));
    meters_ = std::make_unique<otel_sdk::metrics::MeterProvider>();
    reader_ = std::make_shared<PullReader>();
    meters_->AddMetricReader(reader_);
  }

  opentelemetry::trace::TracerProvider& tracers() { return *tracers_; }
  opentelemetry::metrics::MeterProvider& meters() { return *meters_; }

  // The spans finished since the last call, in the order they ended; with a name, only those
  // (the others are kept for the next call).
  std::vector<std::unique_ptr<otel_sdk::trace::SpanData>> spans(const std::string& name = "") {
    for (auto& s : spans_->GetSpans()) kept_.push_back(std::move(s));
    std::vector<std::unique_ptr<otel_sdk::trace::SpanData>> out, rest;
    for (auto& s : kept_) {
      (name.empty() || std::string(s->GetName()) == name ? out : rest).push_back(std::move(s));
    }
    kept_ = std::move(rest);
    return out;
  }

  OtelMetrics metrics() {
    OtelMetrics m;
    reader_->Collect([&](otel_sdk::metrics::ResourceMetrics& rm) {
      for (const auto& scope : rm.scope_metric_data_) {
        for (const auto& data : scope.metric_data_) {
          const std::string name = data.instrument_descriptor.name_;
          m.units[name] = data.instrument_descriptor.unit_;
          for (const auto& pda : data.point_data_attr_) {
            OtelAttributes attributes;
            for (const auto& [k, v] : pda.attributes) {
              const auto* s = opentelemetry::nostd::get_if<std::string>(&v);
              attributes[k] = s ? *s : "(not text)";
            }
            OtelMetrics::Point p;
            if (const auto* sum = opentelemetry::nostd::get_if<otel_sdk::metrics::SumPointData>(
                    &pda.point_data)) {
              p.value = number(sum->value_);
            } else if (const auto* h =
                           opentelemetry::nostd::get_if<otel_sdk::metrics::HistogramPointData>(
                               &pda.point_data)) {
              p.histogram = true;
              p.count = h->count_;
              p.sum = number(h->sum_);
            }
            m.add(name, std::move(attributes), p);
          }
        }
      }
      return true;
    });
    return m;
  }

 private:
  // A reader that collects when the test asks, with cumulative sums.
  class PullReader final : public otel_sdk::metrics::MetricReader {
   public:
    otel_sdk::metrics::AggregationTemporality GetAggregationTemporality(
        otel_sdk::metrics::InstrumentType) const noexcept override {
      return otel_sdk::metrics::AggregationTemporality::kCumulative;
    }

   private:
    bool OnForceFlush(std::chrono::microseconds) noexcept override { return true; }
    bool OnShutDown(std::chrono::microseconds) noexcept override { return true; }
  };
  static double number(const otel_sdk::metrics::ValueType& v) {
    if (const auto* i = opentelemetry::nostd::get_if<std::int64_t>(&v)) {
      return static_cast<double>(*i);
    }
    return opentelemetry::nostd::get<double>(v);
  }

  std::shared_ptr<opentelemetry::exporter::memory::InMemorySpanData> spans_;
  std::vector<std::unique_ptr<otel_sdk::trace::SpanData>> kept_;
  std::unique_ptr<otel_sdk::trace::TracerProvider> tracers_;
  std::unique_ptr<otel_sdk::metrics::MeterProvider> meters_;
  std::shared_ptr<PullReader> reader_;
};

}  // namespace dblock::testing
