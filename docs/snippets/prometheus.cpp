#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <dblock/observer.hpp>
#include <dblock/prometheus.hpp>
#include <memory>
#include <string>

// dblock's metrics for every lock of the process, on the registry the service already exposes
// (with prometheus-cpp's Exposer, or its own HTTP endpoint). Waits here last up to 2 minutes, so
// the wait histogram gets buckets up to 120 s.
void install_prometheus_metrics(prometheus::Registry& registry) {
  dblock::PrometheusOptions options;
  options.acquire_wait_buckets = {0.001, 0.01, 0.1, 0.5, 1, 5, 15, 30, 60, 120};
  dblock::set_observer(std::make_shared<dblock::PrometheusMetrics>(registry, options));
}

// What a /metrics handler serves.
std::string metrics_page(prometheus::Registry& registry) {
  return prometheus::TextSerializer().Serialize(registry.Collect());
}
