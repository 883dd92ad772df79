// SPDX-License-Identifier: Apache-2.0
#include "history.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <tuple>

namespace dblock::testing {

std::int64_t monotonic_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

HistoryWriter::HistoryWriter(const std::string& path) : out_(path, std::ios::app) {
  if (!out_) throw std::runtime_error("cannot write the history file " + path);
}

void HistoryWriter::line(const std::string& text) {
  std::lock_guard lock(mu_);
  out_ << text << '\n';
  out_.flush();  // a SIGKILL must not lose what was written before it
}

void HistoryWriter::acquired(const std::string& client, const std::string& key, std::int64_t token,
                             std::int64_t reply_us, std::int64_t sent_us, std::int64_t ttl_ms) {
  std::ostringstream s;
  s << "acquired " << client << ' ' << key << ' ' << token << ' ' << reply_us << ' ' << sent_us
    << ' ' << ttl_ms;
  line(s.str());
}

void HistoryWriter::renewed(const std::string& client, const std::string& key, std::int64_t token,
                            std::int64_t sent_us, std::int64_t ttl_ms) {
  std::ostringstream s;
  s << "renewed " << client << ' ' << key << ' ' << token << ' ' << sent_us << ' ' << ttl_ms;
  line(s.str());
}

void HistoryWriter::released(const std::string& client, const std::string& key, std::int64_t token,
                             std::int64_t sent_us, const std::string& outcome) {
  std::ostringstream s;
  s << "released " << client << ' ' << key << ' ' << token << ' ' << sent_us << ' ' << outcome;
  line(s.str());
}

std::vector<Hold> load_holds(const std::vector<std::string>& paths, bool leases_expire) {
  using Id = std::tuple<std::string, std::string, std::int64_t>;  // client, key, token
  struct State {
    Hold hold;
    std::int64_t valid_until = 0;  // latest acquire/renew sent + TTL
    std::int64_t confirmed = 0;    // acquire's reply or latest successful renew sent
    std::int64_t release_sent = -1;
  };
  std::map<Id, State> states;
  for (const auto& path : paths) {
    std::ifstream in(path);
    if (!in) continue;  // a client that never wrote anything
    std::string text;
    int number = 0;
    while (std::getline(in, text)) {
      ++number;
      if (text.empty()) continue;
      std::istringstream s(text);
      std::string event, client, key;
      std::int64_t token = 0;
      s >> event >> client >> key >> token;
      auto bad = [&] {
        return std::runtime_error(path + ":" + std::to_string(number) +
                                  ": malformed history line: " + text);
      };
      if (!s) throw bad();
      State& st = states[Id{client, key, token}];
      if (event == "acquired") {
        std::int64_t reply = 0, sent = 0, ttl = 0;
        if (!(s >> reply >> sent >> ttl)) throw bad();
        st.hold = Hold{client, key, token, reply, 0, ""};
        st.valid_until = std::max(st.valid_until, sent + ttl * 1000);
        st.confirmed = std::max(st.confirmed, reply);
      } else if (event == "renewed") {
        std::int64_t sent = 0, ttl = 0;
        if (!(s >> sent >> ttl)) throw bad();
        st.valid_until = std::max(st.valid_until, sent + ttl * 1000);
        st.confirmed = std::max(st.confirmed, sent);
      } else if (event == "released") {
        std::int64_t sent = 0;
        std::string outcome;
        if (!(s >> sent >> outcome)) throw bad();
        st.release_sent = sent;
        st.hold.release_outcome = outcome;
      } else {
        throw bad();
      }
    }
  }
  std::vector<Hold> out;
  for (auto& [id, st] : states) {
    if (st.hold.client.empty()) continue;  // a renew or release without its acquire: ignore
    if (leases_expire) {
      st.hold.until_us =
          st.release_sent >= 0 ? std::min(st.release_sent, st.valid_until) : st.valid_until;
    } else {
      const bool gave_back =
          st.hold.release_outcome == "released" || st.hold.release_outcome == "decremented";
      st.hold.until_us = gave_back ? st.release_sent : st.confirmed;
    }
    out.push_back(st.hold);
  }
  return out;
}

std::string HistoryReport::summary() const {
  std::ostringstream s;
  if (compare_and_set) {
    s << "holds=" << holds << " keys=" << keys << " commits=" << commits
      << " versions_committed_twice=" << overlaps.size()
      << " commits_out_of_order=" << token_inversions.size();
  } else {
    s << "holds=" << holds << " keys=" << keys << " overlaps=" << overlaps.size()
      << " token_inversions=" << token_inversions.size();
    if (!repeated_tokens.empty()) s << " repeated_tokens=" << repeated_tokens.size();
  }
  std::size_t shown = 0;
  for (const auto* list : {&overlaps, &token_inversions, &repeated_tokens}) {
    for (const auto& problem : *list) {
      if (shown++ == 5) return s.str() + "\n  ...";
      s << "\n  " << problem;
    }
  }
  return s.str();
}

HistoryReport check_mutual_exclusion(const std::vector<Hold>& holds, bool global_tokens) {
  HistoryReport report;
  report.holds = holds.size();
  std::map<std::string, std::vector<const Hold*>> by_key;
  for (const auto& h : holds) by_key[h.key].push_back(&h);
  report.keys = by_key.size();
  auto describe = [](const Hold& h) {
    std::ostringstream s;
    s << h.client << " token " << h.token << " [" << h.from_us << ", " << h.until_us << "]";
    return s.str();
  };
  for (auto& [key, list] : by_key) {
    std::sort(list.begin(), list.end(),
              [](const Hold* a, const Hold* b) { return a->from_us < b->from_us; });
    // Every earlier hold whose interval reaches past this one's start overlaps it.
    for (std::size_t i = 0; i < list.size(); ++i) {
      for (std::size_t j = 0; j < i; ++j) {
        if (list[j]->until_us > list[i]->from_us) {
          report.overlaps.push_back(key + ": " + describe(*list[j]) + " overlaps " +
                                    describe(*list[i]));
        }
      }
      if (i > 0 && list[i]->token <= list[i - 1]->token) {
        report.token_inversions.push_back(key + ": " + describe(*list[i]) + " follows " +
                                          describe(*list[i - 1]));
      }
    }
  }
  if (global_tokens) {
    std::map<std::int64_t, const Hold*> by_token;
    for (const auto& h : holds) {
      auto [it, fresh] = by_token.emplace(h.token, &h);
      if (!fresh) {
        report.repeated_tokens.push_back("token " + std::to_string(h.token) + ": " +
                                         it->second->key + " " + describe(*it->second) + " and " +
                                         h.key + " " + describe(h));
      }
    }
  }
  return report;
}

HistoryReport check_compare_and_set(const std::vector<Hold>& holds) {
  HistoryReport report;
  report.compare_and_set = true;
  report.holds = holds.size();
  std::map<std::string, std::vector<const Hold*>> commits;  // by key
  std::set<std::string> keys;
  for (const auto& h : holds) {
    keys.insert(h.key);
    if (h.release_outcome == "released") commits[h.key].push_back(&h);
  }
  report.keys = keys.size();
  for (auto& [key, list] : commits) {
    report.commits += list.size();
    std::map<std::int64_t, const Hold*> by_version;
    for (const Hold* h : list) {
      auto [it, fresh] = by_version.emplace(h->token, h);
      if (!fresh) {
        report.overlaps.push_back(key + ": " + it->second->client + " and " + h->client +
                                  " both committed from version " + std::to_string(h->token));
      }
    }
    std::sort(list.begin(), list.end(),
              [](const Hold* a, const Hold* b) { return a->until_us < b->until_us; });
    for (std::size_t i = 1; i < list.size(); ++i) {
      if (list[i]->token <= list[i - 1]->token) {
        report.token_inversions.push_back(
            key + ": " + list[i]->client + " committed from version " +
            std::to_string(list[i]->token) + " after " + list[i - 1]->client +
            " committed from version " + std::to_string(list[i - 1]->token));
      }
    }
  }
  return report;
}

}  // namespace dblock::testing
