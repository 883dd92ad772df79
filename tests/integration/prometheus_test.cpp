// SPDX-License-Identifier: Apache-2.0
// dblock::PrometheusMetrics (dblock/prometheus.hpp) against every database x driver pair, from
// the side of whoever scrapes it: acquisitions of each outcome, a waiter, a renewal, releases,
// drops and leases taken over are done through a lock observed by the metrics, the registry is
// serialized in Prometheus' text format, the text is parsed back, and each number is checked
// against what was done.
#include "dblock/prometheus.hpp"

#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <exception>
#include <future>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <stop_token>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "backends.hpp"
#include "dblock/election.hpp"
#include "dblock/error.hpp"
#include "dblock/unique_key_lock.hpp"
#include "migrated_fixture.hpp"

namespace dblock::testing {
namespace {

using std::chrono::milliseconds;
using Labels = std::map<std::string, std::string>;

// One sample line of the exposition text: name{label="value",...} value
struct Sample {
  std::string name;
  Labels labels;
  double value = 0;
};

// The samples of Prometheus' text format (comments and blank lines skipped). A line it cannot
// read fails the test and is left out.
std::vector<Sample> parse_exposition(const std::string& text) {
  std::vector<Sample> samples;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    Sample s;
    std::size_t i = 0;
    while (i < line.size() && line[i] != '{' && line[i] != ' ') ++i;
    s.name = line.substr(0, i);
    bool ok = !s.name.empty();
    if (ok && i < line.size() && line[i] == '{') {
      ++i;
      while (ok && i < line.size() && line[i] != '}') {
        const std::size_t eq = line.find('=', i);
        ok = eq != std::string::npos && eq + 1 < line.size() && line[eq + 1] == '"';
        if (!ok) break;
        std::string name = line.substr(i, eq - i);
        std::string value;
        std::size_t j = eq + 2;
        for (; j < line.size() && line[j] != '"'; ++j) {
          if (line[j] == '\\' && j + 1 < line.size()) ++j;  // \" \\ (and \n, kept as n)
          value += line[j];
        }
        ok = j < line.size();
        s.labels.emplace(std::move(name), std::move(value));
        i = j + 1;
        if (i < line.size() && line[i] == ',') ++i;
      }
      ok = ok && i < line.size();  // the closing brace
      ++i;
    }
    ok = ok && i < line.size() && line[i] == ' ';
    if (ok) {
      const std::string number = line.substr(i + 1);
      std::size_t used = 0;
      try {
        s.value =
            number == "+Inf" ? std::numeric_limits<double>::infinity() : std::stod(number, &used);
        ok = number == "+Inf" || used == number.size();
      } catch (const std::exception&) {
        ok = false;
      }
    }
    EXPECT_TRUE(ok) << "not a sample line of the exposition format: " << line;
    if (ok) samples.push_back(std::move(s));
  }
  return samples;
}

// A scrape: the registry serialized and parsed back.
class Scrape {
 public:
  explicit Scrape(prometheus::Registry& registry)
      : text_(prometheus::TextSerializer().Serialize(registry.Collect())),
        samples_(parse_exposition(text_)) {}

  // The value of the one sample `name{labels}` (labels exactly), or nullopt.
  std::optional<double> find(const std::string& name, const Labels& labels) const {
    std::optional<double> found;
    for (const Sample& s : samples_) {
      if (s.name != name || s.labels != labels) continue;
      EXPECT_FALSE(found) << "two samples " << name << " with the same labels";
      found = s.value;
    }
    return found;
  }
  // As find, failing the test (and answering -1) when there is no such sample.
  double operator()(const std::string& name, const Labels& labels) const {
    auto v = find(name, labels);
    EXPECT_TRUE(v) << "no sample " << name << describe(labels) << " in\n" << text_;
    return v.value_or(-1);
  }
  // The strategies any sample names.
  std::vector<std::string> strategies() const {
    std::vector<std::string> names;
    for (const Sample& s : samples_) {
      auto it = s.labels.find("strategy");
      if (it != s.labels.end() &&
          std::find(names.begin(), names.end(), it->second) == names.end()) {
        names.push_back(it->second);
      }
    }
    return names;
  }
  // A histogram's buckets are cumulative, its +Inf bucket equals its _count: checked for every
  // histogram series in the scrape.
  void expect_histograms_consistent() const {
    for (const Sample& s : samples_) {
      if (!s.name.ends_with("_bucket")) continue;
      const std::string base = s.name.substr(0, s.name.size() - 7);
      Labels series = s.labels;
      series.erase("le");
      if (s.labels.at("le") == "+Inf") {
        EXPECT_EQ(s.value, (*this)(base + "_count", series)) << base << describe(series);
      } else {
        EXPECT_LE(s.value, (*this)(base + "_count", series)) << base << describe(series);
      }
    }
  }
  const std::string& text() const { return text_; }

 private:
  static std::string describe(const Labels& labels) {
    std::string out = "{";
    for (const auto& [k, v] : labels) out += k + "=\"" + v + "\",";
    return out + "}";
  }
  std::string text_;
  std::vector<Sample> samples_;
};

class PrometheusTest : public MigratedPoolTest {
 protected:
  PrometheusTest() : MigratedPoolTest("prom", 4) {}
  // Options of owner `owner` reporting to metrics_; renewed only when the test says so.
  LockOptions observed(const std::string& owner, milliseconds ttl = std::chrono::seconds(30)) {
    LockOptions o = as(owner, ttl, /*auto_renew=*/false);
    o.observer = metrics_;
    return o;
  }
  prometheus::Registry registry_;
  std::shared_ptr<PrometheusMetrics> metrics_ = std::make_shared<PrometheusMetrics>(registry_);
};

const Labels kUniqueKey{{"strategy", "unique_key"}};
Labels with(std::string name, std::string value, Labels labels = kUniqueKey) {
  labels.emplace(std::move(name), std::move(value));
  return labels;
}

TEST_P(PrometheusTest, AScrapeCountsTheAcquisitionsWaitsRenewalsLossesAndReleasesDone) {
  UniqueKeyLock lock(*pool_, {.tables = tables_});
  const std::string key = unique_name("prom");

  auto held = lock.try_acquire(key, observed("a"));
  ASSERT_TRUE(held);
  EXPECT_FALSE(lock.try_acquire(key, observed("b")));
  EXPECT_FALSE(lock.acquire(key, milliseconds(150), observed("c")));
  LockOptions refused = observed("d");
  refused.ttl = milliseconds(0);
  EXPECT_THROW(lock.try_acquire(key, refused), Error);
  {
    const Scrape now(registry_);
    EXPECT_EQ(now("dblock_leases_held", kUniqueKey), 1);
    EXPECT_EQ(now("dblock_acquisitions_in_progress", kUniqueKey), 0);
  }

  // A waiter counts as an acquisition in progress until it gets the key.
  auto waiter = std::async(std::launch::async,
                           [&] { return lock.acquire(key, milliseconds(10000), observed("e")); });
  bool seen_waiting = false;
  for (const auto until = Clock::now() + std::chrono::seconds(10);
       !seen_waiting && Clock::now() < until; std::this_thread::sleep_for(milliseconds(5))) {
    seen_waiting = Scrape(registry_)("dblock_acquisitions_in_progress", kUniqueKey) == 1;
  }
  EXPECT_TRUE(seen_waiting) << "the waiter never showed in dblock_acquisitions_in_progress";
  EXPECT_TRUE(held->renew());
  EXPECT_EQ(held->release(), ReleaseOutcome::kReleased);
  auto got = waiter.get();
  ASSERT_TRUE(got);
  EXPECT_EQ(got->release(), ReleaseOutcome::kReleased);

  // Two leases whose TTL runs out and whose keys are taken over: the one released after the
  // loss counts as a section that ran unprotected, the one dropped does not.
  const std::string released_late = unique_name("late");
  const std::string dropped_late = unique_name("drop");
  auto doomed = lock.try_acquire(released_late, observed("a", milliseconds(200)));
  auto doomed_dropped = lock.try_acquire(dropped_late, observed("a", milliseconds(200)));
  ASSERT_TRUE(doomed && doomed_dropped);
  std::this_thread::sleep_for(milliseconds(400));
  auto taker = lock.try_acquire(released_late, observed("b"));
  auto taker_too = lock.try_acquire(dropped_late, observed("b"));
  ASSERT_TRUE(taker && taker_too);
  EXPECT_FALSE(doomed->renew());
  EXPECT_FALSE(doomed_dropped->renew());
  EXPECT_EQ(doomed->release(), ReleaseOutcome::kNotHeld);
  doomed_dropped.reset();
  EXPECT_EQ(taker->release(), ReleaseOutcome::kReleased);
  EXPECT_EQ(taker_too->release(), ReleaseOutcome::kReleased);

  const Scrape end(registry_);
  SCOPED_TRACE(end.text());
  EXPECT_EQ(end.strategies(), std::vector<std::string>{"unique_key"});
  // a, e, a twice, b twice
  EXPECT_EQ(end("dblock_acquisitions_total", with("outcome", "acquired")), 6);
  EXPECT_EQ(end("dblock_acquisitions_total", with("outcome", "busy")), 1);
  EXPECT_EQ(end("dblock_acquisitions_total", with("outcome", "timed_out")), 1);
  EXPECT_EQ(end("dblock_acquisitions_total", with("outcome", "failed")), 1);
  for (const char* outcome : {"acquired", "busy", "timed_out", "failed"}) {
    EXPECT_EQ(end("dblock_acquire_wait_seconds_count", with("outcome", outcome)),
              end("dblock_acquisitions_total", with("outcome", outcome)))
        << outcome;
  }
  // The timed-out wait lasted its 150 ms: in seconds, above the 0.1 bucket.
  const Labels timed_out = with("outcome", "timed_out");
  EXPECT_GE(end("dblock_acquire_wait_seconds_sum", timed_out), 0.15);
  EXPECT_LT(end("dblock_acquire_wait_seconds_sum", timed_out), 10);
  EXPECT_EQ(end("dblock_acquire_wait_seconds_bucket", with("le", "0.1", timed_out)), 0);
  EXPECT_EQ(end("dblock_acquire_wait_seconds_bucket", with("le", "+Inf", timed_out)), 1);
  EXPECT_EQ(end("dblock_acquire_wait_seconds_bucket", with("le", "60", timed_out)), 1);
  EXPECT_EQ(end("dblock_acquisitions_in_progress", kUniqueKey), 0);
  EXPECT_EQ(end("dblock_leases_held", kUniqueKey), 0);

  // Six leases ended; the two doomed ones each lasted 400 ms or more.
  EXPECT_EQ(end("dblock_lease_hold_seconds_count", kUniqueKey), 6);
  EXPECT_GE(end("dblock_lease_hold_seconds_sum", kUniqueKey), 0.8);
  EXPECT_EQ(end("dblock_renewals_total", kUniqueKey), 1);
  EXPECT_EQ(end("dblock_renew_seconds_count", kUniqueKey), 1);
  EXPECT_GT(end("dblock_renew_seconds_sum", kUniqueKey), 0);
  EXPECT_EQ(end("dblock_renewal_failures_total", kUniqueKey), 0);
  EXPECT_EQ(end("dblock_leases_lost_total", with("reason", "taken_over")), 2);
  for (const char* reason : {"expired", "removed", "gone", "session_ended"}) {
    EXPECT_EQ(end("dblock_leases_lost_total", with("reason", reason)), 0) << reason;
  }
  EXPECT_EQ(end("dblock_unprotected_sections_total", kUniqueKey), 1);
  end.expect_histograms_consistent();
}

TEST_P(PrometheusTest, TheBucketsAreTheOnesAskedFor) {
  prometheus::Registry registry;
  auto metrics = std::make_shared<PrometheusMetrics>(
      registry, PrometheusOptions{.acquire_wait_buckets = {0.5, 2}});
  UniqueKeyLock lock(*pool_, {.tables = tables_});
  LockOptions o = as("a");
  o.observer = metrics;
  ASSERT_TRUE(lock.try_acquire(unique_name("buckets"), o));
  const Scrape scrape(registry);
  const Labels acquired = with("outcome", "acquired");
  EXPECT_EQ(scrape("dblock_acquire_wait_seconds_bucket", with("le", "0.5", acquired)), 1);
  EXPECT_EQ(scrape("dblock_acquire_wait_seconds_bucket", with("le", "2", acquired)), 1);
  EXPECT_FALSE(scrape.find("dblock_acquire_wait_seconds_bucket", with("le", "0.1", acquired)));
}

// An election's gauge reads 1 while this process leads and 0 once the term ended, and its terms
// are counted by why they ended: a term whose work returned, then one stopped with the campaign.
TEST_P(PrometheusTest, AnElectionsLeaderGaugeAndTermsFollowItsTerms) {
  const std::string name = unique_name("elect");
  Election election(*pool_, name,
                    ElectionOptions{.ttl = milliseconds(900),
                                    .rejoin_after = milliseconds(0),
                                    .observer = metrics_,
                                    .tables = tables_});
  const Labels of_election{{"election", name}};
  const auto ended = [&](const char* why) { return Labels{{"election", name}, {"ended", why}}; };
  std::optional<double> leading_while_led;
  std::atomic<int> terms{0};
  std::stop_source stop;
  std::thread campaign([&] {
    election.campaign(
        [&](const Term& term) {
          if (++terms == 1) return;  // the first term resigns at once
          leading_while_led = Scrape(registry_).find("dblock_election_leader", of_election);
          stop.request_stop();
          while (!term.stop_token().stop_requested()) std::this_thread::sleep_for(milliseconds(5));
        },
        stop.get_token());
  });
  campaign.join();
  ASSERT_EQ(terms.load(), 2);
  EXPECT_EQ(leading_while_led, std::optional<double>(1)) << "the gauge while the second term led";
  const Scrape scrape(registry_);
  EXPECT_EQ(scrape("dblock_election_leader", of_election), 0);
  EXPECT_EQ(scrape("dblock_election_terms_total", ended("returned")), 1);
  EXPECT_EQ(scrape("dblock_election_terms_total", ended("stopped")), 1);
  EXPECT_EQ(scrape("dblock_election_terms_total", ended("threw")), 0);
  EXPECT_EQ(scrape("dblock_election_terms_total", ended("lost")), 0);
  // The terms' leases are leases like any other.
  EXPECT_EQ(
      scrape("dblock_acquisitions_total", {{"strategy", "unique_key"}, {"outcome", "acquired"}}),
      2);
}

TEST(PrometheusMetricsTest, BucketsThatAreEmptyOrNotIncreasingAreRefusedSayingWhatToGive) {
  prometheus::Registry registry;
  for (std::vector<double> bad : {std::vector<double>{}, {1, 1}, {2, 1}}) {
    try {
      PrometheusMetrics metrics(registry, PrometheusOptions{.hold_buckets = bad});
      ADD_FAILURE() << "buckets of " << bad.size() << " bounds were taken";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find("hold_buckets"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("strictly increasing"), std::string::npos) << e.what();
    }
  }
}

}  // namespace

INSTANTIATE_TEST_SUITE_P(Pairs, PrometheusTest, ::testing::ValuesIn(all_backends()), BackendName());

}  // namespace dblock::testing
