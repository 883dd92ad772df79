#include <chrono>
#include <cstdint>
#include <dblock/lock_set.hpp>
#include <dblock/unique_key_lock.hpp>
#include <string>
#include <vector>

void move_money(std::int64_t from_token, std::int64_t to_token);  // your code

// Holds both accounts or neither; callers naming them in the opposite order never deadlock.
bool transfer(dblock::UniqueKeyLock& locks) {
  std::vector<std::string> accounts{"account:17", "account:4"};
  auto moved =
      dblock::with_locks(locks, accounts, std::chrono::seconds(5), {}, [&](dblock::LeaseSet& both) {
        move_money(both.lease("account:17").fencing_token(),
                   both.lease("account:4").fencing_token());
      });
  return moved.has_value();  // false: the set was not obtained within 5 s
}
