#include <opentelemetry/metrics/meter_provider.h>
#include <opentelemetry/trace/tracer_provider.h>

#include <dblock/observer.hpp>
#include <dblock/opentelemetry.hpp>
#include <memory>

// dblock's spans and metrics for every lock of the process, on the providers the service set up
// with opentelemetry-cpp's SDK (its exporters, processors, readers and views). Keys name
// customers here, so spans leave them out.
void install_opentelemetry(opentelemetry::trace::TracerProvider& tracers,
                           opentelemetry::metrics::MeterProvider& meters) {
  dblock::OpenTelemetryOptions options;
  options.key_attribute = false;
  dblock::set_observer(std::make_shared<dblock::OpenTelemetryObserver>(tracers, meters, options));
}
