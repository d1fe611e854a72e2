#pragma once
// The two calibrations of the learning model the cluster study runs under.
//
// "embedded": the parameters fitted to our embedded runs (fitted.json, calibration.hpp), moved
//   to the cluster's batch. The fitted noise constant c belongs to the embedded batch (P_e G_e
//   samples per iteration); at P G samples the same update quality per iteration needs
//   c x P G / (P_e G_e) (assumption: an iteration of a larger run is no less noisy relative to
//   its signal, because a larger model's gradient has more directions to be noisy in). The
//   target is the embedded benchmark's.
// "published": GenEval-like binary rewards (K = 1) whose base score is Flow-GRPO's SD3.5-M base
//   and whose plain-GRPO run reaches Flow-GRPO's final score in the published number of
//   iterations at Flow-GRPO's recipe (48 prompts x 24 images): eta is fitted to that; the
//   spread of prompt difficulty, the observation noise and c (scaled as above) come from the
//   embedded fit, since no published figure identifies them. Figures and sources:
//   published_figures().

#include <string>
#include <vector>

#include "tools/simulator/cluster_model.hpp"
#include "tools/simulator/learning_model.hpp"
#include "tools/simulator/study.hpp"

namespace spotlight::simulator {

// A figure from a publication, as used here, and how sure we are of it.
struct PublishedFigure {
  std::string what;
  std::string value;
  std::string source;
  bool certain = false;  // false: recalled or second-hand; see `note`
  std::string note;
};
const std::vector<PublishedFigure>& published_figures();
// SD3.5-M's GenEval score per task before RL (published_figures(): recalled, unsure).
std::vector<double> geneval_base_rates();

struct PublishedTarget {
  double base_score = 0.63;    // Flow-GRPO, SD3.5-M GenEval before RL
  double target_score = 0.95;  // after
  int iterations = 5000;       // plain Flow-GRPO to get there (uncertain, see published_figures)
  int prompts = 48;            // groups per iteration
  int group_size = 24;         // images per prompt
};

// The embedded benchmark's batch the fit was made on.
struct EmbeddedShape {
  int prompts = 8;
  int group_size = 4;
  int candidates = 16;
};

// c moved from a batch of `from_samples` to `to_samples` per iteration (see above).
LearningParams scale_noise(LearningParams params, double from_samples, double to_samples);

// Iterations plain GRPO (none) needs to reach `target` in the learning model at `shape`'s batch
// (expected score), the median over `runs` seeds; `limit` if not reached.
int none_iterations(const LearningParams& params, const ClusterOptions& shape, double target,
                    int runs, int limit);

Calibration embedded_calibration(const LearningParams& fitted, const EmbeddedShape& embedded,
                                 const ClusterOptions& shape, double target);
Calibration published_calibration(const LearningParams& fitted, const EmbeddedShape& embedded,
                                  const ClusterOptions& shape, const PublishedTarget& published);

// Iterations to the target of training on the G max-variance images of best-of-N pools (sync
// with N candidates of full steps), relative to plain GRPO (N = G), in the given calibration:
// the model's answer to DanceGRPO's best-of-N experiment (N = 16, 64, 256).
struct BestOfN {
  int candidates = 0;
  int iterations = 0;
  double gain = 0;  // iterations(plain) / iterations(best-of-N)
};
std::vector<BestOfN> best_of_n(const Calibration& calibration, const ClusterOptions& shape,
                               const std::vector<int>& pools, int runs);

}  // namespace spotlight::simulator
