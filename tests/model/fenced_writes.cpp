// SPDX-License-Identifier: Apache-2.0
// ModelRunner's fenced writes: a handle writes its token to a table of the runner's own in a
// transaction fenced by its lease (dblock/fence.hpp), on a connection no step kills. The commit
// must succeed while the model says the lease holds its key and fail once it does not; and the
// table's writes of each key, in the order they committed, must follow the token order (a stale
// holder never writes after the next one).
#include "dblock/fence.hpp"
#include "model_runner.hpp"

namespace dblock::testing {

namespace {

const char* name(ModelRunner::Fenced f) {
  return f == ModelRunner::Fenced::kWritten ? "written" : "refused (lease lost)";
}

}  // namespace

void ModelRunner::create_fenced_table() {
  writer_ = backend_.connect();
  writes_ = tables_.qualified(backend_.dialect, "fenced_writes");  // dropped with the prefix's
  writer_->execute("CREATE TABLE " + writes_ +
                   " (seq BIGINT NOT NULL, lock_key VARCHAR(16) NOT NULL, token BIGINT NOT NULL)");
}

ModelRunner::Fenced ModelRunner::write_fenced(const Lease& lease, const std::string& key) {
  const bool pg = backend_.dialect == Dialect::kPostgreSQL;
  writer_->begin();
  try {
    fence(lease, *writer_);
    // Steps run one at a time: the step number orders the commits.
    writer_->execute("INSERT INTO " + writes_ + " (seq, lock_key, token) VALUES (" +
                         (pg ? "$1, $2, $3" : "?, ?, ?") + ")",
                     {Value(std::int64_t{step_}), Value(key), Value(lease.fencing_token())});
    writer_->commit();
  } catch (const Error& e) {
    writer_->rollback();
    if (e.code() != ErrorCode::kLeaseLost) throw;
    return Fenced::kRefused;
  }
  check_fenced_history(key);
  return Fenced::kWritten;
}

void ModelRunner::check_fenced_history(const std::string& key) {
  const bool pg = backend_.dialect == Dialect::kPostgreSQL;
  const Result r = checker_->execute("SELECT seq, token FROM " + writes_ +
                                         " WHERE lock_key = " + (pg ? "$1" : "?") + " ORDER BY seq",
                                     {Value(key)});
  std::string order;
  std::int64_t last = 0;
  bool inverted = false;
  for (std::size_t i = 0; i < r.size(); ++i) {
    const std::int64_t token = r.int64_at(i, "token");
    inverted = inverted || token < last;
    last = std::max(last, token);
    order += (order.empty() ? "" : " ") + std::to_string(token) + "@#" +
             std::to_string(r.int64_at(i, "seq"));
  }
  if (inverted) {
    fail("fence: the fenced writes of " + key +
         " do not follow the token order (token@step): " + order);
  }
}

void ModelRunner::fenced_write(int id) {
  Handle& h = handles_.at(id);
  begin("fenced_write #" + std::to_string(id) + " (" + label(h.who) + " " + h.key + ")");
  const TruthRow* row = model_.truth().find(h.key);
  const bool ours = row != nullptr && row->owner == owner(h.who) && row->fencing_token == h.token &&
                    row->hold_count > 0;
  const bool row_renewed = renewed(h.key);
  const auto from = ModelClock::now();
  try {
    const Fenced got = write_fenced(h.lease(), h.key);
    const Tri held =
        ours ? model_.held_throughout(h.key, from, ModelClock::now(), row_renewed) : Tri::kNo;
    note(name(got));
    // A lease past its local deadline is refused before the row is asked: lost() says so.
    if (held == Tri::kYes && got == Fenced::kRefused && !h.lease().lost()) {
      fail(
          "fence: a lease whose row it held unexpired throughout could not fence a write, and "
          "lost() is false");
    }
    if (held == Tri::kNo && got == Fenced::kWritten) {
      fail(
          "fence: a write committed under a lease whose row was not held (or expired) "
          "throughout");
    }
  } catch (const Error& e) {
    fail(std::string("error: fenced write threw: ") + e.what());
  }
  end();
}

}  // namespace dblock::testing
