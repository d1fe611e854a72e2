#include "services/explorer/section/explorer_section.hpp"

namespace spotlight::explorer {

using config::Entry;

const config::Schema& explorer_schema() {
  static const config::Schema schema{
      Entry::string("explorer.id", "", "Explorer id (consumer name); empty: <hostname>-<pid>."),
      Entry::integer("explorer.batch", 8, "Seed tasks leased and sampled together.").range(1, 4096),
      Entry::integer("explorer.max_staleness", 1,
                     "Weights may be this many versions older than a task asks for.")
          .range(0, 1000),
      Entry::integer("explorer.heartbeat_ms", 1000, "Heartbeat period.").range(10, 600000),
      Entry::real("explorer.grace_seconds", 30,
                  "After a preemption notice (SIGTERM), exit within this time.")
          .positive(),
      Entry::boolean("explorer.commit_inflight", true,
                     "On a preemption notice, commit in-flight samples for another explorer."),
      Entry::string("explorer.preemption_notice_file", "",
                    "A preemption notice is this file appearing; empty: off."),
      Entry::string("explorer.preemption_notice_url", "",
                    "http:// URL polled for a preemption notice (200 with a body other than "
                    "FALSE: notice; 404: none); empty: off."),
      Entry::integer("explorer.preemption_poll_ms", 1000,
                     "Poll period of the preemption notice file and URL.")
          .range(10, 600000),
      // Sequence parallelism (services/explorer/sp_sampler.hpp): sp.size > 1 samples every chunk
      // on an SP group of rank processes kept by the explorer's node scheduler.
      Entry::integer("explorer.sp.size", 1, "SP group size; 1: sample in-process.").range(1, 64),
      Entry::integer("explorer.sp.spares", 1, "Spare rank processes kept warm for regrouping.")
          .range(0, 64),
      Entry::integer("explorer.sp.op_timeout_ms", 5000, "SP collective / rendezvous timeout.")
          .range(10, 600000),
      Entry::string("explorer.sp.rank_binary", "",
                    "spotlight-node executable; empty: ../node/spotlight-node next to this one."),
  };
  return schema;
}

}  // namespace spotlight::explorer
