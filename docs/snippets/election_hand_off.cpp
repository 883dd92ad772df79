#include <dblock/election.hpp>
#include <stop_token>
#include <string>

// A deploy. The new replica campaigns under its own name (ElectionOptions::candidate, "web-2");
// the old one, asked to shut down, hands it the name: the term's work is stopped, and once it
// has returned the name moves to web-2 in one statement. Then the campaign stops as at any
// shutdown (the hand-off is done by then, or gives the name back to all).
void shut_down_handing_off(dblock::Election& election, std::stop_source& campaign,
                           const std::string& successor) {
  if (!election.hand_off(successor)) {
    // This replica does not lead: nothing to hand off.
  }
  campaign.request_stop();
}

// From the leader's work: end the term by handing the name to the candidate waiting longest.
void hand_off_from_the_work(const dblock::Term& term) { term.hand_off(); }
