#include <chrono>
#include <dblock/async_lock.hpp>
#include <dblock/unique_key_lock.hpp>
#include <future>
#include <optional>
#include <string>
#include <vector>

void export_account(const std::string& account);  // your code: work under the account's key

// Many keys waited for at once, with two threads: each export starts when its account's key is
// free, however long another process holds it; none holds a thread while it waits.
void export_accounts(dblock::UniqueKeyLock& locks, const std::vector<std::string>& accounts) {
  using namespace std::chrono_literals;
  dblock::AsyncLock async(locks, {.threads = 2, .backoff = {}, .first_try_in_caller = false});
  std::vector<std::future<std::optional<dblock::Lease>>> leases;
  for (const std::string& account : accounts) {
    leases.push_back(async.acquire("export:" + account, 10min));
  }
  for (std::size_t i = 0; i < accounts.size(); ++i) {
    std::optional<dblock::Lease> lease = leases[i].get();  // in the order they were asked
    if (!lease) continue;                                  // not free within 10 minutes
    export_account(accounts[i]);
    lease->release();
  }
}
