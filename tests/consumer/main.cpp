// SPDX-License-Identifier: Apache-2.0
// Uses dblock's public API the way a service would, to prove the installed package links: the
// URL parser, the migrations built in, open_connection() with every driver installed, and
// (when installed) the libpqxx driver's own header, the prometheus component's metrics and the
// opentelemetry component's observer (on the API's global providers, which do nothing here).
#include <dblock/cleaner.hpp>
#include <dblock/error.hpp>
#include <dblock/migrator.hpp>
#include <dblock/open.hpp>
#include <dblock/unique_key_lock.hpp>
#include <dblock/url.hpp>
#include <iostream>
#include <string>
#include <vector>
#ifdef CONSUMER_HAS_LIBPQXX
#include <dblock/libpqxx.hpp>
#endif
#ifdef CONSUMER_HAS_PROMETHEUS
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <dblock/prometheus.hpp>
#endif
#ifdef CONSUMER_HAS_OPENTELEMETRY
#include <dblock/opentelemetry.hpp>
#endif

int main() {
  auto url = dblock::DatabaseUrl::parse("postgresql://app:secret@127.0.0.1:1/app");
  std::cout << url.redacted() << "\n";
  std::cout << dblock::builtin_migrations(url.dialect).size() << " migrations\n";
  for (auto dialect : {dblock::Dialect::kPostgreSQL, dblock::Dialect::kMySQL}) {
    std::cout << dblock::to_string(dialect) << " drivers:";
    for (const auto& d : dblock::available_drivers(dialect)) std::cout << " " << d;
    std::cout << "\n";
  }
  int failed = 0;
  std::vector<std::string> drivers = dblock::available_drivers(url.dialect);
  drivers.insert(drivers.begin(), "");  // the default
  for (const std::string& driver : drivers) {
    auto u = url;
    u.driver = driver;
    try {
      dblock::open_connection(u);  // nothing listens on port 1
      ++failed;
    } catch (const dblock::Error& e) {
      std::cout << (driver.empty() ? "default" : driver) << ": " << to_string(e.code()) << "\n";
      if (e.code() != dblock::ErrorCode::kConnectFailed) ++failed;
    }
  }
#ifdef CONSUMER_HAS_LIBPQXX
  try {
    dblock::connect_pqxx(url);
    ++failed;
  } catch (const dblock::Error& e) {
    if (e.code() != dblock::ErrorCode::kConnectFailed) ++failed;
  }
#endif
#ifdef CONSUMER_HAS_PROMETHEUS
  {
    prometheus::Registry registry;
    dblock::PrometheusMetrics metrics(registry);
    metrics.acquire_ended(
        dblock::AcquireEnded{.strategy = "unique_key", .outcome = dblock::AcquireOutcome::kBusy});
    const std::string text = prometheus::TextSerializer().Serialize(registry.Collect());
    std::cout << "prometheus: " << text.size() << " bytes of metrics\n";
    if (text.find("dblock_acquisitions_total{outcome=\"busy\",strategy=\"unique_key\"} 1") ==
        std::string::npos) {
      std::cout << text;
      ++failed;
    }
  }
#endif
#ifdef CONSUMER_HAS_OPENTELEMETRY
  {
    dblock::OpenTelemetryObserver observer;
    dblock::AcquireStarted started;
    started.strategy = "unique_key";
    started.key = "k";
    observer.acquire_started(started);
    dblock::AcquireEnded ended;
    ended.strategy = "unique_key";
    ended.key = "k";
    ended.outcome = dblock::AcquireOutcome::kBusy;
    observer.acquire_ended(ended);
    std::cout << "opentelemetry: an acquisition observed\n";
  }
#endif
  return failed == 0 ? 0 : 1;
}
