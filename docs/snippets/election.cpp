#include <chrono>
#include <cstdint>
#include <dblock/election.hpp>
#include <stop_token>

bool schedule_due_jobs(std::int64_t term);  // your code: one round of the leader's work

// One replica of several runs the scheduler: each campaigns until the service shuts down; the
// leader schedules until its term ends (its lease about to run out or lost, or shutdown), then
// campaigns again.
void run_scheduler(dblock::ConnectionSource& pool, const std::stop_token& shutdown) {
  using namespace std::chrono_literals;
  dblock::Election election(pool, "scheduler", {.value = "10.0.0.7:8080", .ttl = 10s});
  election.campaign(
      [](const dblock::Term& term) {
        while (!term.stop_token().stop_requested()) {
          if (!schedule_due_jobs(term.number())) return;  // nothing left: resign
        }
      },
      shutdown);
}
