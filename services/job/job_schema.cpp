#include "services/job/job_schema.hpp"

#include "common/run/cost_section.hpp"
#include "common/run/run_config.hpp"
#include "services/explorer/section/explorer_section.hpp"
#include "services/planner/section/planner_section.hpp"
#include "services/trainer/section/trainer_section.hpp"

namespace spotlight::job {

const config::Schema& run_schema() {
  static const config::Schema schema = [] {
    config::Schema s = run::run_schema();
    s.add(trainer::pretrain_schema())
        .add(trainer::training_schema())
        .add(trainer::bench_schema())
        .add(planner::planner_schema())
        .add(explorer::explorer_schema())
        .add(run::cost_schema());
    return s;
  }();
  return schema;
}

}  // namespace spotlight::job
